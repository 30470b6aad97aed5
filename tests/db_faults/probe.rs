//! HTTP calls against a `kineticd serve` during a database outage: each one timed, its
//! answer checked against what the contract says an outage looks like, and every
//! departure collected (not panicked on) so the run goes on to restart PostgreSQL and
//! reports all of them with the timeline.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;

/// One answered (or unanswered) call.
pub struct Answer {
    pub status: Option<u16>,
    pub body: Value,
    pub retry_after: Option<String>,
    pub took: Duration,
    /// Transport failure (connection refused, client timeout: a hang).
    pub failure: Option<String>,
}

impl Answer {
    /// `error.details[0].reason`, or "".
    pub fn reason(&self) -> &str {
        self.body["error"]["details"][0]["reason"]
            .as_str()
            .unwrap_or("")
    }

    pub fn status_name(&self) -> &str {
        self.body["error"]["status"].as_str().unwrap_or("")
    }

    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

/// Calls `method url` as `user` with `body`; gives up (a failure, not a panic) after
/// `hang`.
pub async fn call(
    http: &reqwest::Client,
    method: Method,
    url: &str,
    user: &str,
    body: Option<&Value>,
    hang: Duration,
) -> Answer {
    let started = Instant::now();
    let mut req = http
        .request(method, url)
        .header("x-kinetic-user", user)
        .timeout(hang);
    if let Some(b) = body {
        req = req.json(b);
    }
    match req.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            let retry_after = r
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let text = r.text().await.unwrap_or_default();
            Answer {
                status: Some(status),
                body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
                retry_after,
                took: started.elapsed(),
                failure: None,
            }
        }
        Err(e) => Answer {
            status: None,
            body: Value::Null,
            retry_after: None,
            took: started.elapsed(),
            failure: Some(format!("{e:#}")),
        },
    }
}

/// Per-probe tallies and every departure from the expected answer.
#[derive(Default)]
pub struct Tally {
    /// probe -> (calls, slowest answer).
    pub calls: BTreeMap<&'static str, (usize, Duration)>,
    pub violations: Vec<String>,
}

impl Tally {
    fn count(&mut self, probe: &'static str, a: &Answer) {
        let e = self.calls.entry(probe).or_default();
        e.0 += 1;
        e.1 = e.1.max(a.took);
    }

    fn violation(&mut self, at: Duration, probe: &str, a: &Answer, why: &str) {
        self.violations.push(format!(
            "[{:.2} s] {probe}: {why} (status {:?}, {:?}, failure {:?}, body {})",
            at.as_secs_f64(),
            a.status,
            a.took,
            a.failure,
            a.body
        ));
    }

    /// Expects exactly `status` within `limit`.
    pub fn expect_status(
        &mut self,
        at: Duration,
        probe: &'static str,
        a: &Answer,
        status: u16,
        limit: Duration,
    ) {
        self.count(probe, a);
        if a.status != Some(status) {
            self.violation(at, probe, a, &format!("expected {status}"));
        } else if a.took > limit {
            self.violation(at, probe, a, &format!("answered after {limit:?}"));
        }
    }

    /// Expects a Google-shaped 503 UNAVAILABLE with `reason`, a message and (for the
    /// API's DATABASE_UNAVAILABLE) a `Retry-After`, within `limit`.
    pub fn expect_unavailable(
        &mut self,
        at: Duration,
        probe: &'static str,
        a: &Answer,
        reason: &str,
        limit: Duration,
    ) {
        self.count(probe, a);
        let why = if a.status != Some(503) {
            Some("expected 503".to_owned())
        } else if a.status_name() != "UNAVAILABLE" || a.reason() != reason {
            Some(format!("expected UNAVAILABLE {reason}"))
        } else if a.message().is_empty() {
            Some("no message".to_owned())
        } else if reason == "DATABASE_UNAVAILABLE" && a.retry_after.is_none() {
            Some("no Retry-After".to_owned())
        } else if a.took > limit {
            Some(format!("answered after {limit:?}"))
        } else {
            None
        };
        if let Some(why) = why {
            self.violation(at, probe, a, &why);
        }
    }

    /// While the service reconnects: 200, or the outage's 503; never anything else.
    pub fn expect_ok_or_unavailable(
        &mut self,
        at: Duration,
        probe: &'static str,
        a: &Answer,
        limit: Duration,
    ) {
        if a.status == Some(503) {
            self.expect_unavailable(at, probe, a, "DATABASE_UNAVAILABLE", limit);
        } else {
            self.expect_status(at, probe, a, 200, limit);
        }
    }

    /// `probe: n calls, slowest t` for every probe.
    pub fn summary(&self) -> String {
        self.calls
            .iter()
            .map(|(p, (n, slowest))| format!("{p} x{n} (slowest {} ms)", slowest.as_millis()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
