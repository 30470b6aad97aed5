// kineticd console: the only script (no inline script anywhere; CSP allows only this file).
// On an operation page that is not done, it follows the operation's event stream (the
// service's watch) and refreshes the live part of the page on every event; where the
// stream fails it falls back to polling the same fragment every two seconds.
(function () {
  "use strict";

  function follow(live) {
    var base = live.getAttribute("data-live-url");
    var eventsUrl = live.getAttribute("data-events-url");
    var stopped = false;
    var source = null;
    var timer = null;

    function stop() {
      stopped = true;
      if (source) { source.close(); }
      if (timer) { clearInterval(timer); }
    }

    function refresh() {
      return fetch(base, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          var tpl = document.createElement("template");
          tpl.innerHTML = html;
          var fresh = tpl.content.firstElementChild;
          if (fresh) { live.replaceChildren.apply(live, Array.prototype.slice.call(fresh.childNodes)); }
          var done = live.querySelector("[data-testid=op-done]");
          if (done && done.textContent.trim() === "true") {
            stop();
            var cancel = document.querySelector("[data-testid=cancel-form]");
            if (cancel) { cancel.hidden = true; }
          }
        })
        .catch(function () { /* the next event or tick tries again */ });
    }

    function poll() {
      if (!timer && !stopped) { timer = setInterval(refresh, 2000); }
    }

    if (window.EventSource && eventsUrl) {
      source = new EventSource(eventsUrl);
      source.addEventListener("progress", refresh);
      source.addEventListener("done", function () { refresh(); if (source) { source.close(); } });
      source.onerror = function () {
        if (source) { source.close(); }
        source = null;
        if (!stopped) { refresh(); poll(); }
      };
    } else {
      poll();
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    var live = document.querySelector("[data-live-url]");
    if (live && live.getAttribute("data-done") !== "true") { follow(live); }
  });
})();
