//! Pools of flex-start with queued provisioning (`provisioning: QUEUED`) in the workload
//! check: the cluster autoscaler never grows such a pool for ordinary pending pods; only
//! a ProvisioningRequest obtains its nodes (all at once). The verdict keeps API.md's
//! values (a pod that tolerates the pool's `cloud.google.com/gke-queued` taint still
//! fits AFTER_SCALE_UP), but the pool's reason and a PROVISIONING_REQUEST_NEEDED problem
//! say that the scale-up needs a ProvisioningRequest and where its template is.
//!
//! Invariant: the problem is reported only for a group whose pods can be placed and
//! need the growth of at least one queued pool to be (never for a group that fits on
//! nodes there now or on other pools' nodes), once per queued pool.

use super::PoolFacts;
use super::capacity::Room;
use super::reasons::{Problem, Reason};
use crate::domain::provisioning::QUEUED_KEY;

impl PoolFacts {
    /// A queued-provisioning pool: its nodes carry GKE's `cloud.google.com/gke-queued`
    /// label (the record's mode adds it).
    pub fn is_queued(&self) -> bool {
        self.labels.get(QUEUED_KEY).is_some_and(|v| v == "true")
    }
}

/// Where the template of a queued pool's ProvisioningRequest is.
fn template(pool: &str) -> String {
    format!(
        "the response of the ADD_NODE_POOL operation that created {pool} holds the template (provisioningRequest, podTemplate, podAnnotations; GET /v1/operations?filter=type=ADD_NODE_POOL)"
    )
}

/// The pool's reason when its room for `r.later` pods comes only from growth.
pub fn row_reason(pool: &PoolFacts, r: &Room) -> String {
    format!(
        "room for {} pod(s) once a ProvisioningRequest obtains {} node(s): this QUEUED pool is never grown by the autoscaler for pending pods; {}",
        r.later,
        r.added_nodes,
        template(&pool.pool_id)
    )
}

/// The problem of a group that needs `later` more pods placed than fit now, when the
/// queued pools among `rooms` supply some of them.
pub fn problems(rooms: &[(&PoolFacts, &Room)], need: u64, now: u64) -> Vec<Problem> {
    if now >= need {
        return Vec::new();
    }
    rooms
        .iter()
        .filter(|(p, r)| p.is_queued() && r.later > 0)
        .map(|(p, r)| Problem {
            reason: Reason::ProvisioningRequestNeeded,
            message: format!(
                "{need} pod(s) need {} node(s) of QUEUED pool {}, and only a ProvisioningRequest obtains nodes of a queued pool (flex-start with queued provisioning): pending pods alone never scale it up",
                r.added_nodes, p.pool_id
            ),
            fix: format!(
                "create the ProvisioningRequest and its PodTemplate in the pods' namespace and give the pods its podAnnotations: {}",
                template(&p.pool_id)
            ),
        })
        .collect()
}
