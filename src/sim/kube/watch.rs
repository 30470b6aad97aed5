//! Watches (`GET ...?watch=1`): a stream of JSON watch events, one per line
//! (`{"type":"ADDED","object":{...}}`), from the store's change history after the
//! requested resourceVersion (all current objects as ADDED first when none or "0" is
//! given), filtered by namespace and label/field selectors, each object rendered as a
//! one-row Table when the client asked for Tables (`kubectl get -w`).
//!
//! Invariant: the world lock is taken only inside one poll, never across an `.await`;
//! every change is sent at most once and in resourceVersion order; the stream ends at
//! `timeoutSeconds` (default 30 minutes) or when the client goes away.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::objects::Change;
use super::request::{Req, Target, resolve};
use super::resources::{self, ResourceDef};
use super::status::KStatus;
use super::{selectors, table, verbs};
use crate::sim::Sim;

/// How often a watch looks for new changes (wall-clock).
const POLL: Duration = Duration::from_millis(50);

/// Whether a request is a watch.
pub fn is_watch(req: &Req) -> bool {
    req.param("watch").is_some_and(|w| w == "true" || w == "1")
}

/// What one watch remembers between polls.
struct Cursor {
    sim: Sim,
    key: String,
    def: ResourceDef,
    namespace: Option<String>,
    labels: String,
    fields: String,
    as_table: bool,
    sent_columns: bool,
    after: u64,
    pending: Vec<String>,
    until: Instant,
}

impl Cursor {
    fn line(&mut self, change: &str, obj: &Value) -> String {
        let mut obj = obj.clone();
        obj["apiVersion"] = json!(self.def.api_version());
        let object = if self.as_table {
            let with_columns = !self.sent_columns;
            self.sent_columns = true;
            let world = self.sim.world();
            let store = world.kube.clusters.get(&self.key).map(|c| &c.api);
            match store {
                Some(s) => {
                    table::table(s, &self.def, &[obj], &self.after.to_string(), with_columns)
                }
                None => obj,
            }
        } else {
            obj
        };
        format!("{}\n", json!({"type": change, "object": object}))
    }

    /// Changes after the cursor; `None` when the cluster is gone.
    fn poll(&mut self) -> Option<Vec<(Change, Value)>> {
        let mut world = self.sim.world();
        let c = world.kube_mut().clusters.get_mut(&self.key)?;
        c.tick(self.sim.clock());
        let (g, p) = (&self.def.group, &self.def.plural);
        let out: Vec<(Change, Value)> = c
            .api
            .history
            .iter()
            .filter(|(rv, _, k, _)| *rv > self.after && &k.group == g && &k.plural == p)
            .filter(|(_, _, k, _)| self.namespace.as_ref().is_none_or(|ns| &k.namespace == ns))
            .filter(|(_, _, _, o)| selectors::selected(&self.labels, &self.fields, o))
            .map(|(_, ch, _, o)| (*ch, o.clone()))
            .collect();
        self.after = c.api.resource_version;
        Some(out)
    }
}

/// Serve a watch on a collection.
pub fn serve(sim: Sim, key: String, target: &Target, req: &Req) -> Response {
    let Target::Collection {
        group,
        version,
        plural,
        namespace,
    } = target
    else {
        return KStatus::method_not_allowed("watching a single object").into_response();
    };
    let mut cursor = {
        let world = sim.world();
        let Some(c) = world.kube.clusters.get(&key) else {
            return KStatus::new(404, "NotFound", format!("cluster {key:?} not found"))
                .into_response();
        };
        let defs = resources::all(&c.api);
        let Some(def) = resolve(&defs, group, version, plural, namespace.as_deref(), true) else {
            return KStatus::no_resource().into_response();
        };
        let from = req.param("resourceVersion").unwrap_or("");
        let initial = from.is_empty() || from == "0";
        let after = from
            .parse::<u64>()
            .ok()
            .filter(|_| !initial)
            .unwrap_or(c.api.resource_version);
        let timeout = req
            .param("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(1800);
        let mut cursor = Cursor {
            sim: sim.clone(),
            key: key.clone(),
            def: def.clone(),
            namespace: namespace.clone(),
            labels: req.param("labelSelector").unwrap_or("").to_owned(),
            fields: req.param("fieldSelector").unwrap_or("").to_owned(),
            as_table: table::wants_table(&req.accept),
            sent_columns: false,
            after,
            pending: Vec::new(),
            until: Instant::now() + Duration::from_secs(timeout),
        };
        let existing = if initial {
            verbs::list_items(c, &def, namespace.as_deref(), req)
        } else {
            Vec::new()
        };
        drop(world);
        cursor.pending = existing.iter().map(|o| cursor.line("ADDED", o)).collect();
        cursor
    };
    cursor.pending.reverse();
    let stream = futures::stream::unfold(cursor, |mut cur| async move {
        loop {
            if let Some(line) = cur.pending.pop() {
                return Some((Ok::<_, std::io::Error>(line), cur));
            }
            if Instant::now() >= cur.until {
                return None;
            }
            tokio::time::sleep(POLL).await;
            let changes = cur.poll()?;
            let mut lines: Vec<String> = changes
                .iter()
                .map(|(ch, o)| cur.line(ch.as_str(), o))
                .collect();
            lines.reverse();
            cur.pending = lines;
        }
    });
    let content_type = if table::wants_table(&req.accept) {
        "application/json;as=Table;v=v1;g=meta.k8s.io"
    } else {
        "application/json"
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, content_type)],
        Body::from_stream(stream),
    )
        .into_response()
}
