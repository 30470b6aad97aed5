//! One plan action carried out: the dispatch from the action's step id (and whether it
//! deletes) to the ensure function that handles it.
//!
//! Invariant: every step id a provisioning plan can hold has exactly one handler here:
//! the match on [`StepId`] is exhaustive (and holds no other kind's steps), so a new kind
//! of action without a handler does not compile.

use serde_json::Value;

use crate::ops::steps::StepError;
use crate::plan::StepId;

use super::step::Step;
use super::{compute_class, gke, infra, kube};

impl Step<'_> {
    pub async fn run(&self) -> Result<Value, StepError> {
        let del = self.deleting();
        match &self.action.id {
            StepId::Apis => infra::apis(self).await,
            StepId::Bucket(kind) if del => infra::delete_bucket(self, *kind).await,
            StepId::Bucket(kind) => infra::ensure_bucket(self, *kind).await,
            StepId::BucketRoles(bucket) => infra::bucket_roles(self, (*bucket).into()).await,
            StepId::Network if del => infra::delete_network(self).await,
            StepId::Network => infra::ensure_network(self).await,
            StepId::Router if del => infra::delete_router(self).await,
            StepId::Router => infra::ensure_router(self).await,
            StepId::ServiceAccount(a) if del => infra::delete_service_account(self, *a).await,
            StepId::ServiceAccount(a) => infra::ensure_service_account(self, *a).await,
            StepId::ProjectRoles(a) => infra::project_roles(self, *a, !del).await,
            StepId::Repository if del => infra::delete_repository(self).await,
            StepId::Repository => infra::ensure_repository(self).await,
            StepId::RepositoryRoles => infra::repository_roles(self).await,
            StepId::Cluster if del => gke::delete_cluster(self).await,
            StepId::Cluster => gke::ensure_cluster(self).await,
            StepId::WorkloadIdentity => infra::workload_identity(self).await,
            StepId::Pool(pool) if del => gke::delete_pool(self, pool).await,
            StepId::Pool(pool) => gke::ensure_pool(self, pool).await,
            StepId::Ksa => kube::ensure_ksa(self).await,
            StepId::Lws => kube::ensure_lws(self).await,
            StepId::NvidiaDriver => kube::ensure_nvidia_driver(self).await,
            StepId::ComputeClass if del => compute_class::delete(self).await,
            StepId::ComputeClass => compute_class::ensure(self).await,
            StepId::Profile => infra::save_profile(self).await,
        }
    }
}
