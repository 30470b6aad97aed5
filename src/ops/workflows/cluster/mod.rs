//! The provisioning workflows (UP_CLUSTER, DOWN_CLUSTER, ADD_NODE_POOL,
//! REMOVE_NODE_POOL): each step is one action of the operation's plan, carried out as an
//! idempotent "ensure" against Google Cloud and the cluster's Kubernetes API.
//!
//! Invariant: a step re-checks reality before changing it (create if absent, adopt if
//! present and ours, wait if in progress, fail clearly if present and foreign; delete if
//! present, succeed if gone), so a step run twice, or resumed after a crash, creates
//! nothing twice. Record states change together with the operation's end, in one
//! transaction ([`records`]).

mod compute_class;
pub mod drill;
mod exec;
mod flex_wire;
mod gke;
mod infra;
mod kube;
pub mod manifest_cache;
mod plan_steps;
pub mod queued;
pub mod records;
mod reservation;
pub mod resize;
pub mod results;
pub mod wire;

pub use plan_steps::steps;

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::cloud::Cloud;
use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::lro::{LroPolicy, PollSchedule};
use crate::cloud::kube::{KubeError, WaitOptions};
use crate::domain::naming::ClusterNames;
use crate::domain::{ClusterName, ProjectId, ZoneName};
use crate::ops::steps::{ErrorClass, RpcCode, StepError, StepRecord};
use crate::store::operations::{Finish, OperationRow};
use crate::store::{Db, StoreError};

use super::{StepCtx, Workflow};
use manifest_cache::ManifestStore;

pub const UP: &str = "UP_CLUSTER";
pub const DOWN: &str = "DOWN_CLUSTER";
pub const ADD_POOL: &str = "ADD_NODE_POOL";
pub const REMOVE_POOL: &str = "REMOVE_NODE_POOL";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Up,
    Down,
    AddPool,
    RemovePool,
}

impl OpKind {
    /// The kind of a provisioning operation type; `None` for other types.
    pub fn of_type(op_type: &str) -> Option<OpKind> {
        [
            OpKind::Up,
            OpKind::Down,
            OpKind::AddPool,
            OpKind::RemovePool,
        ]
        .into_iter()
        .find(|k| k.op_type() == op_type)
    }

    pub fn op_type(self) -> &'static str {
        match self {
            OpKind::Up => UP,
            OpKind::Down => DOWN,
            OpKind::AddPool => ADD_POOL,
            OpKind::RemovePool => REMOVE_POOL,
        }
    }
}

/// What every provisioning operation stores as its `input`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOpInput {
    pub project: String,
    pub zone: String,
    pub cluster: String,
    /// The cluster record the operation works on.
    pub cluster_id: Uuid,
    /// The pools this operation adds or removes (up: its first pool).
    #[serde(default)]
    pub pools: Vec<String>,
    /// The record was created by this operation (a first `up`).
    #[serde(default)]
    pub new_cluster: bool,
    /// The request body as received (for the record of what was asked).
    #[serde(default)]
    pub request: Value,
}

impl ClusterOpInput {
    pub fn names(&self) -> Result<ClusterNames, StepError> {
        let bad = |e: crate::domain::NameError| {
            StepError::terminal(RpcCode::Internal, "BAD_OPERATION_INPUT", e.to_string())
        };
        Ok(ClusterNames::new(
            &ProjectId::parse(&self.project).map_err(bad)?,
            &ZoneName::parse(&self.zone).map_err(bad)?,
            &ClusterName::parse(&self.cluster).map_err(bad)?,
        ))
    }
}

/// Deadlines of cloud waits.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// One Google long-running operation (GKE cluster creation takes minutes).
    pub lro: Duration,
    /// One Kubernetes wait (LeaderWorkerSet controller available).
    pub kube: WaitOptions,
    /// How Google operations and resources in progress are polled.
    pub poll: PollSchedule,
}

impl Timing {
    /// Polling of cloud work in progress until `lro` passes.
    pub fn lro_policy(&self) -> LroPolicy {
        LroPolicy::with(self.poll, self.lro)
    }

    /// The defaults, polling as often as the cloud clients are configured to.
    pub fn polling(poll: PollSchedule) -> Timing {
        let mut t = Timing {
            poll,
            ..Timing::default()
        };
        t.kube.poll = poll.first;
        t
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            lro: Duration::from_secs(45 * 60),
            kube: WaitOptions {
                timeout: Duration::from_secs(600),
                poll: Duration::from_millis(500),
            },
            poll: PollSchedule::default(),
        }
    }
}

/// What the steps use: records, cloud clients, the manifest cache.
pub struct Env {
    pub db: Db,
    pub cloud: Cloud,
    pub manifests: ManifestStore,
    pub timing: Timing,
}

impl Env {
    pub fn new(db: Db, cloud: Cloud) -> Env {
        let manifests = ManifestStore::new(db.clone(), cloud.http.clone());
        let timing = Timing::polling(cloud.gcp.http.config.poll);
        Env {
            db,
            cloud,
            timing,
            manifests,
        }
    }
}

/// One of the four provisioning workflows.
pub struct ClusterWorkflow {
    kind: OpKind,
    env: Arc<Env>,
}

impl ClusterWorkflow {
    pub fn new(kind: OpKind, env: Arc<Env>) -> ClusterWorkflow {
        ClusterWorkflow { kind, env }
    }
}

/// The four workflows sharing one environment.
pub fn all(env: Arc<Env>) -> [ClusterWorkflow; 4] {
    [
        OpKind::Up,
        OpKind::Down,
        OpKind::AddPool,
        OpKind::RemovePool,
    ]
    .map(|k| ClusterWorkflow::new(k, env.clone()))
}

impl Workflow for ClusterWorkflow {
    fn op_type(&self) -> &'static str {
        self.kind.op_type()
    }

    fn deadline(&self) -> Duration {
        match self.kind {
            OpKind::Up | OpKind::Down => Duration::from_secs(3 * 3600),
            OpKind::AddPool | OpKind::RemovePool => Duration::from_secs(2 * 3600),
        }
    }

    fn run_step<'a>(&'a self, ctx: &'a StepCtx) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let input: ClusterOpInput = serde_json::from_value(ctx.op.input.clone())
                .map_err(|e| bad_input(format!("operation input: {e}")))?;
            let action: crate::plan::Action = serde_json::from_value(ctx.step.input.clone())
                .map_err(|e| bad_input(format!("step {} input: {e}", ctx.step.id)))?;
            let names = input.names()?;
            let step = exec::Step {
                env: &self.env,
                input: &input,
                names: &names,
                action: &action,
                ctx,
            };
            step.run().await
        })
    }

    fn finish<'a>(
        &'a self,
        db: &'a Db,
        op: &'a OperationRow,
        f: Finish<'a>,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(records::finish(db, self.kind, op, f))
    }

    fn response(&self, op: &OperationRow, steps: &[StepRecord]) -> Value {
        let input: Option<ClusterOpInput> = serde_json::from_value(op.input.clone()).ok();
        let outcomes: serde_json::Map<String, Value> = steps
            .iter()
            .filter_map(|s| {
                let outcome = results::outcome_of(s.result.as_ref()?)?;
                Some((s.id.clone(), serde_json::to_value(outcome).ok()?))
            })
            .collect();
        let mut response = json!({
            "cluster": input.as_ref().map(|i| format!("projects/{}/zones/{}/clusters/{}", i.project, i.zone, i.cluster)),
            "nodePools": input.as_ref().map(|i| i.pools.clone()).unwrap_or_default(),
            "outcomes": outcomes,
        });
        results::add_workload(&mut response, steps);
        results::add_queued(&mut response, steps);
        response
    }
}

fn bad_input(message: String) -> StepError {
    StepError::terminal(RpcCode::Internal, "BAD_OPERATION_INPUT", message)
}

/// A Google error as a step error: its retry class, canonical code and reason (kept for
/// the operation's `error.details`), and which call failed.
pub fn gcp_error(e: GcpError) -> StepError {
    let class = if e.is_retryable() {
        ErrorClass::Retryable
    } else {
        ErrorClass::Terminal
    };
    StepError {
        class,
        code: RpcCode::from_status(&e.status),
        reason: e.reason.clone(),
        message: e.to_string(),
        metadata: Default::default(),
    }
    .with("service", e.service)
    .with("method", e.method)
    .with("httpStatus", e.http_status)
}

/// A Kubernetes error as a step error.
pub fn kube_error(e: KubeError) -> StepError {
    let retry = e.retry() == crate::cloud::gcp::RetryClass::Retryable;
    let (code, reason) = match &e {
        KubeError::Cancelled { .. } => (RpcCode::Cancelled, "CANCELLED".to_owned()),
        KubeError::Deadline { .. } => (
            RpcCode::DeadlineExceeded,
            "KUBERNETES_WAIT_TIMEOUT".to_owned(),
        ),
        KubeError::Api { code, reason, .. } => (
            RpcCode::from_status(crate::cloud::gcp::error::status_for_http(*code)),
            reason.clone(),
        ),
        KubeError::ChecksumMismatch { .. } => (
            RpcCode::FailedPrecondition,
            "MANIFEST_CHECKSUM_MISMATCH".to_owned(),
        ),
        _ => (RpcCode::Unavailable, "KUBERNETES_UNAVAILABLE".to_owned()),
    };
    let mut s = if retry {
        StepError::retryable(code, &reason, e.to_string())
    } else {
        StepError::terminal(code, &reason, e.to_string())
    };
    s = s.with("service", "kubernetes");
    s
}

/// Our own database failing mid-step: retry.
/// A stored record that does not decode will not decode on a retry either.
pub fn store_error(e: StoreError) -> StepError {
    match e {
        StoreError::Corrupt(c) => {
            StepError::terminal(RpcCode::Internal, "CORRUPT_RECORD", c.to_string())
        }
        e => StepError::retryable(RpcCode::Unavailable, "DATABASE_UNAVAILABLE", e.to_string()),
    }
}
