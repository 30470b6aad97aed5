//! Provisioning requests: `up` and `down` of a cluster, `pool add` and `pool remove`.
//! Each validates everything before any write (bad input never reaches the cloud),
//! builds the plan, and either returns it (`validateOnly`) or commits the record
//! changes and the operation in one transaction.
//!
//! Invariant: the plan returned by `validateOnly` and the steps enqueued come from the
//! same function on the same inputs; generated names (the pool's 4 hex) are fixed here,
//! before any step runs — derived from the request id when there is one, so a preview
//! and an apply with the same request id name the same pools ([`pools::new_pool_ids`]).
//! The zone and the accelerator's availability there are checked against Compute
//! ([`placement`]) before a preview is returned or anything is written.

pub mod down;
pub mod placement;
pub mod pools;
pub mod up;

use serde_json::Value;
use uuid::Uuid;

use crate::domain::accelerators::{self, Choice};
use crate::domain::naming::ClusterNames;
use crate::domain::{ClusterState, Role};
use crate::model::Operation;
use crate::ops::queue::{self, Enqueue, Idempotency};
use crate::ops::workflows::cluster::ClusterOpInput;
use crate::plan::Plan;
use crate::store::Db;
use crate::store::clusters::ClusterRecord;

use super::clusters::{ClusterPath, project_team};
use super::testing::enqueue_error;
use super::{Caller, Error, Result};

/// What a mutation produced: a preview, or an accepted operation.
pub enum Submitted {
    Plan(Plan),
    Operation(Box<Operation>),
}

pub fn names(path: &ClusterPath) -> ClusterNames {
    ClusterNames::new(&path.project, &path.zone, &path.cluster)
}

/// Parse an accelerator spelling for a request (400 with suggestions when unknown).
pub fn parse_accelerator(spec: &str) -> Result<Choice> {
    accelerators::parse(spec).map_err(|e| {
        Error::invalid("UNKNOWN_ACCELERATOR", e.to_string())
            .with("accelerator", &e.input)
            .with("suggestions", e.suggestions.join(","))
    })
}

pub fn pool_error(e: crate::domain::pools::PoolError) -> Error {
    Error::invalid(e.reason(), e.to_string())
}

/// How every provisioning request begins.
pub enum Begin {
    /// A repeat of an earlier request with the same key: its operation, nothing else done.
    Repeat(Box<Operation>),
    /// A new request: the team owning the project, and the cluster's live record if any.
    Go {
        team: String,
        cluster: Option<Box<ClusterRecord>>,
    },
}

/// The caller must be a MEMBER of the project's team (`action` names what for); a repeat
/// of an earlier request (not a preview) answers with its operation.
pub async fn begin(
    db: &Db,
    caller: &Caller,
    path: &ClusterPath,
    action: &str,
    validate_only: bool,
    idem: Option<&Idempotency>,
) -> Result<Begin> {
    let team = project_team(db, caller, &path.project, Role::Member, action).await?;
    if !validate_only
        && let Some(op) = queue::replay(db, caller.email.as_str(), idem)
            .await
            .map_err(enqueue_error)?
    {
        return Ok(Begin::Repeat(Box::new(super::operations::render(&op)?)));
    }
    let cluster = crate::store::clusters::get(
        db,
        path.project.as_str(),
        path.zone.as_str(),
        path.cluster.as_str(),
    )
    .await?
    .filter(|c| c.state != ClusterState::Deleted)
    .map(Box::new);
    Ok(Begin::Go { team, cluster })
}

/// The live record of a cluster (404 when there is none, or it is DELETED).
pub fn live(c: Option<Box<ClusterRecord>>, path: &ClusterPath) -> Result<ClusterRecord> {
    c.map(|c| *c).ok_or_else(|| {
        Error::not_found(
            "CLUSTER_NOT_FOUND",
            format!("cluster {} not found", path.name()),
        )
        .with("cluster", path.name())
    })
}

/// Refuse changes to a cluster that is being deleted.
pub fn not_deleting(c: &ClusterRecord, path: &ClusterPath) -> Result<()> {
    if c.state == ClusterState::Deleting {
        return Err(Error::precondition(
            "CLUSTER_DELETING",
            format!(
                "cluster {} is being deleted; wait for its DOWN_CLUSTER operation to finish (GET /v1/operations?filter=target=\"{}\")",
                path.name(),
                path.name()
            ),
        ));
    }
    Ok(())
}

/// Lock the live record inside the enqueue transaction (it may have changed since the
/// request was read).
pub async fn lock(tx: &mut sqlx::PgConnection, path: &ClusterPath) -> Result<ClusterRecord> {
    crate::store::clusters::lock_live(
        tx,
        path.project.as_str(),
        path.zone.as_str(),
        path.cluster.as_str(),
    )
    .await?
    .ok_or_else(|| {
        Error::aborted(
            "CLUSTER_CHANGED",
            "the cluster changed while the request was prepared; send it again",
        )
    })
}

/// Everything an operation of this module needs besides its plan.
pub struct OpRequest<'a> {
    pub op_type: &'static str,
    pub path: &'a ClusterPath,
    pub target: String,
    pub team: &'a str,
    pub caller: &'a Caller,
    pub cluster_id: Uuid,
    pub pools: Vec<String>,
    pub new_cluster: bool,
    pub request: Value,
    pub idempotency: Option<Idempotency>,
}

/// The operation for `plan`, ready for [`queue::enqueue_in`].
pub fn operation(r: OpRequest<'_>, plan: &Plan) -> Enqueue {
    let input = ClusterOpInput {
        project: r.path.project.to_string(),
        zone: r.path.zone.to_string(),
        cluster: r.path.cluster.to_string(),
        cluster_id: r.cluster_id,
        pools: r.pools,
        new_cluster: r.new_cluster,
        request: r.request,
    };
    Enqueue {
        op_type: r.op_type.to_owned(),
        target: r.target,
        serial_key: r.path.name(),
        team_id: r.team.to_owned(),
        cluster_id: Some(r.cluster_id),
        created_by: r.caller.email.to_string(),
        input: serde_json::to_value(&input).unwrap_or(Value::Null),
        plan: serde_json::to_value(plan).ok(),
        steps: plan.steps(),
        idempotency: r.idempotency,
    }
}

/// Commit `tx` with the enqueued operation (or roll back for a repeat).
pub async fn enqueue(
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    req: &Enqueue,
) -> Result<Operation> {
    let r = queue::enqueue_in(&mut tx, req)
        .await
        .map_err(enqueue_error)?;
    if r.created {
        tx.commit()
            .await
            .map_err(|e| Error::from(crate::store::StoreError::from(e)))?;
    } else {
        tx.rollback()
            .await
            .map_err(|e| Error::from(crate::store::StoreError::from(e)))?;
    }
    super::operations::render(&r.op)
}
