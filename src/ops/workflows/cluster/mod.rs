//! The provisioning workflows (UP_CLUSTER, DOWN_CLUSTER, ADD_NODE_POOL,
//! REMOVE_NODE_POOL): each step is one action of the operation's plan, carried out as an
//! idempotent "ensure" against Google Cloud and the cluster's Kubernetes API.
//!
//! Invariant: a step re-checks reality before changing it (create if absent, adopt if
//! present and ours, wait if in progress, fail clearly if present and foreign; delete if
//! present, succeed if gone), so a step run twice, or resumed after a crash, creates
//! nothing twice. Record states change together with the operation's end, in one
//! transaction (`ops::record_states`), as each kind's [`Provision::RECORDS`] declares.

pub mod access;
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
mod reservation;
pub mod resize;
pub mod results;
mod step;
pub mod wire;

pub use plan_steps::steps;

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::cloud::Cloud;
use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::lro::{LroPolicy, PollSchedule};
use crate::cloud::kube::{KubeError, WaitOptions};
use crate::domain::resource_names::ClusterNames;
use crate::domain::{ClusterName, OperationType, ProjectId, ZoneName};
use crate::ops::kinds::OperationKind;
use crate::ops::record_states::Records;
use crate::ops::steps::{ErrorClass, RpcCode, StepError, StepRecord};
use crate::store::Db;
use crate::store::StoreError;
use crate::store::operations::OperationRow;

use super::StepCtx;
use manifest_cache::ManifestStore;

mod kinds;
pub use kinds::{AddPool, Down, Provision, RemovePool, Up};

/// What every operation on a cluster stores as its `input`; `request` is the kind's
/// own part (the request body as received for `up`, pool add and remove, and `down`;
/// typed for a resize and a drill).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterOpInput<R = Value> {
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
    /// The kind's own part of the input.
    pub request: R,
}

impl<R> ClusterOpInput<R> {
    /// `projects/{p}/zones/{z}/clusters/{c}`.
    pub fn cluster_name(&self) -> String {
        format!(
            "projects/{}/zones/{}/clusters/{}",
            self.project, self.zone, self.cluster
        )
    }

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
            // A step's calls are retried within its attempt, not a request's budget.
            cloud: cloud.for_steps(),
            timing,
            manifests,
        }
    }
}

/// One of the four provisioning kinds (`P` says which): each step is one action of the
/// operation's plan.
pub struct Provisioning<P> {
    env: Arc<Env>,
    kind: PhantomData<P>,
}

impl<P: Provision> OperationKind for Provisioning<P> {
    const TYPE: OperationType = P::TYPE;
    const RECORDS: Records = Records::Cluster(P::RECORDS);
    const TEST_ONLY: bool = false;
    type Input = ClusterOpInput;
    type Step = crate::plan::Action;
    type Response = results::ClusterResponse;
    type Plan = crate::plan::Plan;

    fn steps(plan: &crate::plan::Plan) -> Vec<StepRecord> {
        steps(plan)
    }

    fn stored_plan(plan: &crate::plan::Plan) -> Option<Value> {
        serde_json::to_value(plan).ok()
    }

    fn build(env: &Arc<Env>) -> Self {
        Provisioning {
            env: env.clone(),
            kind: PhantomData,
        }
    }

    fn deadline(&self) -> Duration {
        P::DEADLINE
    }

    fn step(&self, stored: &StepRecord) -> Result<crate::plan::Action, String> {
        serde_json::from_value(stored.input.clone()).map_err(|e| e.to_string())
    }

    fn run_step<'a>(
        &'a self,
        input: &'a ClusterOpInput,
        action: &'a crate::plan::Action,
        ctx: &'a StepCtx,
    ) -> BoxFuture<'a, Result<Value, StepError>> {
        Box::pin(async move {
            let names = input.names()?;
            let step = step::Step {
                env: &self.env,
                cluster_id: input.cluster_id,
                names: &names,
                action,
                ctx,
            };
            step.run().await
        })
    }

    fn response(
        &self,
        input: &ClusterOpInput,
        steps: &[StepRecord],
    ) -> Result<results::ClusterResponse, StepError> {
        Ok(results::ClusterResponse::of(input, steps))
    }

    /// A successful `up` is followed by a SYNC_ACCESS of its cluster.
    fn follow_up(&self, op: &OperationRow) -> Option<crate::ops::queue::Enqueue> {
        (P::TYPE == OperationType::UpCluster)
            .then(|| access::after_up(op))
            .flatten()
    }
}

/// The record of pool `pool` of cluster `cluster_id`, its id set (terminal
/// NODE_POOL_NOT_RECORDED, `missing` saying what to do, when there is none).
pub async fn recorded_pool(
    env: &Env,
    cluster_id: Uuid,
    pool: &str,
    missing: &str,
) -> Result<crate::store::PoolSpecRecord, StepError> {
    let rec = crate::store::node_pools::get(&env.db, cluster_id, pool)
        .await
        .map_err(store_error)?
        .ok_or_else(|| {
            StepError::terminal(
                RpcCode::FailedPrecondition,
                "NODE_POOL_NOT_RECORDED",
                format!("node pool {pool} has no record{missing}"),
            )
        })?;
    let mut spec = rec.spec;
    spec.pool_id = pool.to_owned();
    Ok(spec)
}

/// A Google error as a step error: its retry class, a kineticd reason for it (Google's
/// own reason and message kept in `cloudReason` / `cloudMessage`), and which call failed.
pub fn gcp_error(e: GcpError) -> StepError {
    let class = if e.is_retryable() {
        ErrorClass::Retryable
    } else {
        ErrorClass::Terminal
    };
    StepError::from_cloud(
        class,
        e.http_status,
        &e.status,
        &e.reason,
        &e.message,
        e.to_string(),
    )
    .with("service", e.service)
    .with("method", e.method)
    .with("httpStatus", e.http_status)
}

/// A Kubernetes error as a step error (an API server's refusal mapped like a Google one,
/// its `Status.reason` kept in `cloudReason`).
pub fn kube_error(e: KubeError) -> StepError {
    let retry = e.retry() == crate::cloud::gcp::RetryClass::Retryable;
    let class = if retry {
        ErrorClass::Retryable
    } else {
        ErrorClass::Terminal
    };
    let (code, reason) = match &e {
        KubeError::Cancelled { .. } => (RpcCode::Cancelled, "CANCELLED"),
        KubeError::Deadline { .. } => (RpcCode::DeadlineExceeded, "KUBERNETES_WAIT_TIMEOUT"),
        KubeError::Api {
            code: http,
            reason,
            message,
            ..
        } if *http < 500 && *http != 429 => {
            let status = crate::cloud::gcp::error::status_for_http(*http);
            return StepError::from_cloud(class, *http, status, reason, message, e.to_string())
                .with("service", "kubernetes");
        }
        KubeError::ChecksumMismatch { .. } => {
            (RpcCode::FailedPrecondition, "MANIFEST_CHECKSUM_MISMATCH")
        }
        _ => (RpcCode::Unavailable, "KUBERNETES_UNAVAILABLE"),
    };
    let mut s = StepError {
        class,
        code,
        reason: reason.to_owned(),
        message: e.to_string(),
        metadata: Default::default(),
    }
    .with("service", "kubernetes");
    if let KubeError::Api {
        reason: cloud,
        message,
        ..
    } = &e
    {
        s = s.with("cloudReason", cloud).with("cloudMessage", message);
        if cloud != reason {
            s = s.was(cloud);
        }
    }
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
