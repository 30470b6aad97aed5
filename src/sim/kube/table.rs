//! Server-side printing: the `meta.k8s.io/v1` `Table` an API server returns when a
//! client (`kubectl get`) asks for `Accept: application/json;as=Table;...`, with the
//! real server's columns for pods, nodes, deployments, replica sets, namespaces and
//! events, a CRD's `additionalPrinterColumns`, and `NAME AGE` for anything else.
//!
//! Invariant: a row's cells line up with the column definitions (priority 0 columns
//! are the default view, priority 1 the `-o wide` extras), and ages are rendered as
//! Kubernetes' `HumanDuration` from the object's timestamps.

use serde_json::{Value, json};

use super::objects::ApiStore;
use super::resources::{self, ResourceDef};

/// Whether an `Accept` header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .any(|p| p.split(';').any(|x| x.trim() == "as=Table"))
}

/// Kubernetes' `duration.HumanDuration`.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    let s = secs.max(0);
    let (m, h) = (s / 60, s / 3600);
    match () {
        _ if s < 120 => format!("{s}s"),
        _ if m < 10 && s % 60 == 0 => format!("{m}m"),
        _ if m < 10 => format!("{m}m{}s", s % 60),
        _ if m < 180 => format!("{m}m"),
        _ if h < 8 && m % 60 == 0 => format!("{h}h"),
        _ if h < 8 => format!("{h}h{}m", m % 60),
        _ if h < 48 => format!("{h}h"),
        _ if h < 24 * 8 && h % 24 == 0 => format!("{}d", h / 24),
        _ if h < 24 * 8 => format!("{}d{}h", h / 24, h % 24),
        _ if h < 24 * 365 * 2 => format!("{}d", h / 24),
        _ if h < 24 * 365 * 8 && (h / 24) % 365 == 0 => format!("{}y", h / 24 / 365),
        _ if h < 24 * 365 * 8 => format!("{}y{}d", h / 24 / 365, (h / 24) % 365),
        _ => format!("{}y", h / 24 / 365),
    }
}

/// The age of an RFC 3339 timestamp ("<unknown>" when absent).
pub fn age(ts: &Value) -> String {
    match ts
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    {
        Some(t) => {
            human_duration((chrono::Utc::now() - t.with_timezone(&chrono::Utc)).num_seconds())
        }
        None => "<unknown>".into(),
    }
}

/// (name, type, priority) of each column.
type Columns = Vec<(String, &'static str, u8)>;

fn cols(spec: &[(&str, &'static str, u8)]) -> Columns {
    spec.iter()
        .map(|(n, t, p)| ((*n).to_owned(), *t, *p))
        .collect()
}

fn s(v: &Value) -> String {
    match v {
        Value::String(x) if !x.is_empty() => x.clone(),
        Value::Null | Value::String(_) => "<none>".into(),
        other => other.to_string(),
    }
}

fn pod_row(p: &Value) -> Vec<Value> {
    let total = p["spec"]["containers"].as_array().map_or(0, Vec::len);
    let running = p["status"]["phase"] == "Running";
    let ready = if running { total } else { 0 };
    let reason = p["status"]["reason"]
        .as_str()
        .or(p["status"]["phase"].as_str())
        .unwrap_or("Pending");
    let reason = if p["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else {
        reason
    };
    vec![
        p["metadata"]["name"].clone(),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!("0"),
        json!(age(&p["metadata"]["creationTimestamp"])),
        json!(s(&p["status"]["podIP"])),
        json!(s(&p["spec"]["nodeName"])),
        json!(s(&p["status"]["nominatedNodeName"])),
        json!("<none>"),
    ]
}

fn node_row(n: &Value) -> Vec<Value> {
    let ready = n["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True");
    let mut status = if ready { "Ready" } else { "NotReady" }.to_owned();
    if n["spec"]["unschedulable"] == true {
        status.push_str(",SchedulingDisabled");
    }
    let addr = |t: &str| {
        n["status"]["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["type"] == t)
            .map_or("<none>".to_owned(), |a| s(&a["address"]))
    };
    let info = &n["status"]["nodeInfo"];
    vec![
        n["metadata"]["name"].clone(),
        json!(status),
        json!("<none>"),
        json!(age(&n["metadata"]["creationTimestamp"])),
        json!(s(&info["kubeletVersion"])),
        json!(addr("InternalIP")),
        json!(addr("ExternalIP")),
        json!(s(&info["osImage"])),
        json!(s(&info["kernelVersion"])),
        json!(s(&info["containerRuntimeVersion"])),
    ]
}

/// `app=web,tier=x` from a label selector's matchLabels.
fn selector(sel: &Value) -> String {
    let parts: Vec<String> = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

fn containers(o: &Value, field: &str) -> String {
    let v: Vec<String> = o["spec"]["template"]["spec"]["containers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c[field].as_str().unwrap_or("").to_owned())
        .collect();
    v.join(",")
}

fn deployment_row(d: &Value) -> Vec<Value> {
    let st = &d["status"];
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    vec![
        d["metadata"]["name"].clone(),
        json!(format!(
            "{}/{}",
            n(&st["readyReplicas"]),
            d["spec"]["replicas"].as_i64().unwrap_or(1)
        )),
        json!(n(&st["updatedReplicas"])),
        json!(n(&st["availableReplicas"])),
        json!(age(&d["metadata"]["creationTimestamp"])),
        json!(containers(d, "name")),
        json!(containers(d, "image")),
        json!(selector(&d["spec"]["selector"])),
    ]
}

fn replicaset_row(r: &Value) -> Vec<Value> {
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    vec![
        r["metadata"]["name"].clone(),
        json!(r["spec"]["replicas"].as_i64().unwrap_or(1)),
        json!(n(&r["status"]["replicas"])),
        json!(n(&r["status"]["readyReplicas"])),
        json!(age(&r["metadata"]["creationTimestamp"])),
        json!(containers(r, "name")),
        json!(containers(r, "image")),
        json!(selector(&r["spec"]["selector"])),
    ]
}

fn event_row(e: &Value) -> Vec<Value> {
    let o = &e["involvedObject"];
    let kind = o["kind"].as_str().unwrap_or("").to_ascii_lowercase();
    vec![
        json!(age(&e["lastTimestamp"])),
        e["type"].clone(),
        e["reason"].clone(),
        json!(format!("{kind}/{}", o["name"].as_str().unwrap_or(""))),
        json!(o["fieldPath"].as_str().unwrap_or("")),
        json!(e["source"]["component"].as_str().unwrap_or("")),
        e["message"].clone(),
        json!(age(&e["firstTimestamp"])),
        e["count"].clone(),
        e["metadata"]["name"].clone(),
    ]
}

/// A simple `.a.b.c` JSONPath (what printer columns use), rendered as a cell.
fn json_path(o: &Value, path: &str) -> Value {
    let mut cur = o;
    for seg in path
        .trim_start_matches('.')
        .split('.')
        .filter(|x| !x.is_empty())
    {
        cur = &cur[seg];
    }
    cur.clone()
}

/// The CRD's printer columns for `def` (none: `NAME AGE`).
fn crd_columns(store: &ApiStore, def: &ResourceDef) -> Option<Vec<Value>> {
    resources::crd_version(store, def)?["additionalPrinterColumns"]
        .as_array()
        .cloned()
        .filter(|c| !c.is_empty())
}

/// Renders one object as a row's cells.
type Render = Box<dyn Fn(&Value) -> Vec<Value>>;

/// Columns and a row renderer for `def`.
fn layout(store: &ApiStore, def: &ResourceDef) -> (Columns, Render) {
    let (str_, int, date) = ("string", "integer", "date");
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => (
            cols(&[
                ("Name", str_, 0),
                ("Ready", str_, 0),
                ("Status", str_, 0),
                ("Restarts", str_, 0),
                ("Age", str_, 0),
                ("IP", str_, 1),
                ("Node", str_, 1),
                ("Nominated Node", str_, 1),
                ("Readiness Gates", str_, 1),
            ]),
            Box::new(pod_row),
        ),
        ("", "nodes") => (
            cols(&[
                ("Name", str_, 0),
                ("Status", str_, 0),
                ("Roles", str_, 0),
                ("Age", str_, 0),
                ("Version", str_, 0),
                ("Internal-IP", str_, 1),
                ("External-IP", str_, 1),
                ("OS-Image", str_, 1),
                ("Kernel-Version", str_, 1),
                ("Container-Runtime", str_, 1),
            ]),
            Box::new(node_row),
        ),
        ("apps", "deployments") => (
            cols(&[
                ("Name", str_, 0),
                ("Ready", str_, 0),
                ("Up-to-date", int, 0),
                ("Available", int, 0),
                ("Age", str_, 0),
                ("Containers", str_, 1),
                ("Images", str_, 1),
                ("Selector", str_, 1),
            ]),
            Box::new(deployment_row),
        ),
        ("apps", "replicasets") => (
            cols(&[
                ("Name", str_, 0),
                ("Desired", int, 0),
                ("Current", int, 0),
                ("Ready", int, 0),
                ("Age", str_, 0),
                ("Containers", str_, 1),
                ("Images", str_, 1),
                ("Selector", str_, 1),
            ]),
            Box::new(replicaset_row),
        ),
        ("", "namespaces") => (
            cols(&[("Name", str_, 0), ("Status", str_, 0), ("Age", str_, 0)]),
            Box::new(|n: &Value| {
                vec![
                    n["metadata"]["name"].clone(),
                    json!(s(&n["status"]["phase"])),
                    json!(age(&n["metadata"]["creationTimestamp"])),
                ]
            }),
        ),
        ("", "events") => (
            cols(&[
                ("Last Seen", str_, 0),
                ("Type", str_, 0),
                ("Reason", str_, 0),
                ("Object", str_, 0),
                ("Subobject", str_, 1),
                ("Source", str_, 1),
                ("Message", str_, 0),
                ("First Seen", str_, 1),
                ("Count", int, 1),
                ("Name", str_, 1),
            ]),
            Box::new(event_row),
        ),
        _ => match crd_columns(store, def) {
            Some(extra) => {
                let mut c = vec![("Name".to_owned(), str_, 0)];
                c.extend(extra.iter().map(|x| {
                    let t = if x["type"] == "date" {
                        str_
                    } else {
                        x["type"]
                            .as_str()
                            .map_or(str_, |t| if t == "integer" { int } else { str_ })
                    };
                    (
                        x["name"].as_str().unwrap_or("").to_owned(),
                        t,
                        u8::try_from(x["priority"].as_u64().unwrap_or(0)).unwrap_or(0),
                    )
                }));
                let render = move |o: &Value| {
                    let mut row = vec![o["metadata"]["name"].clone()];
                    row.extend(extra.iter().map(|x| {
                        let v = json_path(o, x["jsonPath"].as_str().unwrap_or(""));
                        if x["type"] == "date" {
                            json!(age(&v))
                        } else if v.is_null() {
                            json!("")
                        } else {
                            v
                        }
                    }));
                    row
                };
                (c, Box::new(render))
            }
            None => (
                cols(&[("Name", str_, 0), ("Age", date, 0)]),
                Box::new(|o: &Value| {
                    vec![
                        o["metadata"]["name"].clone(),
                        json!(age(&o["metadata"]["creationTimestamp"])),
                    ]
                }),
            ),
        },
    }
}

/// The `PartialObjectMetadata` a row carries (kubectl reads namespace and labels there).
fn row_object(o: &Value) -> Value {
    json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]})
}

/// A Table of `objects` of `def`; `with_columns: false` leaves the column definitions
/// out (watch events after the first).
pub fn table(
    store: &ApiStore,
    def: &ResourceDef,
    objects: &[Value],
    resource_version: &str,
    with_columns: bool,
) -> Value {
    let (columns, render) = layout(store, def);
    let defs: Vec<Value> = columns
        .iter()
        .map(|(name, t, priority)| {
            let format = if name == "Name" { "name" } else { "" };
            json!({"name": name, "type": t, "format": format, "description": "", "priority": priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| json!({"cells": render(o), "object": row_object(o)}))
        .collect();
    let mut t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "rows": rows,
    });
    if with_columns {
        t["columnDefinitions"] = json!(defs);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_like_kubernetes() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
        ] {
            assert_eq!(human_duration(s), want, "{s}");
        }
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }

    #[test]
    fn pod_rows_line_up_with_columns() {
        let store = ApiStore::default();
        let def = ResourceDef {
            group: String::new(),
            version: "v1".into(),
            plural: "pods".into(),
            singular: "pod".into(),
            kind: "Pod".into(),
            namespaced: true,
            short_names: vec![],
        };
        let pod = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.1"}});
        let t = table(&store, &def, &[pod], "7", true);
        let cols = t["columnDefinitions"].as_array().unwrap();
        let cells = t["rows"][0]["cells"].as_array().unwrap();
        assert_eq!(cols.len(), cells.len());
        assert_eq!(cells[1], "1/1");
        assert_eq!(cells[2], "Running");
        assert_eq!(cells[6], "n1");
        assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "p");
    }
}
