//! The plan of a pool resize (UPDATE_NODE_POOL): one `pool:{id}` action per pool whose
//! autoscaling bounds are set, showing the bounds before (`resizedFrom`) and after
//! (`minNodes`, `maxNodes`) and the pool's estimated hourly cost at the new bounds.
//!
//! Invariant: the named pool comes first and each later action depends on the one
//! before it, so the pools are changed one after the other (GKE runs one operation per
//! cluster at a time); an action whose bounds do not change is KEEP, and its step still
//! sets GKE's autoscaling to the recorded bounds (a repeat repairs drift, changes nothing
//! else).

use crate::domain::pool_record::{CostRecord, PoolSpecRecord};
use crate::domain::resize::Bounds;
use crate::domain::resource_names::ClusterNames;

use super::details::NodeBounds;
use super::pools::{pool_details, pool_name};
use super::{Action, ActionKind, Cost, Plan, Resource, StepId};

/// One pool to resize: its record as it is, its new bounds, and why.
pub struct PoolResize<'a> {
    pub pool: &'a PoolSpecRecord,
    pub to: Bounds,
    /// The pool's estimate at `to` (none when the accelerator has no price).
    pub cost: Option<CostRecord>,
    pub reason: String,
}

/// The pool's record with its new bounds and estimate.
pub fn resized(r: &PoolResize<'_>) -> PoolSpecRecord {
    PoolSpecRecord {
        min_nodes: i64::from(r.to.min),
        max_nodes: i64::from(r.to.max),
        estimated_hourly_cost: r.cost.clone(),
        ..r.pool.clone()
    }
}

fn bounds_of(p: &PoolSpecRecord) -> NodeBounds {
    NodeBounds {
        max_nodes: p.max_nodes,
        min_nodes: p.min_nodes,
    }
}

/// Set the autoscaling bounds of `pools`, in order; `currency` prices the total.
pub fn plan(n: &ClusterNames, pools: &[PoolResize<'_>], currency: &str) -> Plan {
    let mut actions: Vec<Action> = Vec::new();
    let (mut at_min, mut at_max, mut priced) = (0.0, 0.0, false);
    for r in pools {
        let after = resized(r);
        let kind = if bounds_of(&after) == bounds_of(r.pool) {
            ActionKind::Keep
        } else {
            ActionKind::Update
        };
        let mut details = pool_details(&after);
        details.resized_from = Some(bounds_of(r.pool));
        details.estimated_hourly_cost = r.cost.as_ref().map(Into::into);
        if let Some(c) = &r.cost {
            at_min += c.at_min;
            at_max += c.at_max;
            priced = true;
        }
        let after_previous: Vec<StepId> =
            actions.last().map(|a| a.id.clone()).into_iter().collect();
        actions.push(Action::new(
            StepId::pool(&r.pool.pool_id),
            kind,
            Resource::NodePool(Some(Box::new(details))),
            pool_name(n, &r.pool.pool_id),
            r.reason.clone(),
            &after_previous,
        ));
    }
    Plan {
        actions,
        warnings: Vec::new(),
        estimated_hourly_cost: priced.then(|| Cost {
            currency: currency.to_owned(),
            at_min: crate::domain::pricing::cents(at_min),
            at_max: crate::domain::pricing::cents(at_max),
        }),
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(id: &str, min: i64, max: i64) -> PoolSpecRecord {
        PoolSpecRecord {
            pool_id: id.into(),
            accelerator: "gpu-l4".into(),
            min_nodes: min,
            max_nodes: max,
            ..Default::default()
        }
    }

    fn cost(min: u32, max: u32) -> CostRecord {
        CostRecord {
            currency: "USD".into(),
            per_node: 0.71,
            at_min: 0.71 * f64::from(min),
            at_max: 0.71 * f64::from(max),
        }
    }

    #[test]
    fn a_pair_is_resized_one_pool_after_the_other() {
        let n = crate::plan::test_names("proj-1");
        let (spot, od) = (pool("gpu-l4-1a2b", 0, 10), pool("gpu-l4-3c4d", 0, 10));
        let to = Bounds { min: 2, max: 20 };
        let fb = Bounds { min: 0, max: 20 };
        let p = plan(
            &n,
            &[
                PoolResize {
                    pool: &spot,
                    to,
                    cost: Some(cost(2, 20)),
                    reason: "requested".into(),
                },
                PoolResize {
                    pool: &od,
                    to: fb,
                    cost: Some(cost(0, 20)),
                    reason: "failover".into(),
                },
            ],
            "USD",
        );
        p.validate().unwrap();
        assert_eq!(p.actions.len(), 2);
        assert_eq!(p.actions[1].depends_on, [StepId::pool("gpu-l4-1a2b")]);
        let json = serde_json::to_value(&p).unwrap();
        let a = &json["actions"][0];
        assert_eq!(a["action"], "UPDATE");
        assert_eq!(a["type"], "container.nodePool");
        assert_eq!(
            a["details"]["resizedFrom"],
            serde_json::json!({"maxNodes": 10, "minNodes": 0})
        );
        assert_eq!(
            (
                a["details"]["minNodes"].as_i64(),
                a["details"]["maxNodes"].as_i64()
            ),
            (Some(2), Some(20))
        );
        assert_eq!(a["details"]["estimatedHourlyCost"]["atMin"], 1.42);
        assert_eq!(json["estimatedHourlyCost"]["atMax"], 28.4);
        // Unchanged bounds: KEEP (its step sets GKE's autoscaling again).
        let p = plan(
            &n,
            &[PoolResize {
                pool: &od,
                to: Bounds { min: 0, max: 10 },
                cost: None,
                reason: "same".into(),
            }],
            "USD",
        );
        assert_eq!(p.actions[0].action, ActionKind::Keep);
        assert!(p.estimated_hourly_cost.is_none());
    }
}
