//! Requests that wait for a person: an apply the team's policy answers NEEDS_APPROVAL
//! becomes a PENDING_APPROVAL operation holding the request, and an ADMIN or OWNER
//! other than the requester approves it (`:approve`) or rejects it (`:reject`).
//!
//! Invariants:
//! - A pending operation changed no record: its request is kept ([`Replay`]) and only
//!   an approval carries it out, by running the same request again as its requester
//!   (every check again, the policy under the team's lock: the world may have changed),
//!   with NEEDS_APPROVAL accepted; that run moves the same operation to QUEUED instead
//!   of creating one. A DENIED re-check refuses the approval and the operation keeps
//!   waiting.
//! - A rejection, and the expiry ([`crate::ops::approvals`]), end it CANCELLED with
//!   reason APPROVAL_REJECTED / APPROVAL_EXPIRED; nobody decides twice.

use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::domain::policy::PolicyCheck;
use crate::domain::states::EventType;
use crate::domain::{Email, OperationState, Role};
use crate::model::Operation;
use crate::ops::kinds::OperationKind;
use crate::ops::queue::{self, Idempotency};
use crate::ops::workflows::cluster::ClusterOpInput;
use crate::store::{self, StoreError};

use super::super::access::{self, Caller};
use super::super::clusters::ClusterPath;
use super::super::noop_operations::enqueue_error;
use super::super::{Error, Result, Services};
use super::pool_request::AddPoolRequest;
use super::resize::ResizeRequest;
use super::up::UpRequest;
use super::{Mutation, OpRequest, Submitted, operation};

/// The request a pending operation carries out when approved.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "camelCase")]
pub enum Verb {
    Up {
        body: UpRequest,
    },
    AddPool {
        body: AddPoolRequest,
    },
    Resize {
        pool: String,
        update_mask: Option<String>,
        body: ResizeRequest,
    },
}

/// A kept request: who asked, for which cluster, under which request id, and what.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Replay {
    pub requested_by: String,
    pub requester_admin: bool,
    pub project: String,
    pub zone: String,
    pub cluster: String,
    pub request_id: Option<(String, String)>,
    pub verb: Verb,
}

/// The approval an approving run carries out (set on its [`Mutation`]).
#[derive(Debug, Clone)]
pub struct Approving {
    pub operation: Uuid,
    pub by: String,
    pub comment: Option<String>,
}

/// Enqueue the operation for `plan` as PENDING_APPROVAL (no record changed) and commit.
pub async fn pend<K, R>(
    svc: &Services,
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    m: &Mutation,
    r: OpRequest<'_, R>,
    plan: &K::Plan,
    verb: Verb,
    check: &PolicyCheck,
) -> Result<Submitted>
where
    K: OperationKind<Input = ClusterOpInput<R>>,
{
    let team = r.team.to_owned();
    let new_cluster = r.new_cluster;
    let mut req = operation::<K, R>(m, r, plan)?;
    let serial_key = std::mem::replace(&mut req.serial_key, format!("approval:{}", Uuid::new_v4()));
    // A new cluster has no record yet: approval creates it.
    if new_cluster {
        req.cluster_id = None;
    }
    let e = queue::enqueue_pending(&mut tx, &req)
        .await
        .map_err(enqueue_error)?;
    if !e.created {
        tx.rollback().await.map_err(StoreError::from)?;
        return Ok(Submitted::Operation(Box::new(
            super::super::operations::render(&e.op)?,
        )));
    }
    let replay = Replay {
        requested_by: m.caller.email.to_string(),
        requester_admin: m.caller.admin,
        project: m.path.project.to_string(),
        zone: m.path.zone.to_string(),
        cluster: m.path.cluster.to_string(),
        request_id: m
            .idempotency
            .as_ref()
            .map(|i| (i.key.clone(), i.fingerprint.clone())),
        verb,
    };
    let request = serde_json::to_value(&replay).map_err(|e| Error::internal(&e))?;
    let policy = serde_json::to_value(check).map_err(|e| Error::internal(&e))?;
    store::approvals::insert(
        &mut tx,
        &store::approvals::NewApproval {
            operation_id: e.op.id,
            team_id: &team,
            requested_by: m.caller.email.as_str(),
            serial_key: &serial_key,
            request: &request,
            policy: &policy,
            ttl_seconds: svc.approval_ttl.as_secs_f64(),
        },
    )
    .await?;
    tx.commit().await.map_err(StoreError::from)?;
    Ok(Submitted::Operation(Box::new(
        super::super::operations::render(&e.op)?,
    )))
}

/// Move the pending operation `a` names to QUEUED with `req`'s plan, in `tx`, and commit.
pub async fn approved(
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    a: &Approving,
    req: &queue::Enqueue,
) -> Result<Operation> {
    let steps = serde_json::to_value(&req.steps).map_err(|e| Error::internal(&e))?;
    let row = store::approvals::approve(
        &mut tx,
        &store::approvals::Approved {
            id: a.operation,
            by: &a.by,
            comment: a.comment.as_deref(),
            serial_key: &req.serial_key,
            target: &req.target,
            cluster_id: req.cluster_id,
            input: &req.input,
            plan: req.plan.as_ref(),
            steps,
        },
    )
    .await?
    .ok_or_else(|| decided(&a.operation.to_string()))?;
    let details = json!({"comment": a.comment, "requestedBy": row.created_by});
    let kind = EventType::OperationApproved;
    let team = row.team_id.as_deref();
    let target = format!("operations/{}", row.id);
    super::super::audit::append_as(&mut *tx, &a.by, team, kind, &target, details).await?;
    tx.commit().await.map_err(StoreError::from)?;
    super::super::operations::render(&row)
}

fn decided(id: &str) -> Error {
    Error::precondition(
        "OPERATION_NOT_PENDING_APPROVAL",
        format!(
            "operations/{id} is not waiting for approval (it was decided, cancelled or has expired)"
        ),
    )
    .with("operation", format!("operations/{id}"))
}

/// A decision's caller and target: an ADMIN or OWNER of the operation's team who is not
/// its requester, on an operation still waiting.
async fn decision(
    svc: &Services,
    caller: &Caller,
    id: &str,
    action: &str,
) -> Result<(store::approvals::ApprovalRecord, Replay)> {
    let row = super::super::operations::visible(&svc.db, caller, id, Role::Viewer, action).await?;
    let team = row.team_id.clone().unwrap_or_default();
    access::require(&svc.db, caller, &team, Role::Admin, action).await?;
    let rec = store::approvals::get(&svc.db, row.id).await?;
    let Some(rec) = rec.filter(|_| row.state == OperationState::PendingApproval) else {
        return Err(decided(id));
    };
    if rec.requested_by == caller.email.as_str() {
        return Err(Error::new(
            crate::domain::RpcCode::PermissionDenied,
            "APPROVAL_BY_REQUESTER",
            format!(
                "operations/{id} was requested by you: another ADMIN or OWNER of teams/{team} decides it"
            ),
        ));
    }
    let row = store::Row {
        table: "approvals",
        id: &id,
    };
    let replay: Replay = row
        .json("request", rec.request.clone())
        .map_err(StoreError::from)?;
    Ok((rec, replay))
}

/// A decision on an operation waiting for approval, with the decider's comment.
#[derive(Debug, Clone)]
pub enum Decision {
    /// Run the kept request again as its requester, the policy re-checked, and queue
    /// the operation.
    Approve(Option<String>),
    /// End the operation CANCELLED with reason APPROVAL_REJECTED and the comment.
    Reject(Option<String>),
}

/// `:approve` or `:reject` by `caller` (an ADMIN or OWNER other than the requester).
pub async fn decide(svc: &Services, caller: &Caller, id: &str, d: Decision) -> Result<Operation> {
    let action = match d {
        Decision::Approve(_) => "approving operations",
        Decision::Reject(_) => "rejecting operations",
    };
    let (rec, replay) = decision(svc, caller, id, action).await?;
    match d {
        Decision::Approve(comment) => approve(svc, caller, id, &rec, replay, comment).await,
        Decision::Reject(comment) => reject(svc, caller, id, &rec, comment).await,
    }
}

async fn approve(
    svc: &Services,
    caller: &Caller,
    id: &str,
    rec: &store::approvals::ApprovalRecord,
    replay: Replay,
    comment: Option<String>,
) -> Result<Operation> {
    let email = Email::parse(&replay.requested_by)?;
    let m = Mutation {
        caller: Caller {
            email,
            admin: replay.requester_admin,
        },
        path: ClusterPath::parse(&replay.project, &replay.zone, &replay.cluster)?,
        validate_only: false,
        idempotency: replay
            .request_id
            .map(|(key, fingerprint)| Idempotency { key, fingerprint }),
        if_match: None,
        pool_if_match: None,
        approving: Some(Approving {
            operation: rec.operation_id,
            by: caller.email.to_string(),
            comment,
        }),
    };
    let done = match replay.verb {
        Verb::Up { body } => super::up::up(svc, &m, body).await?,
        Verb::AddPool { body } => super::pools::add_pool(svc, &m, body).await?,
        Verb::Resize {
            pool,
            update_mask,
            body,
        } => super::resize::resize(svc, &m, &pool, update_mask.as_deref(), body).await?,
    };
    match done {
        Submitted::Operation(op) => Ok(*op),
        Submitted::Plan(_) => Err(decided(id)),
    }
}

async fn reject(
    svc: &Services,
    caller: &Caller,
    id: &str,
    rec: &store::approvals::ApprovalRecord,
    comment: Option<String>,
) -> Result<Operation> {
    let by = caller.email.to_string();
    let error = crate::ops::approvals::rejected_status(&by, comment.as_deref());
    let mut tx = svc.db.begin().await.map_err(StoreError::from)?;
    let row = store::approvals::end(
        &mut tx,
        rec.operation_id,
        "REJECTED",
        &by,
        comment.as_deref(),
        &error,
    )
    .await?
    .ok_or_else(|| decided(id))?;
    let details = json!({"comment": comment, "requestedBy": row.created_by});
    let (team, target) = (row.team_id.as_deref(), format!("operations/{}", row.id));
    let kind = EventType::OperationRejected;
    super::super::audit::append_by(&mut *tx, caller, team, kind, &target, details).await?;
    tx.commit().await.map_err(StoreError::from)?;
    store::operations::announce(&svc.db, &[format!("{}:CANCELLED", row.id)]).await?;
    super::super::operations::render(&row)
}

/// An operation waiting for approval, as the team page lists it.
#[derive(Debug, Clone)]
pub struct Pending {
    /// `operations/{id}`
    pub operation: String,
    pub requested_by: String,
    pub expire_time: String,
    /// Why it waits (the policy's messages when it was asked).
    pub reasons: Vec<String>,
}

/// The operations of `team` waiting for approval, oldest first (any member).
pub async fn pending(svc: &Services, caller: &Caller, team: &str) -> Result<Vec<Pending>> {
    access::require(&svc.db, caller, team, Role::Viewer, "reading approvals").await?;
    let recs = store::approvals::pending(&svc.db, Some(&[team.to_owned()]), 100).await?;
    Ok(recs
        .into_iter()
        .map(|r| Pending {
            operation: format!("operations/{}", r.operation_id),
            requested_by: r.requested_by,
            expire_time: crate::model::timestamp(r.expire_time),
            reasons: serde_json::from_value::<PolicyCheck>(r.policy)
                .map(|c| c.violations.into_iter().map(|v| v.message).collect())
                .unwrap_or_default(),
        })
        .collect())
}
