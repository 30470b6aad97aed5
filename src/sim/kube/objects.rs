//! The object store of one simulated API server and the
//! write semantics: create, server-side apply (one field manager is enough), JSON merge
//! patch, update.
//!
//! Invariant: `resourceVersion` (one counter per cluster) changes only when an object's
//! stored JSON changes, `generation` only when something outside `metadata` and
//! `status` changes; applying the same content again is a no-op that returns the
//! stored object untouched. Writes to the main resource never change `status`.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};
use serde_json::{Map, Value, json};

use super::status::KStatus;

/// Where an object lives: (group, resource, namespace or "", name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjKey {
    pub group: String,
    pub plural: String,
    pub namespace: String,
    pub name: String,
}

impl ObjKey {
    pub fn new(group: &str, plural: &str, namespace: &str, name: &str) -> ObjKey {
        ObjKey {
            group: group.to_owned(),
            plural: plural.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl Serialize for ObjKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ns = if self.namespace.is_empty() {
            "-"
        } else {
            &self.namespace
        };
        let g = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        s.serialize_str(&format!("{g}/{}/{ns}/{}", self.plural, self.name))
    }
}

/// Metadata fields the server owns.
const SERVER_META: [&str; 7] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
];

pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The object without status and server-owned metadata: what a client controls.
pub fn content(obj: &Value) -> Value {
    let mut c = obj.clone();
    if let Some(m) = c.as_object_mut() {
        m.remove("status");
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in SERVER_META {
                meta.remove(k);
            }
        }
    }
    c
}

/// Everything but metadata and status (a change here bumps `generation`).
fn spec_part(obj: &Value) -> Value {
    let mut c = content(obj);
    if let Some(m) = c.as_object_mut() {
        m.remove("metadata");
    }
    c
}

/// RFC 7386 JSON merge patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Some(t) = target.as_object_mut() {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

/// Paths (`.spec.replicas`) where `incoming` sets a value `old` already holds
/// differently (objects are compared key by key, anything else as a whole).
fn conflicts(old: &Value, incoming: &Value, path: &str, out: &mut Vec<String>) {
    match (old, incoming) {
        (Value::Object(o), Value::Object(i)) => {
            for (k, v) in i {
                if let Some(ov) = o.get(k) {
                    conflicts(ov, v, &format!("{path}.{k}"), out);
                }
            }
        }
        (o, i) if o != i && !o.is_null() => out.push(path.to_owned()),
        _ => {}
    }
}

fn managed_entry(manager: &str, operation: &str, api_version: &str) -> Value {
    json!({
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": now_rfc3339(),
        "fieldsType": "FieldsV1",
        "fieldsV1": {},
    })
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_owned(),
                e["operation"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// How a write was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Server-side apply by `manager`.
    Apply { manager: String, force: bool },
    /// JSON merge patch.
    Merge { manager: String },
    /// Strategic merge patch (see [`super::strategic`]).
    Strategic { manager: String },
    /// PUT: replace the content.
    Update { manager: String },
}

/// The result of a write to an existing object.
#[derive(Debug)]
pub enum Outcome {
    Unchanged,
    Changed(Value),
}

/// Compute the new stored object for `write` of `body` onto `existing`.
/// `finish` normalises the merged content as the server stores it (or refuses it).
pub fn write_existing(
    existing: &Value,
    body: &Value,
    write: &Write,
    finish: &dyn Fn(&mut Value) -> Result<(), KStatus>,
) -> Result<Outcome, KStatus> {
    let old = content(existing);
    let mut incoming = content(body);
    // The URL names the object: a body without name or namespace means the same one.
    for k in ["name", "namespace"] {
        let meta_ok = incoming.is_object()
            && (incoming["metadata"].is_object() || incoming["metadata"].is_null());
        if meta_ok && incoming["metadata"][k].is_null() && !existing["metadata"][k].is_null() {
            incoming["metadata"][k] = existing["metadata"][k].clone();
        }
    }
    // A whole object (apply, update) is compared in its stored form.
    if matches!(write, Write::Apply { .. } | Write::Update { .. }) {
        finish(&mut incoming)?;
    }
    let (new, manager, operation) = match write {
        Write::Apply { manager, force } => {
            let others: Vec<String> = managers(existing)
                .into_iter()
                .filter(|(m, _)| m != manager)
                .map(|(m, _)| m)
                .collect();
            let ours = managers(existing)
                .iter()
                .any(|(m, op)| m == manager && op == "Apply");
            if !others.is_empty() && !ours {
                // Fields owned by another manager: merge, and refuse to change a value
                // another manager set without force (new fields are no conflict).
                let mut merged = old.clone();
                merge_patch(&mut merged, &incoming);
                let mut changed = Vec::new();
                conflicts(&old, &incoming, "", &mut changed);
                if !force && !changed.is_empty() {
                    return Err(KStatus::new(
                        409,
                        "Conflict",
                        format!(
                            "Apply failed with {} conflict{}: conflict with \"{}\": {}",
                            changed.len(),
                            if changed.len() == 1 { "" } else { "s" },
                            others.join("\", \""),
                            changed.join(", ")
                        ),
                    ));
                }
                (merged, manager, "Apply")
            } else {
                (incoming, manager, "Apply")
            }
        }
        Write::Merge { manager } => {
            let mut merged = old.clone();
            merge_patch(&mut merged, &incoming);
            (merged, manager, "Update")
        }
        Write::Strategic { manager } => {
            let mut merged = old.clone();
            super::strategic::apply(&mut merged, &incoming);
            (merged, manager, "Update")
        }
        Write::Update { manager } => (incoming, manager, "Update"),
    };
    let mut new = new;
    finish(&mut new)?;
    if new == old {
        return Ok(Outcome::Unchanged);
    }
    let mut obj = new;
    let spec_changed = spec_part(&obj) != spec_part(existing);
    let meta = obj
        .as_object_mut()
        .and_then(|m| m.get_mut("metadata"))
        .and_then(Value::as_object_mut);
    let Some(meta) = meta else {
        return Err(KStatus::bad_request("metadata must be an object"));
    };
    let em = &existing["metadata"];
    for k in ["uid", "creationTimestamp", "generation"] {
        if !em[k].is_null() {
            meta.insert(k.to_owned(), em[k].clone());
        }
    }
    if spec_changed {
        let g = em["generation"].as_i64().unwrap_or(1) + 1;
        meta.insert("generation".into(), json!(g));
    }
    let api_version = obj["apiVersion"].as_str().unwrap_or("").to_owned();
    let mut mf: Vec<Value> = existing["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| !(e["manager"] == manager.as_str() && e["operation"] == operation))
        .collect();
    mf.push(managed_entry(manager, operation, &api_version));
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("managedFields".into(), Value::Array(mf));
    }
    if let Some(status) = existing.get("status")
        && let Some(m) = obj.as_object_mut()
    {
        m.insert("status".into(), status.clone());
    }
    Ok(Outcome::Changed(obj))
}

/// How many changes a store remembers for watches.
pub const HISTORY: usize = 4096;

/// A watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Modified,
    Deleted,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "ADDED",
            Change::Modified => "MODIFIED",
            Change::Deleted => "DELETED",
        }
    }
}

/// One cluster's objects, its resourceVersion counter, and its recent changes (each
/// with the resourceVersion it produced and the object after it; for a deletion, the
/// last stored object).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiStore {
    pub resource_version: u64,
    pub objects: BTreeMap<ObjKey, Value>,
    #[serde(skip)]
    pub history: std::collections::VecDeque<(u64, Change, ObjKey, Value)>,
}

impl ApiStore {
    fn bump(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    fn remember(&mut self, change: Change, key: &ObjKey, obj: &Value) {
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history
            .push_back((self.resource_version, change, key.clone(), obj.clone()));
    }

    pub fn get(&self, key: &ObjKey) -> Option<&Value> {
        self.objects.get(key)
    }

    /// Objects of one resource (one namespace, or all), in key order.
    pub fn list<'a>(
        &'a self,
        group: &'a str,
        plural: &'a str,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjKey, &'a Value)> + 'a {
        self.objects.iter().filter(move |(k, _)| {
            k.group == group && k.plural == plural && namespace.is_none_or(|ns| k.namespace == ns)
        })
    }

    pub fn keys_of(&self, group: &str, plural: &str) -> Vec<ObjKey> {
        self.list(group, plural, None)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Store a new object: client content plus server metadata and `status`.
    pub fn create(
        &mut self,
        key: ObjKey,
        body: &Value,
        manager: &str,
        operation: &str,
        status: Option<Value>,
    ) -> Value {
        let mut obj = content(body);
        let api_version = obj["apiVersion"].as_str().unwrap_or("").to_owned();
        let rv = self.bump();
        if let Some(m) = obj.as_object_mut() {
            let meta = m
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("name".into(), json!(key.name));
                if !key.namespace.is_empty() {
                    meta.insert("namespace".into(), json!(key.namespace));
                }
                meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
                meta.insert("resourceVersion".into(), json!(rv));
                meta.insert("generation".into(), json!(1));
                meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
                meta.insert(
                    "managedFields".into(),
                    json!([managed_entry(manager, operation, &api_version)]),
                );
            }
            if let Some(s) = status {
                m.insert("status".into(), s);
            }
        }
        self.remember(Change::Added, &key, &obj);
        self.objects.insert(key, obj.clone());
        obj
    }

    /// Replace a stored object (new resourceVersion).
    pub fn put(&mut self, key: ObjKey, mut obj: Value) {
        let rv = self.bump();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), json!(rv));
        }
        self.remember(Change::Modified, &key, &obj);
        self.objects.insert(key, obj);
    }

    /// Set `status` if that changes it (true when it did).
    pub fn set_status(&mut self, key: &ObjKey, status: Value) -> bool {
        let Some(obj) = self.objects.get(key) else {
            return false;
        };
        if obj.get("status") == Some(&status) {
            return false;
        }
        let mut obj = obj.clone();
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), status);
        }
        self.put(key.clone(), obj);
        true
    }

    pub fn remove(&mut self, key: &ObjKey) -> Option<Value> {
        let mut removed = self.objects.remove(key);
        if let Some(obj) = removed.as_mut() {
            let rv = self.bump();
            obj["metadata"]["resourceVersion"] = json!(rv);
            let obj = obj.clone();
            self.remember(Change::Deleted, key, &obj);
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(existing: &Value, body: Value) -> Outcome {
        write_existing(
            existing,
            &body,
            &Write::Apply {
                manager: "kineticd".into(),
                force: true,
            },
            &|_| Ok(()),
        )
        .unwrap()
    }

    #[test]
    fn apply_semantics() {
        let mut store = ApiStore::default();
        let key = ObjKey::new("", "configmaps", "default", "c");
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}});
        let created = store.create(key.clone(), &body, "kineticd", "Apply", None);
        assert_eq!(created["metadata"]["resourceVersion"], "1");
        assert!(matches!(apply(&created, body.clone()), Outcome::Unchanged));
        let changed = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"b": "2"}});
        let Outcome::Changed(new) = apply(&created, changed) else {
            panic!("expected a change")
        };
        assert_eq!(
            new["data"],
            json!({"b": "2"}),
            "fields no longer applied are removed"
        );
        assert_eq!(new["metadata"]["generation"], 2);
        assert_eq!(new["metadata"]["uid"], created["metadata"]["uid"]);
    }

    #[test]
    fn merge() {
        let mut t = json!({"a": {"b": 1, "c": 2}, "d": [1]});
        merge_patch(&mut t, &json!({"a": {"b": null, "e": 3}, "d": [2]}));
        assert_eq!(t, json!({"a": {"c": 2, "e": 3}, "d": [2]}));
    }

    #[test]
    fn conflict_without_force() {
        let mut store = ApiStore::default();
        let key = ObjKey::new("", "pods", "default", "p");
        let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1"}}});
        let created = store.create(key, &body, "kubectl", "Update", None);
        let mut changed = body.clone();
        changed["metadata"]["labels"]["a"] = json!("2");
        let e = write_existing(
            &created,
            &changed,
            &Write::Apply {
                manager: "kineticd".into(),
                force: false,
            },
            &|_| Ok(()),
        )
        .unwrap_err();
        assert_eq!(e.code, 409);
    }
}
