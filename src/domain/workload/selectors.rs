//! Node selection as kube-scheduler does it: `nodeSelector` and required node affinity
//! against a node's labels, tolerations against its taints.
//!
//! Invariant: the rules are Kubernetes' own (a selector term matches when all its
//! requirements do, any term may match; a taint is tolerated by a toleration with the
//! same key, or an empty key with `Exists`, whose effect is empty or equal), so a pool
//! judged here is judged as the scheduler would judge one of its nodes.

use std::collections::BTreeMap;

use super::{PodFacts, PoolFacts, Requirement, Taint, Toleration};

/// Which selector keys a match considers.
#[derive(Debug, Clone, Copy)]
pub enum Keys<'a> {
    All,
    Only(&'a [&'a str]),
    Except(&'a [&'a str]),
}

impl Keys<'_> {
    fn considers(&self, key: &str) -> bool {
        match self {
            Keys::All => true,
            Keys::Only(ks) => ks.contains(&key),
            Keys::Except(ks) => !ks.contains(&key),
        }
    }
}

/// Whether one requirement holds on `labels`.
pub fn holds(r: &Requirement, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(&r.key);
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| r.values.contains(v)),
        "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| number(v)),
                r.values.first().and_then(|b| number(b)),
            ) else {
                return false;
            };
            if r.operator == "Gt" {
                v > bound
            } else {
                v < bound
            }
        }
        _ => false,
    }
}

/// Whether the pod's `nodeSelector` and required node affinity match `labels`, looking
/// only at the requirements on `keys`.
pub fn selects(pod: &PodFacts, labels: &BTreeMap<String, String>, keys: Keys<'_>) -> bool {
    let selector_ok = pod
        .node_selector
        .iter()
        .filter(|(k, _)| keys.considers(k))
        .all(|(k, v)| labels.get(k) == Some(v));
    let term_ok = |t: &Vec<Requirement>| {
        t.iter()
            .filter(|r| keys.considers(&r.key))
            .all(|r| holds(r, labels))
    };
    selector_ok && (pod.affinity.is_empty() || pod.affinity.iter().any(term_ok))
}

/// Whether the pod constrains any of `keys` at all.
pub fn mentions(pod: &PodFacts, keys: &[&str]) -> bool {
    pod.node_selector.keys().any(|k| keys.contains(&k.as_str()))
        || pod
            .affinity
            .iter()
            .flatten()
            .any(|r| keys.contains(&r.key.as_str()))
}

/// The values the pod requires for `key` (from `nodeSelector` or `In` requirements).
pub fn wanted(pod: &PodFacts, key: &str) -> Vec<String> {
    let mut out: Vec<String> = pod.node_selector.get(key).cloned().into_iter().collect();
    for r in pod.affinity.iter().flatten() {
        if r.key == key && r.operator == "In" {
            out.extend(r.values.iter().cloned());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether `t` tolerates `taint`.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect_ok = t
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    let exists = t.operator.as_deref() == Some("Exists");
    let key_ok = match t.key.as_deref() {
        None | Some("") => exists,
        Some(k) => k == taint.key,
    };
    let value_ok = exists || t.value.as_deref().unwrap_or("") == taint.value;
    effect_ok && key_ok && value_ok
}

/// The taints (NoSchedule or NoExecute) that none of `tolerations` tolerates.
pub fn untolerated<'a>(tolerations: &[Toleration], taints: &'a [Taint]) -> Vec<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .filter(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
        .collect()
}

/// The node labels that name a node's zone.
pub const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// The pool's zones the pod's selector and affinity allow.
pub fn zones_allowed<'a>(
    pod: &'a PodFacts,
    pool: &'a PoolFacts,
) -> impl Iterator<Item = &'a String> + 'a {
    pool.zones.iter().filter(move |z| {
        let mut labels = pool.labels.clone();
        for k in ZONE_LABELS {
            labels.insert(k.to_owned(), (*z).clone());
        }
        selects(pod, &labels, Keys::All)
    })
}
