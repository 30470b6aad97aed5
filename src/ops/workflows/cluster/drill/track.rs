//! What a drill knows: the cluster as it was just before the reclaim ([`Before`]) and the
//! phases seen since ([`Tracker`]), turned into the report.
//!
//! Pods are counted per workload, not by name: on GKE the pods of a reclaimed node are
//! deleted and their controller makes new ones (new names), so a pod's workload is its
//! namespace and name without the controller's random suffix; a workload's pods that
//! run again beyond those it already ran elsewhere are its recovered pods.
//!
//! Invariant: a phase is recorded once, at the first observation where its condition
//! holds (PODS_RUNNING and FALLBACK_SCALED_UP only after SPOT_NODES_GONE); the counts
//! never exceed `podsAffected`.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::cloud::kube::{Inventory, NodeInfo};
use crate::model::drill::{
    DrillEvent, DrillMode, DrillPhase, DrillReport, HourlyCost, duration_json,
};

/// The workload a pod belongs to: `namespace/name` without the last `-suffix`.
pub fn workload(namespace: &str, name: &str) -> String {
    let base = name.rsplit_once('-').map_or(name, |(b, _)| b);
    format!("{namespace}/{base}")
}

fn ready_in<'a>(nodes: &'a [NodeInfo], pool: &'a str) -> impl Iterator<Item = &'a NodeInfo> {
    nodes
        .iter()
        .filter(move |n| n.ready && n.pool.as_deref() == Some(pool))
}

/// Running pods per workload, leaving out those on `excluded` nodes.
fn running(inv: &Inventory, excluded: &BTreeSet<String>) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for p in inv.pods.iter().filter(|p| p.phase == "Running") {
        if p.node.as_ref().is_some_and(|n| excluded.contains(n)) {
            continue;
        }
        *out.entry(workload(&p.namespace, &p.name)).or_default() += 1;
    }
    out
}

/// The cluster just before the reclaim (the reclaim step's result).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Before {
    pub mode: DrillMode,
    pub started: DateTime<Utc>,
    /// The spot pool's nodes.
    pub reclaimed_nodes: Vec<String>,
    /// Running pods on those nodes, per workload.
    pub affected: BTreeMap<String, u32>,
    /// Running pods of the same workloads elsewhere.
    pub baseline: BTreeMap<String, u32>,
    pub fallback_ready: u32,
    /// The spot pool's minimum, all zones.
    pub spot_min_nodes: u32,
    /// VMs deleted (RECLAIM_NODES).
    pub instances_deleted: u32,
    /// When the spot pool was known gone (its deletion, or every VM deletion, DONE), before
    /// any observation could show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gone_at: Option<DateTime<Utc>>,
}

impl Before {
    pub fn of(inv: &Inventory, spot: &str, fallback: &str) -> Before {
        let reclaimed: BTreeSet<String> = inv
            .nodes
            .iter()
            .filter(|n| n.pool.as_deref() == Some(spot))
            .map(|n| n.name.clone())
            .collect();
        let mut affected: BTreeMap<String, u32> = BTreeMap::new();
        for p in inv.pods.iter().filter(|p| p.phase == "Running") {
            if p.node.as_ref().is_some_and(|n| reclaimed.contains(n)) {
                *affected.entry(workload(&p.namespace, &p.name)).or_default() += 1;
            }
        }
        let baseline = running(inv, &reclaimed)
            .into_iter()
            .filter(|(w, _)| affected.contains_key(w))
            .collect();
        Before {
            reclaimed_nodes: reclaimed.into_iter().collect(),
            affected,
            baseline,
            fallback_ready: ready_in(&inv.nodes, fallback).count() as u32,
            ..Before::default()
        }
    }

    pub fn pods_affected(&self) -> u32 {
        self.affected.values().sum()
    }
}

/// The phases seen so far and the peak of the fallback pool.
#[derive(Debug, Clone)]
pub struct Tracker {
    pub before: Before,
    pub spot: String,
    pub fallback: String,
    seen: BTreeMap<DrillPhase, DateTime<Utc>>,
    recovered: u32,
    fallback_added: u32,
}

impl Tracker {
    pub fn new(before: Before, spot: &str, fallback: &str) -> Tracker {
        let mut seen = BTreeMap::new();
        seen.insert(DrillPhase::ReclaimStarted, before.started);
        if let Some(t) = before.gone_at {
            seen.insert(DrillPhase::SpotNodesGone, t);
        }
        Tracker {
            before,
            spot: spot.to_owned(),
            fallback: fallback.to_owned(),
            seen,
            recovered: 0,
            fallback_added: 0,
        }
    }

    fn mark(&mut self, phase: DrillPhase, holds: bool, at: DateTime<Utc>) {
        if holds {
            self.seen.entry(phase).or_insert(at);
        }
    }

    fn has(&self, phase: DrillPhase) -> bool {
        self.seen.contains_key(&phase)
    }

    /// Take in one observation of the cluster, made at `at`.
    pub fn observe(&mut self, inv: &Inventory, at: DateTime<Utc>) {
        use DrillPhase as P;
        let gone: BTreeSet<String> = self.before.reclaimed_nodes.iter().cloned().collect();
        let left = inv.nodes.iter().filter(|n| gone.contains(&n.name)).count();
        self.mark(P::SpotNodesGone, left == 0, at);
        let now = running(inv, &BTreeSet::new());
        self.recovered = self
            .before
            .affected
            .iter()
            .map(|(w, n)| {
                let base = self.before.baseline.get(w).copied().unwrap_or(0);
                now.get(w)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(base)
                    .min(*n)
            })
            .sum();
        let after_reclaim = self.has(P::SpotNodesGone);
        let affected = self.before.pods_affected();
        self.mark(
            P::PodsPending,
            after_reclaim && self.recovered == 0 && affected > 0,
            at,
        );
        let fallback = ready_in(&inv.nodes, &self.fallback).count() as u32;
        let added = fallback.saturating_sub(self.before.fallback_ready);
        if after_reclaim {
            self.fallback_added = self.fallback_added.max(added);
        }
        self.mark(P::FallbackScaledUp, after_reclaim && added > 0, at);
        self.mark(
            P::PodsRunning,
            after_reclaim && self.recovered == affected,
            at,
        );
        let spot_ready = ready_in(&inv.nodes, &self.spot).count() as u32;
        let back = spot_ready >= self.before.spot_min_nodes.max(1);
        self.mark(P::SpotCapacityBack, after_reclaim && back, at);
    }

    /// Pods run again and, when the spot pool keeps a minimum, spot capacity is back.
    pub fn finished(&self) -> bool {
        self.has(DrillPhase::PodsRunning)
            && (self.has(DrillPhase::SpotCapacityBack) || self.before.spot_min_nodes == 0)
    }

    pub fn report(&self, per_node: Option<HourlyCost>) -> DrillReport {
        let mut timeline: Vec<(DateTime<Utc>, DrillPhase)> =
            self.seen.iter().map(|(p, t)| (*t, *p)).collect();
        timeline.sort();
        let affected = self.before.pods_affected();
        let ttr = self
            .seen
            .get(&DrillPhase::PodsRunning)
            .map(|t| duration_json((*t - self.before.started).to_std().unwrap_or_default()));
        DrillReport {
            mode: self.before.mode,
            spot_pool: self.spot.clone(),
            fallback_pool: self.fallback.clone(),
            timeline: timeline
                .into_iter()
                .map(|(t, phase)| DrillEvent {
                    phase,
                    time: crate::model::timestamp(t),
                })
                .collect(),
            time_to_recovery: ttr,
            pods_affected: affected,
            pods_recovered: self.recovered,
            pods_never_recovered: affected - self.recovered,
            fallback_nodes_added: self.fallback_added,
            hourly_cost_on_fallback: per_node.map(|c| HourlyCost {
                currency: c.currency,
                amount: c.amount * f64::from(self.fallback_added),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::kube::PodInfo;

    fn node(name: &str, pool: &str) -> NodeInfo {
        NodeInfo {
            uid: String::new(),
            name: name.into(),
            pool: Some(pool.into()),
            zone: None,
            instance_type: None,
            spot: false,
            ready: true,
            unschedulable: false,
            labels: Default::default(),
            taints: vec![],
            gpus: 1,
            tpus: 0,
            cpu_millis: 0,
            memory_bytes: 0,
        }
    }

    fn pod(name: &str, phase: &str, node: Option<&str>) -> PodInfo {
        PodInfo {
            namespace: "default".into(),
            name: name.into(),
            phase: phase.into(),
            node: node.map(str::to_owned),
            requests: Default::default(),
            tolerations: vec![],
            node_selector: Default::default(),
            unschedulable: None,
        }
    }

    #[test]
    fn a_failover_by_workload_even_when_pods_get_new_names() {
        let t0 = Utc::now();
        let before = Inventory {
            nodes: vec![node("s1", "spot"), node("s2", "spot")],
            pods: vec![
                pod("web-abcde", "Running", Some("s1")),
                pod("web-fghij", "Running", Some("s2")),
            ],
        };
        let mut b = Before::of(&before, "spot", "od");
        b.started = t0;
        b.spot_min_nodes = 2;
        assert_eq!(b.pods_affected(), 2);
        let mut t = Tracker::new(b, "spot", "od");
        let pending = Inventory {
            nodes: vec![],
            pods: vec![
                pod("web-klmno", "Pending", None),
                pod("web-pqrst", "Pending", None),
            ],
        };
        let s = chrono::Duration::seconds;
        t.observe(&pending, t0 + s(1));
        let running = Inventory {
            nodes: vec![node("o1", "od"), node("o2", "od")],
            pods: vec![
                pod("web-klmno", "Running", Some("o1")),
                pod("web-pqrst", "Running", Some("o2")),
            ],
        };
        t.observe(&running, t0 + s(75));
        assert!(!t.finished(), "spot is not back yet");
        let mut back = running.clone();
        back.nodes.extend([node("s1", "spot"), node("s2", "spot")]);
        t.observe(&back, t0 + s(700));
        assert!(t.finished());
        let r = t.report(Some(HourlyCost {
            currency: "USD".into(),
            amount: 0.5,
        }));
        let phases: Vec<DrillPhase> = r.timeline.iter().map(|e| e.phase).collect();
        use DrillPhase as P;
        assert_eq!(
            phases,
            [
                P::ReclaimStarted,
                P::SpotNodesGone,
                P::PodsPending,
                P::FallbackScaledUp,
                P::PodsRunning,
                P::SpotCapacityBack
            ]
        );
        assert_eq!(r.time_to_recovery.as_deref(), Some("75s"));
        assert_eq!(
            (
                r.pods_recovered,
                r.pods_never_recovered,
                r.fallback_nodes_added
            ),
            (2, 0, 2)
        );
        assert_eq!(r.hourly_cost_on_fallback.unwrap().amount, 1.0);
    }
}
