//! The SYNC_ACCESS workflow (issue 28): converge a cluster's IAM grants ([`iam`]) and
//! Kubernetes RBAC bindings ([`rbac`]) with its team's roster as it is when each step
//! runs, so one queued sync covers every roster change made before it starts. It is
//! enqueued by member changes, after every `up`, and by `:syncAccess`, on its own queue
//! key per cluster (`access:{cluster id}`): a removal never waits behind a long `up`.
//!
//! Invariant: a sync changes no record; it grants and revokes only what the roster
//! justifies and only what it recorded as its own (IAM) or labelled as managed (RBAC),
//! and the RBAC step runs first (the two IAM steps after it, side by side), so a removed
//! member's bindings are gone before any IAM call and a project where kineticd may not
//! set IAM fails the sync with the cluster's bindings already converged.

mod iam;
mod rbac;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::domain::OperationType;
use crate::domain::access::Roster;
use crate::domain::resource_names::ClusterNames;
use crate::ops::kinds::OperationKind;
use crate::ops::queue::{self, Enqueue, EnqueueError};
use crate::ops::record_states::Records;
use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::ops::workflows::StepCtx;
use crate::store::operations::OperationRow;

use super::{ClusterOpInput, Env, store_error};

/// Why a sync was enqueued (shown in its input; the sync does the same whatever the
/// reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SyncReason {
    MemberAdded,
    MemberChanged,
    MemberRemoved,
    AfterUp,
    OnDemand,
}

/// What a sync stores in its input's `request`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncInput {
    pub reason: SyncReason,
}

/// One of the sync's steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AccessStep {
    /// The project's policy.
    IamProject,
    /// The policies of the cluster's buckets, repository and builds service account.
    IamResources,
    /// The cluster's RBAC bindings.
    Rbac,
}

impl AccessStep {
    const ALL: [AccessStep; 3] = [
        AccessStep::Rbac,
        AccessStep::IamProject,
        AccessStep::IamResources,
    ];

    fn id(self) -> &'static str {
        match self {
            AccessStep::IamProject => "access-iam-project",
            AccessStep::IamResources => "access-iam-resources",
            AccessStep::Rbac => "access-rbac",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            AccessStep::IamProject => "grant and revoke the team's roles on the project",
            AccessStep::IamResources => {
                "grant and revoke the team's roles on the cluster's buckets, repository and builds service account"
            }
            AccessStep::Rbac => {
                "create and delete the cluster's RBAC bindings labelled managed-by: kineticd"
            }
        }
    }
}

/// One IAM grant made or revoked.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct GrantChange {
    /// The policy's resource, e.g. `projects/p` or `projects/_/buckets/b`.
    pub resource: String,
    pub role: String,
    /// The IAM member, e.g. `user:alice@example.com`.
    pub member: String,
}

/// What a SYNC_ACCESS operation did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessSyncReport {
    /// Roster entries access was derived from.
    #[schema(format = Int32)]
    pub members: usize,
    /// IAM grants made.
    pub granted: Vec<GrantChange>,
    /// IAM grants revoked (only grants kineticd made).
    pub revoked: Vec<GrantChange>,
    /// Grants the roster asks for that someone else had already made (left theirs).
    pub already_held: Vec<GrantChange>,
    /// RBAC bindings created or replaced (`ClusterRoleBinding name`,
    /// `RoleBinding namespace/name`).
    pub bindings_applied: Vec<String>,
    /// Managed RBAC bindings deleted.
    pub bindings_deleted: Vec<String>,
    /// What was left out, and why (an unusable roster entry, a missing namespace, a
    /// cluster not running yet).
    pub skipped: Vec<String>,
}

impl AccessSyncReport {
    fn merge(&mut self, other: AccessSyncReport) {
        self.members = self.members.max(other.members);
        self.granted.extend(other.granted);
        self.revoked.extend(other.revoked);
        self.already_held.extend(other.already_held);
        self.bindings_applied.extend(other.bindings_applied);
        self.bindings_deleted.extend(other.bindings_deleted);
        self.skipped.extend(other.skipped);
    }
}

/// The team's roster as principals with their roles ([`Roster::parse`]).
pub(super) async fn roster(env: &Env, team: &str) -> Result<Roster, StepError> {
    let rows = crate::store::access::roster(&env.db, team)
        .await
        .map_err(store_error)?;
    Ok(Roster::parse(&rows))
}

/// What each step of a sync works from.
pub(super) struct Scope<'a> {
    pub env: &'a Env,
    pub team: &'a str,
    pub names: &'a ClusterNames,
    /// `projects/p/zones/z/clusters/c`.
    pub cluster: String,
    pub roster: &'a Roster,
    pub cancel: &'a tokio_util::sync::CancellationToken,
}

impl Scope<'_> {
    /// An empty report of this roster.
    pub fn report(&self) -> AccessSyncReport {
        AccessSyncReport {
            members: self.roster.members.len(),
            ..AccessSyncReport::default()
        }
    }
}

/// The SYNC_ACCESS kind.
pub struct SyncAccess {
    env: Arc<Env>,
}

impl OperationKind for SyncAccess {
    const TYPE: OperationType = OperationType::SyncAccess;
    const RECORDS: Records = Records::Untouched;
    const TEST_ONLY: bool = false;
    type Input = ClusterOpInput<SyncInput>;
    type Step = AccessStep;
    type Response = AccessSyncReport;
    /// The steps are always the same three.
    type Plan = ();

    fn steps(_plan: &()) -> Vec<StepRecord> {
        // RBAC first: a removed member's bindings go before any IAM call, and a policy
        // kineticd may not set cannot hold the cluster's bindings back.
        let rbac = AccessStep::Rbac.id();
        AccessStep::ALL
            .iter()
            .map(|s| {
                let r = StepRecord::new(s.id(), s.describe()).with_input(json!({ "step": s }));
                if *s == AccessStep::Rbac {
                    r
                } else {
                    r.after(&[rbac])
                }
            })
            .collect()
    }

    fn build(env: &Arc<Env>) -> Self {
        SyncAccess { env: env.clone() }
    }

    fn deadline(&self) -> Duration {
        Duration::from_secs(30 * 60)
    }

    fn step(&self, stored: &StepRecord) -> Result<AccessStep, String> {
        let step = stored.input.get("step").cloned().unwrap_or(Value::Null);
        serde_json::from_value(step).map_err(|e| e.to_string())
    }

    fn run_step<'a>(
        &'a self,
        input: &'a Self::Input,
        step: &'a AccessStep,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let names = input.names()?;
            let team = ctx.op.team_id.as_deref().ok_or_else(|| {
                StepError::terminal(
                    RpcCode::FailedPrecondition,
                    "TEAM_DELETED",
                    "the cluster's team was deleted: there is no roster to derive access from",
                )
            })?;
            let roster = roster(&self.env, team).await?;
            let scope = Scope {
                env: &self.env,
                team,
                names: &names,
                cluster: input.cluster_name(),
                roster: &roster,
                cancel: &ctx.cancel,
            };
            let report = match step {
                AccessStep::IamProject => iam::project(&scope).await?,
                AccessStep::IamResources => iam::resources(&scope).await?,
                AccessStep::Rbac => rbac::converge(&scope).await?,
            };
            serde_json::to_value(report).map_err(|e| {
                StepError::terminal(RpcCode::Internal, "BAD_STEP_RESULT", e.to_string())
            })
        })
    }

    fn response(
        &self,
        _input: &Self::Input,
        steps: &[StepRecord],
    ) -> Result<AccessSyncReport, StepError> {
        let mut out = AccessSyncReport::default();
        for s in steps {
            if let Some(r) = &s.result {
                let part: AccessSyncReport = serde_json::from_value(r.clone()).map_err(|e| {
                    StepError::terminal(
                        RpcCode::Internal,
                        "BAD_STEP_RESULT",
                        format!("step {} result does not read: {e}", s.id),
                    )
                })?;
                out.merge(part);
            }
        }
        Ok(out)
    }
}

/// The queue key of a cluster's syncs: apart from its provisioning operations.
pub fn serial_key(cluster_id: Uuid) -> String {
    format!("access:{cluster_id}")
}

/// A cluster a sync is for.
pub struct SyncTarget<'a> {
    pub cluster_id: Uuid,
    pub project: &'a str,
    pub zone: &'a str,
    pub cluster: &'a str,
    pub team: &'a str,
}

/// The SYNC_ACCESS operation for `t`, requested by `by` for `reason`.
pub fn request(t: &SyncTarget<'_>, by: &str, reason: SyncReason) -> Result<Enqueue, EnqueueError> {
    let input = ClusterOpInput {
        project: t.project.to_owned(),
        zone: t.zone.to_owned(),
        cluster: t.cluster.to_owned(),
        cluster_id: t.cluster_id,
        pools: Vec::new(),
        new_cluster: false,
        request: SyncInput { reason },
    };
    Ok(Enqueue {
        op_type: OperationType::SyncAccess,
        target: input.cluster_name(),
        serial_key: serial_key(t.cluster_id),
        team_id: t.team.to_owned(),
        cluster_id: Some(t.cluster_id),
        created_by: by.to_owned(),
        input: queue::input_of::<SyncAccess>(&input)?,
        plan: None,
        steps: SyncAccess::steps(&()),
        idempotency: None,
    })
}

/// The sync that follows a successful `up` (`op`), by the same caller.
pub fn after_up(op: &OperationRow) -> Option<Enqueue> {
    let input: ClusterOpInput = serde_json::from_value(op.input.clone()).ok()?;
    let t = SyncTarget {
        cluster_id: input.cluster_id,
        project: &input.project,
        zone: &input.zone,
        cluster: &input.cluster,
        team: op.team_id.as_deref()?,
    };
    request(&t, &op.created_by, SyncReason::AfterUp).ok()
}
