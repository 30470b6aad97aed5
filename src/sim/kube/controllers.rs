//! Status controllers on the simulator clock: Deployments become Available (once
//! their pods run, see [`workloads`]) and
//! DaemonSets get their pods scheduled a few virtual seconds after each new
//! generation; CRDs are NamesAccepted at once and Established shortly after. A Deployment
//! or DaemonSet held by an ailment ([`super::ailments`]) stays unready.
//!
//! Invariant: status is a pure function of (object, the virtual time its current
//! generation was first seen, nodes, ailments), written only when it differs, so polling an idle
//! cluster never changes a resourceVersion; the earliest pending transition is returned
//! as the cluster's next wake-up.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::ailments::Ailments;
use super::objects::{ApiStore, ObjKey};
use super::resources::{CRD_GROUP, CRD_PLURAL};
use super::sched::{NodeView, node_views, placement_ok};
use super::workloads;
use crate::sim::clock::{Clock, SimTime};

/// Virtual delay before a Deployment's new generation is Available.
pub const DEPLOYMENT_READY_DELAY: Duration = Duration::from_secs(5);
/// Virtual delay before a DaemonSet's pods are scheduled and ready.
pub const DAEMONSET_READY_DELAY: Duration = Duration::from_secs(5);
/// Virtual delay before a CRD is Established.
pub const CRD_ESTABLISH_DELAY: Duration = Duration::from_secs(1);

/// When each object's current generation was first seen: key -> (generation, time).
pub type Observed = BTreeMap<ObjKey, (i64, SimTime)>;

/// The due time of `key`'s current generation (recording it when new), and whether it has come.
fn due(
    observed: &mut Observed,
    key: &ObjKey,
    obj: &Value,
    clock: &Clock,
    delay: Duration,
) -> (bool, SimTime) {
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    let entry = observed
        .entry(key.clone())
        .or_insert((generation, clock.now()));
    if entry.0 != generation {
        *entry = (generation, clock.now());
    }
    let at = entry.1 + delay;
    (clock.is_due(at), at)
}

fn cond(t: &str, ok: bool, reason: &str, message: &str) -> Value {
    json!({"type": t, "status": if ok { "True" } else { "False" }, "reason": reason, "message": message})
}

/// A Deployment's status with `ready` of its replicas available.
fn deployment_status(obj: &Value, ready: i64) -> Value {
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    let replicas = obj["spec"]["replicas"].as_i64().unwrap_or(1);
    let ready = ready.min(replicas);
    let available = ready >= replicas;
    let mut s = json!({
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
    });
    if ready > 0 {
        s["readyReplicas"] = json!(ready);
        s["availableReplicas"] = json!(ready);
    }
    if available {
        s["conditions"] = json!([
            cond(
                "Available",
                true,
                "MinimumReplicasAvailable",
                "Deployment has minimum availability."
            ),
            cond(
                "Progressing",
                true,
                "NewReplicaSetAvailable",
                "ReplicaSet has successfully progressed."
            ),
        ]);
    } else {
        s["unavailableReplicas"] = json!(replicas - ready);
        s["conditions"] = json!([
            cond(
                "Available",
                false,
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability."
            ),
            cond(
                "Progressing",
                true,
                "ReplicaSetUpdated",
                "ReplicaSet is progressing."
            ),
        ]);
    }
    s
}

fn daemonset_status(obj: &Value, desired: i64, ready: bool) -> Value {
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    let n = if ready { desired } else { 0 };
    let mut s = json!({
        "observedGeneration": generation,
        "desiredNumberScheduled": desired,
        "currentNumberScheduled": n,
        "updatedNumberScheduled": n,
        "numberMisscheduled": 0,
        "numberReady": n,
        "numberAvailable": n,
    });
    if desired > n {
        s["numberUnavailable"] = json!(desired - n);
    }
    s
}

fn crd_status(obj: &Value, established: bool) -> Value {
    let storage: Vec<Value> = obj["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"].as_bool().unwrap_or(false))
        .map(|v| v["name"].clone())
        .collect();
    json!({
        "conditions": [
            cond("NamesAccepted", true, "NoConflicts", "no conflicts found"),
            cond("Established", established,
                 if established { "InitialNamesAccepted" } else { "Installing" },
                 if established { "the initial names have been accepted" } else { "the initial names are being accepted" }),
        ],
        "acceptedNames": obj["spec"]["names"].clone(),
        "storedVersions": storage,
    })
}

fn established(crd: &Value) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True")
}

/// Nodes the DaemonSet's pod template may run on.
fn daemonset_desired(obj: &Value, nodes: &[NodeView]) -> i64 {
    let spec = &obj["spec"]["template"]["spec"];
    let n = nodes.iter().filter(|n| placement_ok(spec, n)).count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Run every controller once. Returns (changed, earliest pending transition).
pub fn run(
    store: &mut ApiStore,
    observed: &mut Observed,
    clock: &Clock,
    ailments: &Ailments,
) -> (bool, Option<SimTime>) {
    let mut changed = false;
    let mut wake: Option<SimTime> = None;
    let mut later = |at: SimTime, ok: bool| {
        if !ok {
            wake = Some(wake.map_or(at, |w| w.min(at)));
        }
    };
    let nodes = node_views(store);
    for key in store.keys_of("apps", "deployments") {
        let Some(obj) = store.get(&key).cloned() else {
            continue;
        };
        let (ok, at) = due(observed, &key, &obj, clock, DEPLOYMENT_READY_DELAY);
        later(at, ok);
        // Replicas count once their pods run; an API server without any node (a bare
        // test cluster) runs no pods, and counts every replica after the delay.
        let ready = match (ok && !ailments.holds(&key), nodes.is_empty()) {
            (false, _) => 0,
            (true, true) => i64::MAX,
            (true, false) => workloads::running_pods(store, &obj),
        };
        changed |= store.set_status(&key, deployment_status(&obj, ready));
    }
    for key in store.keys_of("apps", "daemonsets") {
        let Some(obj) = store.get(&key).cloned() else {
            continue;
        };
        let (ok, at) = due(observed, &key, &obj, clock, DAEMONSET_READY_DELAY);
        later(at, ok);
        let desired = daemonset_desired(&obj, &nodes);
        let ready = ok && !ailments.holds(&key);
        changed |= store.set_status(&key, daemonset_status(&obj, desired, ready));
    }
    for key in store.keys_of(CRD_GROUP, CRD_PLURAL) {
        let Some(obj) = store.get(&key).cloned() else {
            continue;
        };
        let (ok, at) = due(observed, &key, &obj, clock, CRD_ESTABLISH_DELAY);
        // Once established, a CRD stays established across spec changes.
        let ok = ok || established(&obj);
        later(at, ok);
        changed |= store.set_status(&key, crd_status(&obj, ok));
    }
    observed.retain(|k, _| store.get(k).is_some());
    (changed, wake)
}
