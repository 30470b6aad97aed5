//! What a browser test asks of a page beyond WebDriver's basics: waiting for something to
//! appear, full-page screenshots at a given viewport width, whether keyboard focus is
//! visible, and which controls have no accessible name (as Chromium's accessibility tree
//! computes it, the name a screen reader announces).
//!
//! Invariant: every wait has a deadline and its failure message carries the page's URL and
//! visible text, so a failed run says what the browser showed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thirtyfour::prelude::*;

/// How long a page may take to show what a step waits for (the simulator runs an `up`
/// in seconds at speed 100; a loaded CI machine is slower).
pub const WAIT: Duration = Duration::from_secs(120);

/// Where screenshots go: KINETIC_ARTIFACTS_DIR, else `<target>/tmp/console-screenshots`.
pub fn artifacts_dir() -> PathBuf {
    let dir = std::env::var_os("KINETIC_ARTIFACTS_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots"));
    std::fs::create_dir_all(&dir).expect("create the artifacts directory");
    dir
}

/// The page's URL and the first 2,000 characters of its visible text, for messages.
pub async fn describe(d: &WebDriver) -> String {
    let url = d
        .current_url()
        .await
        .map_or("?".to_owned(), |u| u.to_string());
    let text = d
        .execute(
            "return document.body ? document.body.innerText : ''",
            vec![],
        )
        .await
        .ok()
        .and_then(|r| r.json().as_str().map(str::to_owned))
        .unwrap_or_default();
    let text: String = text.chars().take(2_000).collect();
    format!("page {url}:\n{text}")
}

/// The first element matching `css`, waiting for it up to [`WAIT`].
pub async fn find(d: &WebDriver, css: &str) -> WebElement {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(e) = d.find(By::Css(css)).await {
            return e;
        }
        if Instant::now() > deadline {
            panic!("no element {css} within {WAIT:?}; {}", describe(d).await);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the text of the first element matching `css` contains `want`; returns it.
pub async fn wait_text(d: &WebDriver, css: &str, want: &str) -> String {
    let deadline = Instant::now() + WAIT;
    let mut last = String::new();
    loop {
        if let Ok(e) = d.find(By::Css(css)).await
            && let Ok(t) = e.text().await
        {
            if t.contains(want) {
                return t;
            }
            last = t;
        }
        if Instant::now() > deadline {
            panic!(
                "{css} did not show {want:?} within {WAIT:?} (last: {last:?}); {}",
                describe(d).await
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the page's URL contains `part`.
pub async fn wait_url(d: &WebDriver, part: &str) -> String {
    let deadline = Instant::now() + WAIT;
    loop {
        let url = d.current_url().await.expect("current url").to_string();
        if url.contains(part) {
            return url;
        }
        if Instant::now() > deadline {
            panic!("URL never contained {part:?}; {}", describe(d).await);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Sets the value of the form control matching `css` (cleared first).
pub async fn fill(d: &WebDriver, css: &str, value: &str) {
    let e = find(d, css).await;
    e.clear().await.expect("clear");
    e.send_keys(value).await.expect("type");
}

/// Clicks the element matching `css` once it is there.
pub async fn click(d: &WebDriver, css: &str) {
    let e = find(d, css).await;
    e.scroll_into_view().await.expect("scroll");
    e.click().await.expect("click");
}

/// Saves a full-page PNG of the current page rendered `width` CSS pixels wide as
/// `<dir>/<name>-<width>.png`; returns its path and whether the page scrolled sideways
/// at that width.
pub async fn screenshot(d: &WebDriver, dir: &Path, name: &str, width: u32) -> (PathBuf, bool) {
    let cdp = d.cdp();
    let metrics = |w: u32, h: u32| json!({"width": w, "height": h, "deviceScaleFactor": 1, "mobile": width < 600});
    cdp.send_raw("Emulation.setDeviceMetricsOverride", metrics(width, 900))
        .await
        .expect("viewport width");
    // Re-layout at the new width before measuring the page's height.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let layout = cdp
        .send_raw("Page.getLayoutMetrics", json!({}))
        .await
        .expect("layout metrics");
    let height = layout["cssContentSize"]["height"]
        .as_f64()
        .unwrap_or(900.0)
        .clamp(200.0, 6_000.0)
        .ceil();
    let shot = cdp
        .send_raw(
            "Page.captureScreenshot",
            json!({"format": "png", "captureBeyondViewport": true,
                   "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}),
        )
        .await
        .expect("screenshot");
    let sideways = overflows_sideways(d).await;
    cdp.send_raw("Emulation.clearDeviceMetricsOverride", json!({}))
        .await
        .expect("clear viewport override");
    let data = shot["data"].as_str().expect("screenshot data");
    use base64::Engine;
    let png = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64 PNG");
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");
    let path = dir.join(format!("{name}-{width}.png"));
    std::fs::write(&path, png).expect("write screenshot");
    (path, sideways)
}

/// Whether the page scrolls sideways at its current width (content wider than the
/// viewport: a layout that does not fit).
async fn overflows_sideways(d: &WebDriver) -> bool {
    d.execute(
        "const e = document.documentElement; return e.scrollWidth > e.clientWidth + 1;",
        vec![],
    )
    .await
    .expect("measure")
    .json()
    .as_bool()
    .unwrap_or(true)
}

/// Presses Tab `times` times from the top of the page and describes the focused element
/// and its focus indicator: `(description, visible)`, visible when its computed outline
/// or box-shadow differs from the same element unfocused.
pub async fn tab_focus(d: &WebDriver, times: usize) -> (String, bool) {
    d.execute(
        "document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0);",
        vec![],
    )
    .await
    .expect("blur");
    let body = d.find(By::Css("body")).await.expect("body");
    body.click().await.ok();
    let mut chain = d.action_chain();
    for _ in 0..times {
        chain = chain.send_keys(Key::Tab);
    }
    chain.perform().await.expect("press Tab");
    let r = d
        .execute(FOCUS_STYLE, vec![])
        .await
        .expect("read focus style");
    let v = r.json();
    (
        v["what"].as_str().unwrap_or("?").to_owned(),
        v["visible"].as_bool().unwrap_or(false),
    )
}

/// The focused element's outline and box-shadow, compared with a clone's that is not
/// focused (the clone has the same classes and sits in the same parent).
const FOCUS_STYLE: &str = r#"
const el = document.activeElement;
if (!el || el === document.body) return {what: 'nothing focused', visible: false};
const s = getComputedStyle(el);
const focused = {outline: s.outlineStyle + ' ' + s.outlineWidth + ' ' + s.outlineColor,
                 shadow: s.boxShadow};
const twin = el.cloneNode(true);
twin.removeAttribute('id');
twin.setAttribute('tabindex', '-1');
el.parentNode.insertBefore(twin, el.nextSibling);
const t = getComputedStyle(twin);
const plain = {outline: t.outlineStyle + ' ' + t.outlineWidth + ' ' + t.outlineColor,
               shadow: t.boxShadow};
twin.remove();
const hasOutline = s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0;
const hasShadow = s.boxShadow && s.boxShadow !== 'none';
const visible = (hasOutline || hasShadow) &&
  (focused.outline !== plain.outline || focused.shadow !== plain.shadow);
const what = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
  ' "' + (el.innerText || el.value || el.getAttribute('aria-label') || '').trim().slice(0, 40) +
  '" outline: ' + focused.outline + '; box-shadow: ' + focused.shadow;
return {what, visible};
"#;

/// The interactive roles a user operates; each needs a name.
const CONTROL_ROLES: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "checkbox",
    "radio",
    "switch",
    "spinbutton",
    "slider",
    "menuitem",
    "tab",
];

/// Every control (by its accessibility role) whose accessible name is empty, as
/// `role <tag attributes>`; empty when every control is labelled.
pub async fn unlabelled_controls(d: &WebDriver) -> Vec<String> {
    let cdp = d.cdp();
    let tree = cdp
        .send_raw("Accessibility.getFullAXTree", json!({}))
        .await
        .expect("accessibility tree");
    let mut missing = Vec::new();
    for node in tree["nodes"].as_array().into_iter().flatten() {
        if node["ignored"] == true {
            continue;
        }
        let role = node["role"]["value"].as_str().unwrap_or("");
        if !CONTROL_ROLES.contains(&role) {
            continue;
        }
        let name = node["name"]["value"].as_str().unwrap_or("").trim();
        if !name.is_empty() {
            continue;
        }
        missing.push(format!(
            "{role} {}",
            dom_node(d, &node["backendDOMNodeId"]).await
        ));
    }
    missing
}

/// `<tag attr="v" ...>` of a DOM node by its backend id.
async fn dom_node(d: &WebDriver, backend_id: &Value) -> String {
    let Some(id) = backend_id.as_i64() else {
        return "(no DOM node)".into();
    };
    let n = d
        .cdp()
        .send_raw("DOM.describeNode", json!({"backendNodeId": id}))
        .await
        .unwrap_or_default();
    let node = &n["node"];
    let attrs: Vec<String> = node["attributes"]
        .as_array()
        .map(|a| {
            a.chunks(2)
                .map(|kv| format!("{}={}", kv[0].as_str().unwrap_or(""), kv[1]))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "<{} {}>",
        node["nodeName"].as_str().unwrap_or("?").to_lowercase(),
        attrs.join(" ")
    )
}
