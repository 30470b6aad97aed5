//! Core `v1` Events as the cluster's components record them (what `kubectl describe`
//! lists under "Events:"): the scheduler's `Scheduled` / `FailedScheduling`, the
//! cluster autoscaler's `TriggeredScaleUp` / `NotTriggerScaleUp` (written in
//! `scale_up_events`), the workload controllers' `ScalingReplicaSet` /
//! `SuccessfulCreate` / `SuccessfulDelete`.
//!
//! Invariant: an event is recorded once per (object uid, reason, message): recording
//! it again changes nothing, so reconciling an idle cluster keeps every
//! resourceVersion; events live in the object's namespace (`default` for cluster-scoped
//! objects) and name their object by kind, namespace, name and uid.

use serde_json::{Value, json};

use super::objects::{ApiStore, ObjKey, now_rfc3339};

/// Kubernetes `Normal` / `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

/// What happened to which object, and who says so.
pub struct Event<'a> {
    pub kind: &'a str,
    pub api_version: &'a str,
    pub object: &'a Value,
    pub kind_of_event: EventType,
    pub reason: &'a str,
    pub message: &'a str,
    pub component: &'a str,
}

/// Record `ev` (once; see the module invariant). Returns whether it was new.
pub fn record(api: &mut ApiStore, ev: &Event<'_>) -> bool {
    let meta = &ev.object["metadata"];
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    let (name, obj_ns, uid) = (s(&meta["name"]), s(&meta["namespace"]), s(&meta["uid"]));
    let ns = if obj_ns.is_empty() {
        "default".to_owned()
    } else {
        obj_ns.clone()
    };
    // The name is a function of (uid, reason, message): a repeat finds its event.
    let suffix = format!(
        "{:016x}",
        crate::domain::hash::fnv1a(format!("{uid}/{}/{}", ev.reason, ev.message).bytes())
    );
    let event_name = format!("{name}.{suffix}");
    let key = ObjKey::new("", "events", &ns, &event_name);
    if api.get(&key).is_some() {
        return false;
    }
    let now = now_rfc3339();
    let body = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": event_name, "namespace": ns},
        "involvedObject": {
            "kind": ev.kind, "namespace": obj_ns, "name": name, "uid": uid,
            "apiVersion": ev.api_version, "resourceVersion": meta["resourceVersion"].clone(),
        },
        "reason": ev.reason,
        "message": ev.message,
        "source": {"component": ev.component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "type": match ev.kind_of_event { EventType::Normal => "Normal", EventType::Warning => "Warning" },
        "reportingComponent": ev.component,
        "reportingInstance": "",
    });
    api.create(key, &body, ev.component, "Update", None);
    true
}

/// A pod event.
pub fn on_pod(
    api: &mut ApiStore,
    key: &ObjKey,
    t: EventType,
    reason: &str,
    message: &str,
    component: &str,
) {
    let Some(pod) = api.get(key).cloned() else {
        return;
    };
    record(
        api,
        &Event {
            kind: "Pod",
            api_version: "v1",
            object: &pod,
            kind_of_event: t,
            reason,
            message,
            component,
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_once_per_reason_and_message() {
        let mut api = ApiStore::default();
        let key = ObjKey::new("", "pods", "default", "p");
        api.create(
            key.clone(),
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}),
            "t",
            "Update",
            None,
        );
        let scheduler = |api: &mut ApiStore, t, reason, message| {
            on_pod(api, &key, t, reason, message, "default-scheduler");
        };
        scheduler(&mut api, EventType::Warning, "FailedScheduling", "no");
        let rv = api.resource_version;
        scheduler(&mut api, EventType::Warning, "FailedScheduling", "no");
        assert_eq!(api.resource_version, rv, "a repeat records nothing");
        scheduler(&mut api, EventType::Normal, "Scheduled", "yes");
        let events: Vec<&Value> = api
            .list("", "events", Some("default"))
            .map(|(_, e)| e)
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events.iter().filter(|e| e["type"] == "Warning").count(), 1);
        assert!(events.iter().all(|e| e["involvedObject"]["kind"] == "Pod" && e["involvedObject"]["name"] == "p"));
    }
}
