//! The plan of a failover drill: reclaim the spot pool of a failover pair (its VMs
//! through their managed instance groups, or the whole pool, created again from its
//! record), and watch the failover to the on-demand pool until recovery or the deadline.
//!
//! Invariant: the watch depends only on the reclaim, so in DELETE_POOL mode it runs while
//! the pool is being created again and sees the failover from its start; nothing else
//! of the cluster is in the plan, so a drill changes nothing but the spot pool.

use std::time::Duration;

use crate::domain::pool_record::PoolSpecRecord;
use crate::domain::resource_names::ClusterNames;
use crate::model::drill::{DrillMode, duration_json};

use super::details::{DrillDetails, NoDetails};
use super::pools::{pool_details, pool_name};
use super::{Action, ActionKind, DrillStep, Plan, Resource};

/// What a drill is about.
pub struct DrillInput<'a> {
    pub names: &'a ClusterNames,
    pub mode: DrillMode,
    /// The spot pool's record (its shape, for DELETE_POOL's re-creation).
    pub spot: &'a PoolSpecRecord,
    pub fallback_pool: &'a str,
    pub deadline: Duration,
}

fn mode_name(m: DrillMode) -> &'static str {
    match m {
        DrillMode::ReclaimNodes => "RECLAIM_NODES",
        DrillMode::DeletePool => "DELETE_POOL",
    }
}

pub fn plan(i: &DrillInput<'_>) -> Plan<DrillStep> {
    let spot = &i.spot.pool_id;
    let name = pool_name(i.names, spot);
    let reclaim = DrillStep::Reclaim;
    let mut actions = match i.mode {
        DrillMode::ReclaimNodes => vec![Action::new(
            reclaim,
            ActionKind::Delete,
            Resource::Instances(NoDetails),
            format!("{name}/instances"),
            "failover drill: delete the spot pool's VMs through its managed instance groups, as a preemption does",
            &[],
        )],
        DrillMode::DeletePool => vec![
            Action::new(
                reclaim,
                ActionKind::Delete,
                Resource::NodePool(None),
                name.clone(),
                "failover drill: delete the spot pool",
                &[],
            ),
            Action::new(
                DrillStep::Recreate,
                ActionKind::Create,
                Resource::NodePool(Some(Box::new(pool_details(i.spot)))),
                name.clone(),
                "failover drill: create the spot pool again, exactly as recorded",
                &[reclaim],
            ),
        ],
    };
    actions.push(Action::new(
        DrillStep::Watch,
        ActionKind::Keep,
        Resource::Drill(DrillDetails {
            mode: mode_name(i.mode).into(),
            spot_pool: spot.clone(),
            fallback_pool: i.fallback_pool.to_owned(),
            deadline: duration_json(i.deadline),
        }),
        name,
        "watch pods go Pending, the fallback pool scale up, pods run again and spot capacity return",
        &[reclaim],
    ));
    Plan {
        actions,
        ..Plan::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_pool_recreates_while_the_watch_runs() {
        let n = crate::plan::test_names("proj-1");
        let spot = PoolSpecRecord {
            pool_id: "gpu-l4-1a2b".into(),
            ..Default::default()
        };
        let mut input = DrillInput {
            names: &n,
            mode: DrillMode::DeletePool,
            spot: &spot,
            fallback_pool: "gpu-l4-3c4d",
            deadline: Duration::from_secs(900),
        };
        let p = plan(&input);
        p.validate().unwrap();
        let ids: Vec<String> = p.actions.iter().map(|a| a.id.to_string()).collect();
        assert_eq!(ids, ["drill-reclaim", "drill-recreate", "drill-watch"]);
        assert_eq!(p.actions[2].depends_on, [DrillStep::Reclaim]);
        input.mode = DrillMode::ReclaimNodes;
        let p = plan(&input);
        assert_eq!(p.actions.len(), 2);
        assert_eq!(p.actions[0].resource.type_name(), "compute.instance");
        let json = serde_json::to_value(&p.actions[1]).unwrap();
        assert_eq!(json["details"]["deadline"], "900s");
    }
}
