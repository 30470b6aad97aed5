//! Artifact Registry v1 client: Docker repositories (create and delete are long-running
//! operations) and their IAM policies.
//!
//! Invariant: create and delete return the operation as Google gave it; only
//! [`ArtifactRegistry::wait_operation`] decides success, and a done operation with
//! `error` is an `Err`.

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::http::Call;
use super::lro::LroPolicy;
use super::policy::{IamResource, PolicyCollection, policy_client};
use super::service_usage::aip151_operations;
use super::types::artifact_registry::{Operation, Repository};
use super::types::iam::Policy;

pub use super::types::artifact_registry::docker_host;

const S: Service = Service::ArtifactRegistry;

policy_client!(ArtifactRegistry);

/// `projects/{p}/locations/{l}/repositories/{id}`.
pub fn repository_name(project: &str, location: &str, repository_id: &str) -> String {
    format!("projects/{project}/locations/{location}/repositories/{repository_id}")
}

impl ArtifactRegistry {
    /// repositories.create. 409 when the repository exists.
    pub async fn create_repository(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
        repository: &Repository,
    ) -> Result<Operation, GcpError> {
        self.http
            .call(
                Call::post(
                    S,
                    "repositories.create",
                    format!("projects/{project}/locations/{location}/repositories"),
                )
                .query("repositoryId", repository_id)
                .json(repository),
            )
            .await
    }

    /// repositories.get.
    pub async fn get_repository(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
    ) -> Result<Repository, GcpError> {
        self.http
            .get(
                S,
                "repositories.get",
                repository_name(project, location, repository_id),
            )
            .await
    }

    /// repositories.delete.
    pub async fn delete_repository(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
    ) -> Result<Operation, GcpError> {
        self.http
            .call(Call::delete(
                S,
                "repositories.delete",
                repository_name(project, location, repository_id),
            ))
            .await
    }

    aip151_operations!();

    /// The repository's IAM policy.
    fn policy_of(&self, project: &str, location: &str, repository_id: &str) -> IamResource<'_> {
        let resource = repository_name(project, location, repository_id);
        IamResource::new(
            &self.http,
            PolicyCollection::Repositories,
            resource,
            self.rmw,
        )
    }

    /// repositories.getIamPolicy (GET, `options.requestedPolicyVersion=3`).
    pub async fn get_repository_iam_policy(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project, location, repository_id).get().await
    }

    /// repositories.setIamPolicy, always at policy version 3. A stale etag fails with
    /// 409 ABORTED.
    pub async fn set_repository_iam_policy(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
        policy: &Policy,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project, location, repository_id)
            .set(policy)
            .await
    }

    /// Read-modify-write of the repository's policy: `mutate` edits the policy read and
    /// says whether it changed.
    pub async fn modify_repository_iam_policy(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
        cancel: &CancellationToken,
        mutate: impl FnMut(&mut Policy) -> bool,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project, location, repository_id)
            .modify(cancel, mutate)
            .await
    }

    /// Grant each `(role, member)` on the repository (idempotent read-modify-write).
    pub async fn add_repository_bindings(
        &self,
        project: &str,
        location: &str,
        repository_id: &str,
        grants: &[(&str, &str)],
        cancel: &CancellationToken,
    ) -> Result<Policy, GcpError> {
        self.modify_repository_iam_policy(project, location, repository_id, cancel, |p| {
            p.add_bindings(grants)
        })
        .await
    }
}
