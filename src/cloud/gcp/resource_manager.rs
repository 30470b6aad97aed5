//! Cloud Resource Manager v3 client: projects and project IAM policies, with the
//! read-modify-write loop every IAM policy edit needs.
//!
//! Invariant: a policy edit is get -> mutate -> set with the etag that was read, at
//! policy version 3; an etag conflict (409 ABORTED), a retryable error, or a policy that
//! names a service account IAM does not know yet, redoes the whole cycle with capped
//! exponential backoff and jitter; nothing is written when the edit changes nothing
//! (the loop itself lives in [`super::policy`], shared with the other clients).

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::policy::{IamResource, PolicyCollection, policy_client};
use super::types::resource_manager::{Policy, Project};

pub use super::policy::{RmwPolicy, modify_policy};

const S: Service = Service::ResourceManager;

policy_client!(ResourceManager);

impl ResourceManager {
    /// projects.get (`project`: ID or number).
    pub async fn get_project(&self, project: &str) -> Result<Project, GcpError> {
        self.http
            .get(S, "projects.get", format!("projects/{project}"))
            .await
    }

    /// The project's IAM policy.
    fn policy_of(&self, project: &str) -> IamResource<'_> {
        let resource = format!("projects/{project}");
        IamResource::new(&self.http, PolicyCollection::Projects, resource, self.rmw)
    }

    /// projects.getIamPolicy, asking for policy version 3.
    pub async fn get_iam_policy(&self, project: &str) -> Result<Policy, GcpError> {
        self.policy_of(project).get().await
    }

    /// projects.setIamPolicy, always at policy version 3 (a lower version cannot carry
    /// conditional bindings). A stale etag fails with 409 ABORTED.
    pub async fn set_iam_policy(&self, project: &str, policy: &Policy) -> Result<Policy, GcpError> {
        self.policy_of(project).set(policy).await
    }

    /// Read-modify-write of the project policy: `mutate` edits the policy read and says
    /// whether it changed. Returns the policy in force afterwards.
    pub async fn modify_iam_policy(
        &self,
        project: &str,
        cancel: &CancellationToken,
        mutate: impl FnMut(&mut Policy) -> bool,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project).modify(cancel, mutate).await
    }

    /// Grant each `(role, member)` on the project (idempotent).
    pub async fn add_bindings(
        &self,
        project: &str,
        grants: &[(&str, &str)],
        cancel: &CancellationToken,
    ) -> Result<Policy, GcpError> {
        self.modify_iam_policy(project, cancel, |p| p.add_bindings(grants))
            .await
    }

    /// Revoke each `(role, member)` on the project (idempotent).
    pub async fn remove_bindings(
        &self,
        project: &str,
        grants: &[(&str, &str)],
        cancel: &CancellationToken,
    ) -> Result<Policy, GcpError> {
        self.modify_iam_policy(project, cancel, |p| p.remove_bindings(grants))
            .await
    }
}
