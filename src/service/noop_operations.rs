//! The NOOP test workflow's enqueue (development and test mode only): lets the engine be
//! exercised end to end through the API before real workflows exist.
//!
//! Invariant: the caller chooses a NOOP's `target`, never its serialisation key. A NOOP
//! queues behind (and holds back) a cluster's real operations only when its target names
//! a cluster in a project of the NOOP's own team; any other target gets a key scoped to
//! that team (`teams/{team}/noop/{target}`), which no other team's operation can share.

use crate::domain::{OperationType, Role, TeamId};
use crate::model::Operation;
use crate::ops::kinds::OperationKind;
use crate::ops::queue::{self, Enqueue, EnqueueError, Idempotency};
use crate::ops::workflows::noop;
use crate::store::{self, Db};

use super::access::{self, Caller};
use super::clusters::ClusterPath;

use super::{Error, Result};
/// What the NOOP workflow is asked to do (its steps, timings and faults).
pub use crate::ops::workflows::noop::NoopSpec;

/// Map an enqueue failure to the API error.
pub fn enqueue_error(e: EnqueueError) -> Error {
    match e {
        EnqueueError::KeyReused { operation_id } => Error::precondition(
            "REQUEST_ID_REUSED",
            format!(
                "this requestId / Idempotency-Key was already used for a different request (operations/{operation_id}); use a new key"
            ),
        )
        .with("operation", format!("operations/{operation_id}")),
        EnqueueError::TooMany(over) => Error::precondition(
            "TOO_MANY_OPERATIONS",
            format!(
                "the team already has {} unfinished operations, the most this server allows \
                 (KINETIC_MAX_OPERATIONS_PER_TEAM={}); wait for some to finish or cancel them, then retry",
                over.unfinished, over.cap
            ),
        )
        .with("maxOperations", over.cap)
        .with("unfinishedOperations", over.unfinished),
        EnqueueError::Store(s) => s.into(),
    }
}

/// Enqueue a NOOP operation for `team` (MEMBER or more). Returns the operation and
/// whether this call created it.
pub async fn enqueue_noop(
    db: &Db,
    caller: &Caller,
    team: &str,
    target: Option<String>,
    spec: NoopSpec,
    idempotency: Option<Idempotency>,
) -> Result<(Operation, bool)> {
    let team = TeamId::parse(team.strip_prefix("teams/").unwrap_or(team))?;
    access::require(
        db,
        caller,
        team.as_str(),
        Role::Member,
        "running operations",
    )
    .await?;
    spec.validate()
        .map_err(|m| Error::invalid("INVALID_NOOP_SPEC", m))?;
    let target = target.unwrap_or_else(|| format!("noop/{}", uuid::Uuid::new_v4()));
    let req = Enqueue {
        op_type: OperationType::Noop,
        serial_key: serial_key(db, &team, &target).await?,
        target,
        team_id: team.to_string(),
        cluster_id: None,
        created_by: caller.email.to_string(),
        input: queue::input_of::<noop::Noop>(&spec).map_err(enqueue_error)?,
        plan: None,
        steps: noop::Noop::steps(&spec),
        idempotency,
    };
    let r = queue::enqueue(db, &req).await.map_err(enqueue_error)?;
    Ok((super::operations::render(&r.op)?, r.created))
}

/// The queue key of a NOOP of `team` on `target`: the cluster's own key (its name, as
/// `up` and `down` use) when `target` names a cluster in one of `team`'s projects,
/// otherwise a key of the team's own.
async fn serial_key(db: &Db, team: &TeamId, target: &str) -> Result<String> {
    let cluster = match target.split('/').collect::<Vec<_>>()[..] {
        ["projects", p, "zones", z, "clusters", c] => ClusterPath::parse(p, z, c).ok(),
        _ => None,
    };
    if let Some(path) = cluster {
        let owner = store::teams::project_team(db, path.project.as_str()).await?;
        if owner.as_deref() == Some(team.as_str()) {
            return Ok(path.name());
        }
    }
    Ok(format!("teams/{team}/noop/{target}"))
}
