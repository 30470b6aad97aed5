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
//! ([`placement`]) before a preview is returned or anything is written. Every request
//! arrives as one [`Mutation`]; its `If-Match` etag is checked when the cluster is read
//! and again under the cluster's row lock in the enqueue transaction ([`lock`]), so a
//! change committed in between is refused, never overwritten.

mod adopt;
pub mod approval;
pub mod down;
pub mod drill;
pub mod flex;
pub mod guard;
pub mod placement;
pub mod pool_request;
pub mod pools;
pub mod reservations;
pub mod resize;
pub mod sharing;
pub mod ttl;
pub mod up;
mod up_parts;
pub mod version;

use uuid::Uuid;

use crate::domain::accelerators::{self, Choice};
use crate::domain::resource_names::ClusterNames;
use crate::domain::{ClusterState, Role};
use crate::model::{self, Operation};
use crate::ops::kinds::OperationKind;
use crate::ops::queue::{self, Enqueue};
use crate::ops::workflows::cluster::ClusterOpInput;
use crate::store::clusters::{ClusterRecord, Pick};
use crate::store::{Db, StoreError};

use super::clusters::{ClusterPath, project_team};
use super::noop_operations::enqueue_error;
use super::{Caller, Error, Result, etag};

/// A mutation's request id (AIP-155) bound to its request's fingerprint, as the queue
/// keeps it.
pub use crate::ops::queue::{Idempotency, fingerprint};
/// What a preview returns and an operation carries out.
pub use crate::plan::Plan;

/// One mutation request (up, down, pool add, pool remove): who asks, for which cluster,
/// preview or apply, its request id, and the cluster etag it was made against.
pub struct Mutation {
    pub caller: Caller,
    pub path: ClusterPath,
    /// Return the plan; change nothing.
    pub validate_only: bool,
    pub idempotency: Option<Idempotency>,
    /// `If-Match` on the cluster (up, down, pool add): the cluster must exist and still
    /// carry this etag, both when the request is read and under the cluster's row lock
    /// when its operation is enqueued.
    pub if_match: Option<String>,
    /// `If-Match` on the node pool a request names (remove, resize, drill): the pool's
    /// record must still carry this etag when it is read ([`check_pool_etag`]).
    pub pool_if_match: Option<String>,
    /// Set when an approval replays the request ([`approval::approve`]): the policy's
    /// NEEDS_APPROVAL is accepted and the pending operation is queued, not a new one.
    pub approving: Option<approval::Approving>,
}

impl Mutation {
    /// The cluster's derived names (GKE cluster, network, buckets, ...).
    pub fn names(&self) -> ClusterNames {
        names(&self.path)
    }

    /// What the request's derived pool ids hang on: its caller, request id and cluster
    /// (none without a request id).
    pub fn id_seed(&self) -> Option<String> {
        self.idempotency.as_ref().map(|i| {
            format!(
                "{}\n{}\n{}",
                self.caller.email.as_str(),
                i.key,
                self.path.name()
            )
        })
    }
}

/// What a mutation produced: a preview, or an accepted operation.
pub enum Submitted<P = Plan> {
    Plan(P),
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
/// of an earlier request (not a preview) answers with its operation. With `If-Match`, the
/// cluster must exist and carry that etag now (checked again under the lock: [`lock`]).
pub async fn begin(db: &Db, m: &Mutation, action: &str) -> Result<Begin> {
    let team = project_team(db, &m.caller, &m.path.project, Role::Member, action).await?;
    if !m.validate_only
        && m.approving.is_none()
        && let Some(op) = queue::replay(db, m.caller.email.as_str(), m.idempotency.as_ref())
            .await
            .map_err(enqueue_error)?
    {
        return Ok(Begin::Repeat(Box::new(super::operations::render(&op)?)));
    }
    let cluster = read(db, &m.path).await?;
    if m.if_match.is_some() {
        let c = cluster.as_deref().ok_or_else(|| not_found(&m.path))?;
        check_etag(c, m)?;
    }
    Ok(Begin::Go { team, cluster })
}

/// The cluster's live record as it is now (not locked), if any.
async fn read(db: &Db, path: &ClusterPath) -> Result<Option<Box<ClusterRecord>>> {
    Ok(
        crate::store::clusters::by_name(db, Pick::LiveOrLastDeleted, path.key())
            .await?
            .filter(|c| c.state != ClusterState::Deleted)
            .map(Box::new),
    )
}

/// AIP-154: 409 ABORTED ETAG_MISMATCH unless the record carries the request's etag.
fn check_etag(c: &ClusterRecord, m: &Mutation) -> Result<()> {
    let current = model::etag(c.version, c.update_time);
    etag::check(m.if_match.as_deref(), &current, &m.path.name())
}

/// AIP-154 for the pool a request names: 409 ABORTED ETAG_MISMATCH unless its record
/// carries the request's `If-Match`.
pub fn check_pool_etag(m: &Mutation, p: &crate::store::node_pools::NodePoolRecord) -> Result<()> {
    let name = format!("{}/nodePools/{}", m.path.name(), p.pool_id);
    etag::check(
        m.pool_if_match.as_deref(),
        &super::clusters::pool_etag(p),
        &name,
    )
}

/// The live record of a cluster (404 when there is none, or it is DELETED).
pub fn live(c: Option<Box<ClusterRecord>>, path: &ClusterPath) -> Result<ClusterRecord> {
    c.map(|c| *c).ok_or_else(|| not_found(path))
}

fn not_found(path: &ClusterPath) -> Error {
    Error::not_found(
        "CLUSTER_NOT_FOUND",
        format!("cluster {} not found", path.name()),
    )
    .with("cluster", path.name())
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

/// The enqueue transaction, begun.
pub async fn transaction(db: &Db) -> Result<sqlx::Transaction<'static, sqlx::Postgres>> {
    Ok(db.begin().await.map_err(StoreError::from)?)
}

/// Lock the live record inside the enqueue transaction (it may have changed since the
/// request was read) and check the request's etag against it: a change committed
/// between the first check ([`begin`]) and this lock is refused, never overwritten.
pub async fn lock(tx: &mut sqlx::PgConnection, m: &Mutation) -> Result<ClusterRecord> {
    let c = crate::store::clusters::by_name(tx, Pick::LockLive, m.path.key())
        .await?
        .ok_or_else(|| {
            Error::aborted(
                "CLUSTER_CHANGED",
                "the cluster changed while the request was prepared; send it again",
            )
        })?;
    check_etag(&c, m)?;
    Ok(c)
}

/// The enqueue transaction of a change to a cluster that must not be being deleted:
/// opened, the live record locked and its etag checked ([`lock`]), then [`not_deleting`].
pub async fn lock_live_cluster(
    db: &Db,
    m: &Mutation,
) -> Result<(sqlx::Transaction<'static, sqlx::Postgres>, ClusterRecord)> {
    let mut tx = transaction(db).await?;
    let c = lock(&mut tx, m).await?;
    not_deleting(&c, &m.path)?;
    Ok((tx, c))
}

/// Everything an operation of this module needs besides the mutation and its plan;
/// `request` is the kind's own part of its input.
pub struct OpRequest<'a, R> {
    pub target: String,
    pub team: &'a str,
    pub cluster_id: Uuid,
    pub pools: Vec<String>,
    pub new_cluster: bool,
    pub request: R,
}

impl<'a, R> OpRequest<'a, R> {
    /// An operation on node pools of an existing cluster, targeting the pool `target`.
    pub fn on_pools(
        m: &Mutation,
        team: &'a str,
        cluster_id: Uuid,
        target: &str,
        pools: Vec<String>,
        request: R,
    ) -> Self {
        OpRequest {
            target: format!("{}/nodePools/{target}", m.path.name()),
            team,
            cluster_id,
            pools,
            new_cluster: false,
            request,
        }
    }
}

/// The operation of kind `K` for `plan`, ready for [`queue::enqueue_in`].
pub fn operation<K, R>(m: &Mutation, r: OpRequest<'_, R>, plan: &K::Plan) -> Result<Enqueue>
where
    K: OperationKind<Input = ClusterOpInput<R>>,
{
    let path = &m.path;
    let input = ClusterOpInput {
        project: path.project.to_string(),
        zone: path.zone.to_string(),
        cluster: path.cluster.to_string(),
        cluster_id: r.cluster_id,
        pools: r.pools,
        new_cluster: r.new_cluster,
        request: r.request,
    };
    Ok(Enqueue {
        op_type: K::TYPE,
        target: r.target,
        serial_key: path.name(),
        team_id: r.team.to_owned(),
        cluster_id: Some(r.cluster_id),
        created_by: m.caller.email.to_string(),
        input: queue::input_of::<K>(&input).map_err(enqueue_error)?,
        plan: K::stored_plan(plan),
        steps: K::steps(plan),
        idempotency: m.idempotency.clone(),
    })
}

/// Enqueue the operation for `plan` in `tx` and commit (or roll back for a repeat).
pub async fn submit<K, R>(
    tx: sqlx::Transaction<'static, sqlx::Postgres>,
    m: &Mutation,
    r: OpRequest<'_, R>,
    plan: &Plan,
) -> Result<Submitted>
where
    K: OperationKind<Input = ClusterOpInput<R>, Plan = Plan>,
{
    let req = operation::<K, R>(m, r, plan)?;
    let op = match &m.approving {
        Some(a) => approval::approved(tx, a, &req).await?,
        None => enqueue(tx, &req).await?,
    };
    Ok(Submitted::Operation(Box::new(op)))
}

/// Commit `tx` with the enqueued operation (or roll back for a repeat).
pub(super) async fn enqueue(
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    req: &Enqueue,
) -> Result<Operation> {
    let r = queue::enqueue_in(&mut tx, req)
        .await
        .map_err(enqueue_error)?;
    if r.created {
        tx.commit().await.map_err(StoreError::from)?;
    } else {
        tx.rollback().await.map_err(StoreError::from)?;
    }
    super::operations::render(&r.op)
}
