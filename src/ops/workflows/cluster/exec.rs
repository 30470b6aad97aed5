//! One plan action carried out: the dispatch from (resource type, action, id) to the
//! ensure function that handles it.
//!
//! Invariant: every plan action of `plan::{up, down, pools}` has exactly one handler here;
//! an action nobody handles fails terminally (never silently succeeds).

use serde_json::{Value, json};

use crate::domain::naming::ClusterNames;
use crate::ops::steps::{RpcCode, StepError};
use crate::ops::workflows::StepCtx;
use crate::plan::{Action, ActionKind};

use super::wire::BucketKind;
use super::{ClusterOpInput, Env, gke, infra, kube};

pub struct Step<'a> {
    pub env: &'a Env,
    pub input: &'a ClusterOpInput,
    pub names: &'a ClusterNames,
    pub action: &'a Action,
    pub ctx: &'a StepCtx,
}

/// What a step found and did (its `result`).
pub fn outcome(what: &str) -> Value {
    json!({ "outcome": what })
}

impl Step<'_> {
    pub fn deleting(&self) -> bool {
        self.action.action == ActionKind::Delete
    }

    pub async fn run(&self) -> Result<Value, StepError> {
        let a = self.action;
        let del = self.deleting();
        match (a.resource_type.as_str(), a.id.as_str()) {
            ("serviceusage.service", _) => infra::apis(self).await,
            ("storage.bucket", id) => {
                let kind = match id {
                    "state-bucket" => BucketKind::State,
                    "jobs-bucket" => BucketKind::Jobs,
                    "builds-bucket" => BucketKind::Builds,
                    _ => return Err(self.unhandled()),
                };
                if del {
                    infra::delete_bucket(self, kind).await
                } else {
                    infra::ensure_bucket(self, kind).await
                }
            }
            ("compute.network", _) if del => infra::delete_network(self).await,
            ("compute.network", _) => infra::ensure_network(self).await,
            ("compute.router", _) if del => infra::delete_router(self).await,
            ("compute.router", _) => infra::ensure_router(self).await,
            ("iam.serviceAccount", id @ ("node-sa" | "build-sa")) => {
                let builds = id == "build-sa";
                if del {
                    infra::delete_service_account(self, builds).await
                } else {
                    infra::ensure_service_account(self, builds).await
                }
            }
            ("iam.binding", id @ ("node-sa-roles" | "build-sa-roles")) => {
                infra::project_roles(self, id == "build-sa-roles", !del).await
            }
            ("iam.binding", id @ ("jobs-bucket-iam" | "builds-bucket-iam")) => {
                let kind = if id == "jobs-bucket-iam" {
                    BucketKind::Jobs
                } else {
                    BucketKind::Builds
                };
                infra::bucket_roles(self, kind).await
            }
            ("iam.binding", "repository-iam") => infra::repository_roles(self).await,
            ("iam.binding", "workload-identity") => infra::workload_identity(self).await,
            ("artifactregistry.repository", _) if del => infra::delete_repository(self).await,
            ("artifactregistry.repository", _) => infra::ensure_repository(self).await,
            ("container.cluster", _) if del => gke::delete_cluster(self).await,
            ("container.cluster", _) => gke::ensure_cluster(self).await,
            ("container.nodePool", id) => {
                let pool = id.strip_prefix("pool:").ok_or_else(|| self.unhandled())?;
                if del {
                    gke::delete_pool(self, pool).await
                } else {
                    gke::ensure_pool(self, pool).await
                }
            }
            ("kubernetes.object", "ksa") => kube::ensure_ksa(self).await,
            ("kubernetes.object", "lws") => kube::ensure_lws(self).await,
            ("kubernetes.object", "nvidia-driver") => kube::ensure_nvidia_driver(self).await,
            ("kineticd.profile", _) => infra::save_profile(self).await,
            _ => Err(self.unhandled()),
        }
    }

    fn unhandled(&self) -> StepError {
        StepError::terminal(
            RpcCode::Internal,
            "UNKNOWN_ACTION",
            format!(
                "no handler for {:?} {} {}",
                self.action.action, self.action.resource_type, self.action.id
            ),
        )
    }

    /// A resource with our name that we did not create.
    pub fn foreign(&self, what: &str, name: &str, why: &str) -> StepError {
        StepError::terminal(
            RpcCode::FailedPrecondition,
            "RESOURCE_NOT_OURS",
            format!(
                "{what} {name} already exists but was not created by kinetic ({why}): delete or rename it, or use another cluster name"
            ),
        )
        .with("resource", name)
    }
}
