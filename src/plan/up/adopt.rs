//! The `up` plan of a cluster that exists in GKE with kinetic's mark but has no record
//! (made by the `kinetic` CLI, or by a kineticd that lost its database): Kinetic's
//! second `up`, whose cluster and pools are KEPT and recorded, and whose other
//! resources are checked live (KEEP when they exist, CREATE when missing) like any
//! reconcile.
//!
//! Invariant: adoption plans nothing new for the cluster or its pools: the pool actions
//! are exactly the imported pools, each KEPT with the record it is imported as.

use crate::domain::pool_record::PoolSpecRecord;
use crate::domain::pricing::PriceTable;

use super::super::pools::{pool_details, total_cost};
use super::super::{ActionKind, Plan, Resource, StepId};
use super::KEPT_REASON;

/// Why the cluster is kept.
pub const CLUSTER_ADOPTED: &str = "exists in GKE with kinetic's mark but kineticd has no record of it: adopted as it is (recorded now, not recreated)";

/// Why a resource of an adopted cluster is KEPT.
pub const ADOPTED_REASON: &str = "exists in the cloud (read for this plan; kineticd had no record); re-checked and repaired if missing";

/// Turn a reconcile plan of `pools` into the plan that adopts them: the cluster and
/// each pool say they are adopted, each pool shows the record it is imported as, and
/// the cost is theirs.
pub fn adopted(plan: &mut Plan, pools: &[PoolSpecRecord], prices: &PriceTable) {
    for a in &mut plan.actions {
        // What the plan keeps was read in the cloud, not in records kineticd lacks.
        a.reason = a.reason.replace(KEPT_REASON, ADOPTED_REASON);
        if a.id == StepId::Cluster && a.action == ActionKind::Keep {
            a.reason = CLUSTER_ADOPTED.to_owned();
            continue;
        }
        let Some(p) = pools.iter().find(|p| a.id == StepId::pool(&p.pool_id)) else {
            continue;
        };
        a.reason = format!("exists in GKE: imported as a record ({})", summary(p));
        a.resource = Resource::NodePool(Some(Box::new(pool_details(p))));
    }
    plan.estimated_hourly_cost = total_cost(pools.iter(), prices);
}

/// `gpu-l4, 2..12 nodes, spot`: what an imported record says in a line.
pub fn summary(p: &PoolSpecRecord) -> String {
    let mut s = format!(
        "{}, {}..{} nodes, {}",
        p.accelerator,
        p.min_nodes,
        p.max_nodes,
        p.mode().as_str()
    );
    if let Some(r) = &p.reservation {
        s.push_str(&format!(", reservation {r}"));
    }
    if let Some(f) = &p.failover {
        s.push_str(&format!(
            ", {} side of a failover pair with {}",
            f.role.as_str(),
            f.paired_pool
        ));
    }
    s
}
