//! Artifact Registry v1 client: Docker repositories (create and delete are long-running
//! operations).
//!
//! Invariant: create and delete return the operation as Google gave it; only
//! [`ArtifactRegistry::wait_operation`] decides success, and a done operation with
//! `error` is an `Err`.

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::lro::LroPolicy;
use super::service_usage::wait_done;
use super::types::artifact_registry::{Operation, Repository};

pub use super::types::artifact_registry::docker_host;

const S: Service = Service::ArtifactRegistry;

#[derive(Debug, Clone)]
pub struct ArtifactRegistry {
    http: GcpHttp,
}

/// `projects/{p}/locations/{l}/repositories/{id}`.
pub fn repository_name(project: &str, location: &str, repository_id: &str) -> String {
    format!("projects/{project}/locations/{location}/repositories/{repository_id}")
}

impl ArtifactRegistry {
    pub fn new(http: GcpHttp) -> ArtifactRegistry {
        ArtifactRegistry { http }
    }

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
            .call(Call::get(
                S,
                "repositories.get",
                repository_name(project, location, repository_id),
            ))
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

    /// operations.get: `name` is `projects/{p}/locations/{l}/operations/{id}`.
    pub async fn get_operation(&self, name: &str) -> Result<Operation, GcpError> {
        self.http
            .call(Call::get(S, "operations.get", name.to_owned()))
            .await
    }

    /// Poll `op` until done (at once if it already is); its `error` becomes the `Err`.
    pub async fn wait_operation(
        &self,
        op: Operation,
        policy: LroPolicy,
        cancel: &CancellationToken,
    ) -> Result<Operation, GcpError> {
        wait_done(S.name(), op, policy, cancel, |name| async move {
            self.get_operation(&name).await
        })
        .await
    }
}
