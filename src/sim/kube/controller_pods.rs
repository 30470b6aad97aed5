//! What the workload controllers (Deployment, ReplicaSet, StatefulSet, Job) share: who
//! they are (kind, API version, event component), controlling owner references, the
//! pods an owner owns, generated name suffixes, pods made from an owner's template and
//! created Pending, and their Normal events.
//!
//! Invariant: a pod made here is admitted exactly once, when it is made (as the API
//! server admits any pod), and owned through one controlling owner reference; an owner
//! owns exactly the live pods whose controlling reference carries its uid.

use serde_json::{Value, json};

use super::admission;
use super::events::{self, Event, EventType};
use super::objects::{ApiStore, ObjKey};
use super::sched;

pub(super) const CONTROLLER: &str = "kube-controller-manager";
/// The alphabet Kubernetes uses for generated name suffixes.
const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The workload controllers, by the kind of object they manage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Controller {
    Deployment,
    ReplicaSet,
    StatefulSet,
    Job,
}

impl Controller {
    fn kind(self) -> &'static str {
        match self {
            Controller::Deployment => "Deployment",
            Controller::ReplicaSet => "ReplicaSet",
            Controller::StatefulSet => "StatefulSet",
            Controller::Job => "Job",
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Controller::Job => "batch/v1",
            _ => "apps/v1",
        }
    }

    /// The component that signs its events.
    fn component(self) -> &'static str {
        match self {
            Controller::Deployment => "deployment-controller",
            Controller::ReplicaSet => "replicaset-controller",
            Controller::StatefulSet => "statefulset-controller",
            Controller::Job => "job-controller",
        }
    }

    /// The controlling owner reference to `owner`, an object this controller manages.
    pub(super) fn owner_ref(self, owner: &Value) -> Value {
        json!([{
            "apiVersion": self.api_version(), "kind": self.kind(),
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": true, "blockOwnerDeletion": true,
        }])
    }

    /// The metadata of a new object `name` that `owner` controls through this controller:
    /// in the owner's namespace, labelled as `template` says.
    pub(super) fn owned_metadata(self, owner: &Value, name: &str, template: &Value) -> Value {
        json!({
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": template["metadata"]["labels"],
            "ownerReferences": self.owner_ref(owner),
        })
    }

    /// A Normal event on `obj`, signed by this controller.
    pub(super) fn event(self, api: &mut ApiStore, obj: &Value, reason: &str, message: &str) {
        events::record(
            api,
            &Event {
                kind: self.kind(),
                api_version: self.api_version(),
                object: obj,
                kind_of_event: EventType::Normal,
                reason,
                message,
                component: self.component(),
            },
        );
    }
}

/// Run `reconcile` on each object of `(group, plural)` (a copy: it may write the store
/// itself); whether any run changed something.
pub(super) fn reconcile_each(
    api: &mut ApiStore,
    group: &str,
    plural: &str,
    mut reconcile: impl FnMut(&mut ApiStore, &ObjKey, &Value) -> bool,
) -> bool {
    let mut changed = false;
    for key in api.keys_of(group, plural) {
        if let Some(obj) = api.get(&key).cloned() {
            changed |= reconcile(api, &key, &obj);
        }
    }
    changed
}

pub(super) fn safe_encode(mut h: u64, len: usize) -> String {
    (0..len)
        .map(|_| {
            let c = SAFE[(h % SAFE.len() as u64) as usize] as char;
            h /= SAFE.len() as u64;
            c
        })
        .collect()
}

/// A fresh random 5-character suffix, as generated pod names end.
pub(super) fn random_suffix() -> String {
    safe_encode(uuid::Uuid::new_v4().as_u128() as u64, 5)
}

pub(super) fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or("")
}

/// The uid of `obj`'s controlling owner.
pub(super) fn owner_uid(obj: &Value) -> Option<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == true)?["uid"]
        .as_str()
}

/// Live pods an owner (by uid) owns, oldest first.
pub(super) fn owned_pods(api: &ApiStore, ns: &str, owner: &str) -> Vec<ObjKey> {
    let mut pods: Vec<(String, ObjKey)> = api
        .list("", "pods", Some(ns))
        .filter(|(_, p)| owner_uid(p) == Some(owner))
        .map(|(k, p)| {
            let created = p["metadata"]["creationTimestamp"].as_str().unwrap_or("");
            (format!("{created}/{}", k.name), k.clone())
        })
        .collect();
    pods.sort();
    pods.into_iter().map(|(_, k)| k).collect()
}

/// How many of `pods` are Running.
pub(super) fn running(api: &ApiStore, pods: &[ObjKey]) -> usize {
    pods.iter()
        .filter(|k| {
            api.get(k)
                .is_some_and(|p| p["status"]["phase"] == "Running")
        })
        .count()
}

/// A new pod `name` from `owner`'s `spec.template`, owned by `owner` through
/// `controller`, admitted as the API server admits any pod.
pub(super) fn pod_from_template(controller: Controller, owner: &Value, name: &str) -> Value {
    let t = &owner["spec"]["template"];
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": controller.owned_metadata(owner, name, t),
        "spec": t["spec"].clone(),
    });
    if let Some(a) = t["metadata"].get("annotations") {
        pod["metadata"]["annotations"] = a.clone();
    }
    admission::admit_pod_spec(&mut pod["spec"]);
    pod
}

/// Create `pod` in namespace `ns`, Pending for the scheduler. Returns its name.
pub(super) fn create_pod(api: &mut ApiStore, ns: &str, pod: &Value) -> String {
    let name = pod["metadata"]["name"].as_str().unwrap_or("").to_owned();
    api.create(
        ObjKey::new("", "pods", ns, &name),
        pod,
        CONTROLLER,
        "Update",
        Some(sched::pending_status(None)),
    );
    name
}
