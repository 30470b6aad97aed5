//! GKE's ProvisioningRequest controller for queued-provisioning pools (flex-start with
//! queued provisioning): a `ProvisioningRequest` (`autoscaling.x-k8s.io/v1`, namespaced,
//! class `queued-provisioning.gke.io`) whose pod sets reference PodTemplates that fit a
//! queued pool gets that pool's nodes all at once, one node per pod of its pod sets, and
//! its status conditions as GKE sets them: `Accepted`, then `Provisioned` (or `Failed`
//! with a reason when no queued pool can hold it).
//!
//! Invariant: a queued pool grows only here (the autoscaler never grows it for pending
//! pods), and each request is provisioned at most once: a request whose conditions
//! already say `Provisioned` or `Failed` is never looked at again.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::PoolNodes;
use super::nodes;
use super::objects::{ApiStore, ObjKey, now_rfc3339};
use super::sched::{self, NodeView, Res};

pub const GROUP: &str = "autoscaling.x-k8s.io";
pub const PLURAL: &str = "provisioningrequests";
/// The provisioning class of flex-start with queued provisioning.
pub const QUEUED_CLASS: &str = "queued-provisioning.gke.io";
/// The node label (and taint key) GKE puts on queued-provisioning nodes.
pub const QUEUED_KEY: &str = "cloud.google.com/gke-queued";

/// Whether the autoscaler must leave `pool` alone (nodes only for a request).
pub fn is_queued(pool: &PoolNodes) -> bool {
    pool.labels.get(QUEUED_KEY).map(String::as_str) == Some("true")
}

fn condition(kind: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now_rfc3339(),
        "observedGeneration": 1,
    })
}

fn settled(pr: &Value) -> bool {
    pr["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| {
            matches!(c["type"].as_str(), Some("Provisioned" | "Failed")) && c["status"] == "True"
        })
}

/// The pods a request asks for: (pod template spec, its requests, how many).
fn pod_sets(api: &ApiStore, ns: &str, pr: &Value) -> Result<Vec<(Value, Res, u32)>, String> {
    let mut out = Vec::new();
    for set in pr["spec"]["podSets"].as_array().into_iter().flatten() {
        let name = set["podTemplateRef"]["name"].as_str().unwrap_or("");
        let key = ObjKey::new("", "podtemplates", ns, name);
        let Some(t) = api.get(&key) else {
            return Err(format!("PodTemplate {ns}/{name} not found"));
        };
        let pod = json!({"spec": t["template"]["spec"].clone()});
        let count = u32::try_from(set["count"].as_u64().unwrap_or(1)).unwrap_or(u32::MAX);
        out.push((pod["spec"].clone(), sched::pod_requests(&pod), count));
    }
    if out.is_empty() {
        return Err("spec.podSets is empty".into());
    }
    Ok(out)
}

/// The queued pool whose node every pod of the request fits on, and the nodes (per
/// zone) it grows by: one node per pod, spread over the pool's zones.
fn choose(
    key: &str,
    pools: &BTreeMap<String, PoolNodes>,
    sets: &[(Value, Res, u32)],
) -> Result<(String, u32), String> {
    let pods: u32 = sets.iter().map(|(_, _, n)| *n).sum();
    let mut reasons = Vec::new();
    for (name, p) in pools.iter().filter(|(_, p)| is_queued(p)) {
        let node = NodeView::from_json(&nodes::template(key, p));
        if let Some(why) = sets
            .iter()
            .find_map(|(spec, req, _)| sched::check(spec, req, &node, &Res::new()).err())
        {
            reasons.push(format!("{name}: {}", why.join(", ")));
            continue;
        }
        let zones = u32::try_from(p.zones.len().max(1)).unwrap_or(1);
        let per_zone = pods.div_ceil(zones);
        if p.count + per_zone > p.max {
            reasons.push(format!(
                "{name}: {pods} nodes would exceed its maximum of {} per zone",
                p.max
            ));
            continue;
        }
        return Ok((name.clone(), per_zone));
    }
    if reasons.is_empty() {
        return Err("no queued-provisioning node pool in the cluster".into());
    }
    Err(format!(
        "no queued-provisioning node pool fits: {}",
        reasons.join("; ")
    ))
}

/// Provision every new request of the queued class. Returns whether anything changed.
pub fn run(api: &mut ApiStore, key: &str, pools: &mut BTreeMap<String, PoolNodes>) -> bool {
    let mut changed = false;
    for k in api.keys_of(GROUP, PLURAL) {
        let Some(pr) = api.get(&k).cloned() else {
            continue;
        };
        if settled(&pr) || pr["spec"]["provisioningClassName"] != QUEUED_CLASS {
            continue;
        }
        let accepted = condition(
            "Accepted",
            "True",
            "SuccessfullyQueued",
            "Provisioning Request was successfully queued.",
        );
        let decided = pod_sets(api, &k.namespace, &pr).and_then(|sets| choose(key, pools, &sets));
        let (last, details) = match decided {
            Ok((pool, per_zone)) => {
                if let Some(p) = pools.get_mut(&pool) {
                    p.count += per_zone;
                }
                tracing::debug!(cluster = %key, request = %k.name, pool = %pool, "simulated queued provisioning");
                (
                    condition(
                        "Provisioned",
                        "True",
                        "Provisioned",
                        "Provisioning Request was successfully provisioned.",
                    ),
                    json!({"NodePoolName": pool, "ResizeRequestName": format!("{}-{}", k.name, pool)}),
                )
            }
            Err(why) => (
                condition("Failed", "True", "FailedToProvision", &why),
                json!({}),
            ),
        };
        let status = json!({
            "conditions": [accepted, last],
            "provisioningClassDetails": details,
        });
        changed |= api.set_status(&k, status);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, queued: bool) -> PoolNodes {
        PoolNodes::gpu_for_tests(name, 2, queued.then_some((QUEUED_KEY, "true")))
    }

    fn request(api: &mut ApiStore, name: &str, template: &str, count: u32) -> ObjKey {
        let key = ObjKey::new(GROUP, PLURAL, "default", name);
        let body = json!({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "spec": {"provisioningClassName": QUEUED_CLASS,
                     "podSets": [{"count": count, "podTemplateRef": {"name": template}}]}});
        api.create(key.clone(), &body, "test", "Update", None);
        key
    }

    fn condition_of(api: &ApiStore, key: &ObjKey, kind: &str) -> Option<Value> {
        api.get(key)?["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == kind)
            .cloned()
    }

    #[test]
    fn requests_grow_only_a_queued_pool_once_or_fail_with_the_reason() {
        let mut api = ApiStore::default();
        let mut pools = BTreeMap::from([
            ("q".to_owned(), pool("q", true)),
            ("plain".to_owned(), pool("plain", false)),
        ]);
        let template = json!({"apiVersion": "v1", "kind": "PodTemplate", "template": {"spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"},
                            {"key": QUEUED_KEY, "operator": "Equal", "value": "true"}],
            "containers": [{"name": "c", "image": "x",
                            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}});
        api.create(
            ObjKey::new("", "podtemplates", "default", "t"),
            &template,
            "test",
            "Update",
            None,
        );
        let missing = request(&mut api, "missing", "nope", 1);
        let big = request(&mut api, "big", "t", 3);
        let ok = request(&mut api, "ok", "t", 2);
        assert!(run(&mut api, "k", &mut pools));
        assert_eq!(pools["q"].count, 2, "two pods, two nodes");
        assert_eq!(
            pools["plain"].count, 0,
            "never a pool without queued provisioning"
        );
        assert_eq!(
            condition_of(&api, &ok, "Provisioned").unwrap()["status"],
            "True"
        );
        assert_eq!(
            condition_of(&api, &ok, "Accepted").unwrap()["status"],
            "True"
        );
        let failed = condition_of(&api, &missing, "Failed").unwrap();
        assert!(
            failed["message"]
                .as_str()
                .unwrap()
                .contains("PodTemplate default/nope")
        );
        let failed = condition_of(&api, &big, "Failed").unwrap();
        assert!(
            failed["message"].as_str().unwrap().contains("maximum"),
            "{failed}"
        );
        // Settled requests are never provisioned again.
        assert!(!run(&mut api, "k", &mut pools));
        assert_eq!(pools["q"].count, 2);
    }
}
