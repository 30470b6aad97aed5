//! GKE custom compute classes as the simulated cluster autoscaler reads them: which
//! pools a pending pod that selects a class may grow, in priority order, and which
//! lower-priority pools active migration (`optimizeRulePriority`) drains once a higher
//! one can take their pods (whether they fit: [`fits_on`]).
//!
//! Invariant: a class only ever names pools tied to it as GKE requires (node label
//! `cloud.google.com/compute-class=<class>`); with `whenUnsatisfiable: DoNotScaleUp`
//! (GKE's default since 1.33, and the simulator's) no other pool is grown for its pods,
//! and `ScaleUpAnyway` adds only the other pools tied to the class.

use std::collections::BTreeMap;

use serde_json::Value;

use super::PoolNodes;
use super::objects::ApiStore;
use super::sched::{self, NodeView, Res};

/// The label (and taint key) tying nodes and pods to a class.
pub const CLASS_KEY: &str = "cloud.google.com/compute-class";
const GROUP: &str = "cloud.google.com";
const PLURAL: &str = "computeclasses";

/// What the autoscaler uses of a ComputeClass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    /// `spec.priorities[].nodepools`, in order (rules of other kinds are skipped: the
    /// simulator does not create pools).
    pub rules: Vec<Vec<String>>,
    /// `spec.activeMigration.optimizeRulePriority`.
    pub optimize: bool,
    /// `spec.whenUnsatisfiable: ScaleUpAnyway`.
    pub scale_up_anyway: bool,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

impl Class {
    pub fn from_json(obj: &Value) -> Class {
        let spec = &obj["spec"];
        Class {
            name: obj["metadata"]["name"].as_str().unwrap_or("").to_owned(),
            rules: spec["priorities"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    let mut pools = strings(&r["nodepools"]);
                    pools.sort(); // GKE treats the pools of one rule as unordered
                    pools
                })
                .filter(|p| !p.is_empty())
                .collect(),
            optimize: spec["activeMigration"]["optimizeRulePriority"].as_bool() == Some(true),
            scale_up_anyway: spec["whenUnsatisfiable"].as_str() == Some("ScaleUpAnyway"),
        }
    }

    fn tied(&self, pool: &PoolNodes) -> bool {
        pool.labels.get(CLASS_KEY) == Some(&self.name)
    }

    /// The pools the autoscaler may grow for a pod of this class, in the order it tries
    /// them.
    pub fn candidates(&self, pools: &BTreeMap<String, PoolNodes>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in self.rules.iter().flatten() {
            if pools.get(name).is_some_and(|p| self.tied(p)) && !out.contains(name) {
                out.push(name.clone());
            }
        }
        if self.scale_up_anyway {
            for p in pools.values().filter(|p| self.tied(p)) {
                if !out.contains(&p.pool) {
                    out.push(p.pool.clone());
                }
            }
        }
        out
    }

    /// The priority of `pool` (0 is the most preferred); `None` when no rule names it.
    pub fn rank(&self, pool: &str) -> Option<usize> {
        self.rules.iter().position(|r| r.iter().any(|p| p == pool))
    }
}

/// Every ComputeClass stored in the cluster, by name.
pub fn classes(api: &ApiStore) -> BTreeMap<String, Class> {
    api.list(GROUP, PLURAL, None)
        .map(|(_, obj)| Class::from_json(obj))
        .map(|c| (c.name.clone(), c))
        .collect()
}

/// The class a pod selects (`nodeSelector["cloud.google.com/compute-class"]`).
pub fn selected(pod: &Value) -> Option<&str> {
    pod["spec"]["nodeSelector"][CLASS_KEY].as_str()
}

/// A drain active migration may do: remove one node (per zone) of `from` once its pods
/// fit on the nodes of one of the higher-priority pools `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Migration {
    pub class: String,
    /// The lower-priority pool to shrink.
    pub from: String,
    /// The higher-priority pools that may take its pods, most preferred first.
    pub to: Vec<String>,
}

/// The migrations worth considering now: for every class with `optimizeRulePriority`,
/// each pool below the first rule that has nodes above its minimum, with the pools of
/// the rules above it.
pub fn migrations(
    classes: &BTreeMap<String, Class>,
    pools: &BTreeMap<String, PoolNodes>,
) -> Vec<Migration> {
    let mut out = Vec::new();
    for c in classes.values().filter(|c| c.optimize) {
        for (rank, rule) in c.rules.iter().enumerate().skip(1) {
            for from in rule {
                let Some(p) = pools.get(from).filter(|p| c.tied(p)) else {
                    continue;
                };
                if p.count <= p.min {
                    continue;
                }
                let to: Vec<String> = c.rules[..rank]
                    .iter()
                    .flatten()
                    .filter(|h| pools.get(*h).is_some_and(|hp| c.tied(hp)))
                    .cloned()
                    .collect();
                if !to.is_empty() {
                    out.push(Migration {
                        class: c.name.clone(),
                        from: from.clone(),
                        to,
                    });
                }
            }
        }
    }
    out
}

/// (spec, requests) of the pods bound to `nodes`, not finished.
pub fn pods_on(api: &ApiStore, nodes: &[String]) -> Vec<(Value, Res)> {
    api.list("", "pods", None)
        .filter(|(_, p)| !is_finished(p))
        .filter(|(_, p)| {
            let node = p["spec"]["nodeName"].as_str().unwrap_or("");
            nodes.iter().any(|n| n == node)
        })
        .map(|(_, p)| (p["spec"].clone(), sched::pod_requests(p)))
        .collect()
}

fn is_finished(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// Whether `pods` all fit, together, on the existing nodes of `pool` beside what runs
/// there now.
pub fn fits_on(api: &ApiStore, pool: &str, pods: &[(Value, Res)]) -> bool {
    let mut used: BTreeMap<String, Res> = BTreeMap::new();
    for (_, p) in api.list("", "pods", None).filter(|(_, p)| !is_finished(p)) {
        if let Some(n) = p["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            sched::add(
                used.entry(n.to_owned()).or_default(),
                &sched::pod_requests(p),
            );
        }
    }
    let targets: Vec<NodeView> = sched::node_views(api)
        .into_iter()
        .filter(|n| n.labels.get(NODEPOOL_LABEL).map(String::as_str) == Some(pool))
        .collect();
    pods.iter().all(|(spec, req)| {
        let Some(n) = targets.iter().find(|n| {
            let u = used.get(&n.name).cloned().unwrap_or_default();
            sched::check(spec, req, n, &u).is_ok()
        }) else {
            return false;
        };
        sched::add(used.entry(n.name.clone()).or_default(), req);
        true
    })
}

const NODEPOOL_LABEL: &str = "cloud.google.com/gke-nodepool";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(name: &str, class: Option<&str>, count: u32) -> PoolNodes {
        PoolNodes {
            pool: name.into(),
            zones: vec!["us-central1-a".into()],
            max: 10,
            count,
            labels: class
                .map(|c| BTreeMap::from([(CLASS_KEY.to_owned(), c.to_owned())]))
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    fn class(when: &str) -> Class {
        Class::from_json(&json!({
            "metadata": {"name": "cc"},
            "spec": {
                "priorities": [{"nodepools": ["spot"]}, {"nodepools": ["od"]}],
                "activeMigration": {"optimizeRulePriority": true},
                "whenUnsatisfiable": when,
            }
        }))
    }

    #[test]
    fn candidates_follow_the_rules_and_only_pools_tied_to_the_class() {
        let pools: BTreeMap<String, PoolNodes> = [
            pool("spot", Some("cc"), 0),
            pool("od", Some("cc"), 0),
            pool("extra", Some("cc"), 0),
            pool("other", None, 0),
        ]
        .into_iter()
        .map(|p| (p.pool.clone(), p))
        .collect();
        assert_eq!(class("DoNotScaleUp").candidates(&pools), ["spot", "od"]);
        assert_eq!(
            class("ScaleUpAnyway").candidates(&pools),
            ["spot", "od", "extra"]
        );
        let mut untied = pools.clone();
        untied.insert("spot".into(), pool("spot", None, 0));
        assert_eq!(class("DoNotScaleUp").candidates(&untied), ["od"]);
        assert_eq!(class("DoNotScaleUp").rank("od"), Some(1));
    }

    #[test]
    fn migrations_drain_lower_rules_above_their_minimum() {
        let classes = BTreeMap::from([("cc".to_owned(), class("DoNotScaleUp"))]);
        let mut pools: BTreeMap<String, PoolNodes> =
            [pool("spot", Some("cc"), 0), pool("od", Some("cc"), 0)]
                .into_iter()
                .map(|p| (p.pool.clone(), p))
                .collect();
        assert!(
            migrations(&classes, &pools).is_empty(),
            "nothing on on-demand"
        );
        pools.get_mut("od").unwrap().count = 2;
        assert_eq!(
            migrations(&classes, &pools),
            [Migration {
                class: "cc".into(),
                from: "od".into(),
                to: vec!["spot".into()]
            }]
        );
    }
}

#[cfg(test)]
#[path = "autoscale_tests.rs"]
mod autoscale_tests;
