//! `POST .../clusters/{c}:checkWorkload`'s answer as clients see it.
//!
//! Invariant: a rendering of [`crate::domain::workload::Report`] only: every field comes
//! from the report, reasons and fits spelled as API.md fixes them.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::workload::report::Fit;
use crate::domain::workload::{PoolFit, Problem, Report};

/// Whether and when a workload would schedule, per pool and overall.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadCheck {
    /// `verdict` is not NEVER.
    pub schedulable: bool,
    /// NOW (room on existing nodes) | AFTER_SCALE_UP (the autoscaler must add nodes) |
    /// NEVER. The worst over the workload's pod templates.
    pub verdict: Fit,
    /// Every node pool of the cluster (GKE's default-pool included when it has nodes).
    pub pools: Vec<WorkloadPoolFit>,
    /// What stops the workload, or risks it, each with how to fix it.
    pub problems: Vec<WorkloadProblem>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadPoolFit {
    #[schema(example = "gpu-l4-3f2a")]
    pub pool_id: String,
    pub fits: Fit,
    /// Why, in words (for NEVER it starts with the reason code).
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WorkloadProblem {
    /// MISSING_TOLERATION | NO_MATCHING_POOL | NODE_SELECTOR_MATCHES_NOTHING |
    /// ACCELERATOR_COUNT_TOO_LARGE | GPU_LIMIT_MISSING | TPU_TOPOLOGY_MISMATCH |
    /// ZONE_PINNED | CUDA_DRIVER_MISMATCH | SPOT_ONLY_NO_FALLBACK | POOL_AT_MAX |
    /// QUOTA_EXHAUSTED | PROVISIONING_REQUEST_NEEDED (a QUEUED pool must grow: only a
    /// ProvisioningRequest obtains its nodes)
    #[schema(example = "MISSING_TOLERATION")]
    pub reason: String,
    pub message: String,
    pub fix: String,
}

impl From<&PoolFit> for WorkloadPoolFit {
    fn from(p: &PoolFit) -> Self {
        WorkloadPoolFit {
            pool_id: p.pool_id.clone(),
            fits: p.fits,
            reason: p.reason.clone(),
        }
    }
}

impl From<&Problem> for WorkloadProblem {
    fn from(p: &Problem) -> Self {
        WorkloadProblem {
            reason: p.reason.as_str().to_owned(),
            message: p.message.clone(),
            fix: p.fix.clone(),
        }
    }
}

impl From<&Report> for WorkloadCheck {
    fn from(r: &Report) -> Self {
        WorkloadCheck {
            schedulable: r.schedulable,
            verdict: r.verdict,
            pools: r.pools.iter().map(Into::into).collect(),
            problems: r.problems.iter().map(Into::into).collect(),
        }
    }
}
