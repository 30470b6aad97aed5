//! What a team holds and what a request asks for, as the policy counts them: every
//! pool at its maximum size, in GPUs or TPU chips per type, pools, clusters and cost.
//!
//! Invariant: a pool counts `chips per node x maxNodes x zones` accelerators and
//! `price per node x maxNodes x zones` USD an hour, the same for a stored pool and for a
//! requested one, so a request's usage after it is exactly what the team holds once it
//! is carried out.

use std::collections::BTreeMap;

use serde::Serialize;

use super::HOURS_PER_MONTH;
use crate::domain::accelerators::{self, Choice, Resolved};
use crate::domain::pool_record::PoolSpecRecord;
use crate::domain::provisioning::Provisioning;

/// One pool as the policy counts it: its type, where and how it gets nodes, and what
/// it holds and costs at its maximum.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolUse {
    pub type_name: String,
    pub zones: Vec<String>,
    pub provisioning: Provisioning,
    /// GPUs or TPU chips per node.
    pub chips_per_node: u64,
    /// Zones the pool's per-zone bounds apply in (at least 1).
    pub zone_count: u64,
    pub min_nodes: u64,
    /// Per zone, as GKE's autoscaling limits take it.
    pub max_nodes: u64,
    /// Nodes come in units of this many (a multi-host TPU slice); 1 otherwise.
    pub node_step: u64,
    /// USD an hour per node (0 when the price is unknown).
    pub hourly_per_node: f64,
    /// The maximum came from the request, not Kinetic's default: never lowered.
    pub max_asked: bool,
}

impl PoolUse {
    /// A pool of `acc` with these bounds (per zone, in `zones`: the cluster's zone when
    /// empty), nodes obtained by `provisioning` at `hourly_per_node` USD an hour.
    pub fn new(acc: &Resolved, bounds: Bounds, zones: &[String], cluster_zone: &str) -> PoolUse {
        let zones = if zones.is_empty() {
            vec![cluster_zone.to_owned()]
        } else {
            zones.to_vec()
        };
        PoolUse {
            type_name: acc.pool_prefix(),
            zone_count: zones.len() as u64,
            zones,
            provisioning: bounds.provisioning,
            chips_per_node: u64::from(acc.per_node()),
            min_nodes: bounds.min_nodes,
            max_nodes: bounds.max_nodes,
            node_step: if acc.is_multi_host() {
                u64::from(acc.hosts_per_slice.unwrap_or(1))
            } else {
                1
            },
            hourly_per_node: bounds.hourly_per_node,
            max_asked: bounds.max_asked,
        }
    }

    /// A stored pool as the policy counts it (`None` when its accelerator is no longer
    /// in the catalogue: it then counts toward the pool count only).
    pub fn of_record(r: &PoolSpecRecord, cluster_zone: &str) -> Option<PoolUse> {
        let Ok(Choice::Accelerator(acc)) = accelerators::parse(&r.accelerator) else {
            return None;
        };
        let bounds = Bounds {
            min_nodes: r.min_nodes.max(0) as u64,
            max_nodes: r.max_nodes.max(0) as u64,
            provisioning: r.mode(),
            hourly_per_node: r.estimated_hourly_cost.as_ref().map_or(0.0, |c| c.per_node),
            max_asked: true,
        };
        Some(PoolUse::new(&acc, bounds, &r.zones, cluster_zone))
    }

    pub fn chips_at_max(&self) -> u64 {
        self.chips_per_node * self.max_nodes * self.zone_count
    }

    pub fn hourly_at_max(&self) -> f64 {
        self.hourly_per_node * (self.max_nodes * self.zone_count) as f64
    }
}

/// A pool's bounds and price, as [`PoolUse::new`] takes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub min_nodes: u64,
    pub max_nodes: u64,
    pub provisioning: Provisioning,
    pub hourly_per_node: f64,
    /// The maximum came from the request (never lowered by [`fit`]).
    pub max_asked: bool,
}

/// What a team holds now, at its pools' maximum sizes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    #[schema(value_type = u32)]
    pub clusters: u64,
    #[schema(value_type = u32)]
    pub node_pools: u64,
    /// GPUs or TPU chips per type name at the pools' maximum sizes.
    #[schema(value_type = BTreeMap<String, u32>)]
    pub accelerators: BTreeMap<String, u64>,
    /// Estimated USD an hour with every pool at its maximum.
    pub hourly_cost_usd: f64,
    /// This month's spend as forecast: what the team's nodes measurably cost so far this
    /// month (`monthToDateUsd`) plus every pool at its maximum for the rest of it.
    pub month_spend_usd: f64,
    /// What the team's nodes cost so far this month, measured by the usage collector.
    pub month_to_date_usd: f64,
    /// Hours left in the month (the forecast's horizon).
    #[serde(skip)]
    pub month_hours_left: f64,
}

impl Usage {
    /// The usage of `clusters` live clusters holding `pools`.
    pub fn of(clusters: u64, pools: &[PoolUse]) -> Usage {
        let mut u = Usage {
            clusters,
            month_hours_left: HOURS_PER_MONTH,
            ..Usage::default()
        };
        for p in pools {
            u.add(p);
        }
        u
    }

    fn add(&mut self, p: &PoolUse) {
        self.node_pools += 1;
        *self.accelerators.entry(p.type_name.clone()).or_default() += p.chips_at_max();
        self.hourly_cost_usd += p.hourly_at_max();
        self.month_spend_usd += p.hourly_at_max() * self.month_hours_left;
    }

    /// The forecast from measured spend: `spent` so far this month and `hours_left` of
    /// it at the pools' maximum hourly cost.
    pub fn with_month(mut self, spent: f64, hours_left: f64) -> Usage {
        let hours_left = hours_left.max(0.0);
        self.month_to_date_usd = spent.max(0.0);
        self.month_hours_left = hours_left;
        self.month_spend_usd = self.month_to_date_usd + self.hourly_cost_usd * hours_left;
        self
    }

    fn remove(&mut self, p: &PoolUse) {
        self.node_pools = self.node_pools.saturating_sub(1);
        if let Some(n) = self.accelerators.get_mut(&p.type_name) {
            *n = n.saturating_sub(p.chips_at_max());
        }
        self.hourly_cost_usd = (self.hourly_cost_usd - p.hourly_at_max()).max(0.0);
        self.month_spend_usd =
            (self.month_spend_usd - p.hourly_at_max() * self.month_hours_left).max(0.0);
    }
}

/// A request as the policy sees it: a new cluster (in `zone`) or not, the pools it adds
/// or reshapes, and the pools it replaces (a resize's old bounds).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ask {
    pub new_cluster: Option<String>,
    pub pools: Vec<PoolUse>,
    pub replaces: Vec<PoolUse>,
}

impl Ask {
    pub(super) fn after(&self, now: &Usage) -> Usage {
        let mut u = now.clone();
        if self.new_cluster.is_some() {
            u.clusters += 1;
        }
        for p in &self.replaces {
            u.remove(p);
        }
        for p in &self.pools {
            u.add(p);
        }
        u
    }

    /// Whether the request raises anything the policy caps.
    pub(super) fn grows(&self, now: &Usage, after: &Usage) -> bool {
        after.clusters > now.clusters
            || after.node_pools > now.node_pools
            || after.hourly_cost_usd > now.hourly_cost_usd + 1e-9
            || after
                .accelerators
                .iter()
                .any(|(t, n)| *n > now.accelerators.get(t).copied().unwrap_or(0))
    }
}
