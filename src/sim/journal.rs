//! Every request the simulator receives (except its own admin endpoints), in order:
//! time, service, method, path, query, body (parsed JSON where it was JSON), status.
//! Tests assert exactly what kineticd sent, and how many times.

use std::sync::Mutex;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use serde::Serialize;
use serde_json::Value;

use super::Sim;

/// Set by a handler on its response: the Google method it served (`clusters.create`).
#[derive(Debug, Clone, Copy)]
pub struct SimMethod(pub &'static str);

#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// RFC 3339 wall-clock time.
    pub time: String,
    pub service: String,
    pub method: String,
    #[serde(rename = "httpMethod")]
    pub http_method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
    pub status: u16,
}

#[derive(Debug, Default)]
pub struct Journal {
    entries: Mutex<Vec<Entry>>,
}

impl Journal {
    pub fn entries(&self) -> Vec<Entry> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn clear(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    fn push(&self, e: Entry) {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }
}

/// The service a path belongs to: its first segment (`container`, `upload` -> storage).
pub fn service_of(path: &str) -> String {
    match path.trim_start_matches('/').split('/').next().unwrap_or("") {
        "upload" => "storage".to_owned(),
        s => s.to_owned(),
    }
}

const MAX_BODY: usize = 8 * 1024 * 1024;

pub async fn record(State(sim): State<Sim>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_owned();
    if path.starts_with("/sim/") {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .unwrap_or_default();
    let parsed = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice::<Value>(&bytes)
            .unwrap_or_else(|_| Value::String(format!("<{} bytes>", bytes.len())))
    };
    let query = parts.uri.query().unwrap_or("").to_owned();
    let http_method = parts.method.to_string();
    let resp = next
        .run(Request::from_parts(parts, Body::from(Bytes::clone(&bytes))))
        .await;
    let method = resp
        .extensions()
        .get::<SimMethod>()
        .map(|m| m.0.to_owned())
        .unwrap_or_else(|| http_method.clone());
    sim.journal().push(Entry {
        time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        service: service_of(&path),
        method,
        http_method,
        path,
        query,
        body: parsed,
        status: resp.status().as_u16(),
    });
    resp
}
