//! The waiters: `:wait` long-polls and `:watch` streams, each on its own HTTP/1.1
//! connection, timing every wake against the change it reports.
//!
//! Invariant: a wake's delay is the moment this process received the answer (or event)
//! minus the change's time as the operation records it (`metadata.endTime` for the
//! final state, `metadata.updateTime` for a progress event; both PostgreSQL's `now()`
//! at the change, milliseconds, the same machine's clock), so the delay includes the
//! commit, NOTIFY, the server's re-read, rendering and the client's own scheduling.
//! Anything but a 200 that ends in the operation's final state is an error, never a
//! figure.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

/// What one waiter saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// A `:watch` stream (else a `:wait`).
    pub watch: bool,
    /// Final-state wakes, ms after the change.
    pub done_ms: Vec<f64>,
    /// Progress wakes (watch only), ms after the change.
    pub progress_ms: Vec<f64>,
    /// Answers that arrived for an operation that was already final when asked (not
    /// wakes: the operation changed before the waiter was parked).
    pub already_done: usize,
    pub errors: Vec<String>,
}

fn time_of(op: &Value, field: &str) -> Option<DateTime<Utc>> {
    let s = op["metadata"][field].as_str()?;
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn ms_since(t: DateTime<Utc>, now: DateTime<Utc>) -> f64 {
    (now - t).num_microseconds().unwrap_or(i64::MAX) as f64 / 1000.0
}

/// `POST {op}:wait?timeout=60s` as `user` until the answer is done (a 60 s timeout is
/// an error: the wake was missed, and the waiter asks again as clients do).
pub async fn wait(http: reqwest::Client, url: String, user: String) -> Seen {
    let mut seen = Seen::default();
    for _ in 0..3 {
        let asked = Utc::now();
        let r = match http.post(&url).header("x-kinetic-user", &user).send().await {
            Ok(r) => r,
            Err(e) => {
                seen.errors.push(format!("wait: {e}"));
                return seen;
            }
        };
        let status = r.status();
        let body: Value = match r.json().await {
            Ok(b) => b,
            Err(e) => {
                seen.errors.push(format!("wait body: {e}"));
                return seen;
            }
        };
        let now = Utc::now();
        if !status.is_success() {
            seen.errors.push(format!("wait: {status} {body}"));
            return seen;
        }
        if body["done"] != true {
            seen.errors
                .push("wait: answered not done at its 60 s timeout".into());
            continue;
        }
        match time_of(&body, "endTime") {
            Some(end) if end < asked => seen.already_done += 1,
            Some(end) => seen.done_ms.push(ms_since(end, now)),
            None => seen
                .errors
                .push(format!("wait: done without endTime: {body}")),
        }
        return seen;
    }
    seen
}

/// `GET {op}:watch` as `user`; `opened` is told once the first event (the operation as
/// it was when the stream opened) arrived, i.e. once the stream is parked.
pub async fn watch(
    http: reqwest::Client,
    url: String,
    user: String,
    opened: tokio::sync::mpsc::Sender<()>,
) -> Seen {
    let mut seen = Seen {
        watch: true,
        ..Seen::default()
    };
    let mut r = match http.get(&url).header("x-kinetic-user", &user).send().await {
        Ok(r) => r,
        Err(e) => {
            seen.errors.push(format!("watch: {e}"));
            let _ = opened.send(()).await;
            return seen;
        }
    };
    if !r.status().is_success() {
        let status = r.status();
        let body = r.text().await.unwrap_or_default();
        seen.errors.push(format!("watch: {status} {body}"));
        let _ = opened.send(()).await;
        return seen;
    }
    let mut buf = String::new();
    let mut first = true;
    loop {
        let chunk = match tokio::time::timeout(Duration::from_secs(120), r.chunk()).await {
            Ok(Ok(Some(c))) => c,
            Ok(Ok(None)) => {
                seen.errors.push("watch: stream ended without done".into());
                break;
            }
            Ok(Err(e)) => {
                seen.errors.push(format!("watch stream: {e}"));
                break;
            }
            Err(_) => {
                seen.errors.push("watch: no event in 120 s".into());
                break;
            }
        };
        let now = Utc::now();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let (mut name, mut data) = ("", String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if name.is_empty() {
                continue; // keep-alive comment
            }
            let op: Value = match serde_json::from_str(&data) {
                Ok(v) => v,
                Err(e) => {
                    seen.errors.push(format!("watch event: {e}"));
                    return seen;
                }
            };
            let was_first = std::mem::take(&mut first);
            if was_first {
                let _ = opened.send(()).await;
            }
            match name {
                "done" => {
                    match time_of(&op, "endTime") {
                        Some(_) if was_first => seen.already_done += 1,
                        Some(t) => seen.done_ms.push(ms_since(t, now)),
                        None => seen.errors.push("watch: done without endTime".into()),
                    }
                    return seen;
                }
                "progress" if !was_first => match time_of(&op, "updateTime") {
                    Some(t) => seen.progress_ms.push(ms_since(t, now)),
                    None => seen
                        .errors
                        .push("watch: progress without updateTime".into()),
                },
                _ => {}
            }
        }
    }
    if first {
        let _ = opened.send(()).await;
    }
    seen
}
