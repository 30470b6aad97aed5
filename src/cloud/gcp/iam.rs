//! IAM v1 client: service accounts and their own IAM policies (who may act as them,
//! e.g. `roles/iam.workloadIdentityUser` for a Kubernetes service account).
//!
//! Invariant: an invalid `accountId` never reaches Google (checked here first, with
//! IAM's own rule); policy writes always carry the etag that was read, so a concurrent
//! change fails with 409 ABORTED instead of being overwritten.

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::{GcpError, RetryClass};
use super::http::Call;
use super::policy::{IamResource, PolicyCollection, policy_client};
use super::types::iam::{
    CreateServiceAccountRequest, Policy, Role, ServiceAccount, is_custom_role, validate_account_id,
};

pub use super::policy::is_unknown_service_account;
pub use super::types::iam::service_account_email;

const S: Service = Service::Iam;

policy_client!(Iam);

impl Iam {
    /// serviceAccounts.create (synchronous). 409 when `account_id` exists.
    pub async fn create_service_account(
        &self,
        project: &str,
        account_id: &str,
        display_name: &str,
        description: &str,
    ) -> Result<ServiceAccount, GcpError> {
        validate_account_id(account_id).map_err(|m| invalid("serviceAccounts.create", m))?;
        let body = CreateServiceAccountRequest {
            account_id: account_id.to_owned(),
            service_account: Some(ServiceAccount {
                display_name: display_name.to_owned(),
                description: description.to_owned(),
                ..ServiceAccount::default()
            }),
        };
        self.http
            .call(
                Call::post(
                    S,
                    "serviceAccounts.create",
                    format!("projects/{project}/serviceAccounts"),
                )
                .json(&body),
            )
            .await
    }

    /// serviceAccounts.get (`email` or unique ID).
    pub async fn get_service_account(
        &self,
        project: &str,
        email: &str,
    ) -> Result<ServiceAccount, GcpError> {
        let call = Call::get(S, "serviceAccounts.get", sa_path(project, email));
        self.http.call(call).await
    }

    /// serviceAccounts.delete.
    pub async fn delete_service_account(&self, project: &str, email: &str) -> Result<(), GcpError> {
        self.http
            .call_unit(Call::delete(
                S,
                "serviceAccounts.delete",
                sa_path(project, email),
            ))
            .await
    }

    /// A custom role's definition (`projects/{p}/roles/{r}` or
    /// `organizations/{o}/roles/{r}`): `projects.roles.get` / `organizations.roles.get`.
    /// Anything else is refused here, before Google sees it.
    pub async fn get_custom_role(&self, name: &str) -> Result<Role, GcpError> {
        let method = if name.starts_with("organizations/") {
            "organizations.roles.get"
        } else {
            "projects.roles.get"
        };
        if !is_custom_role(name) {
            return Err(invalid(
                method,
                format!(
                    "{name:?} is not a custom role name (projects/P/roles/R or organizations/O/roles/R)"
                ),
            ));
        }
        self.http.get(S, method, name.to_owned()).await
    }

    /// The service account's own IAM policy (who may act as it).
    fn policy_of(&self, project: &str, email: &str) -> IamResource<'_> {
        let resource = sa_path(project, email);
        IamResource::new(
            &self.http,
            PolicyCollection::ServiceAccounts,
            resource,
            self.rmw,
        )
    }

    /// serviceAccounts.getIamPolicy (POST, `options.requestedPolicyVersion=3`).
    pub async fn get_service_account_iam_policy(
        &self,
        project: &str,
        email: &str,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project, email).get().await
    }

    /// serviceAccounts.setIamPolicy, always at policy version 3. A stale etag fails with
    /// 409 ABORTED.
    pub async fn set_service_account_iam_policy(
        &self,
        project: &str,
        email: &str,
        policy: &Policy,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project, email).set(policy).await
    }

    /// Read-modify-write of a service account's policy: `mutate` edits the policy read
    /// and says whether it changed; retried on etag conflicts and retryable errors.
    pub async fn modify_service_account_iam_policy(
        &self,
        project: &str,
        email: &str,
        cancel: &CancellationToken,
        mutate: impl FnMut(&mut Policy) -> bool,
    ) -> Result<Policy, GcpError> {
        self.policy_of(project, email).modify(cancel, mutate).await
    }

    /// Grant each `(role, member)` on the service account (idempotent).
    pub async fn add_service_account_bindings(
        &self,
        project: &str,
        email: &str,
        grants: &[(&str, &str)],
        cancel: &CancellationToken,
    ) -> Result<Policy, GcpError> {
        self.modify_service_account_iam_policy(project, email, cancel, |p| p.add_bindings(grants))
            .await
    }
}

fn sa_path(project: &str, email: &str) -> String {
    format!("projects/{project}/serviceAccounts/{email}")
}

fn invalid(method: &'static str, message: String) -> GcpError {
    GcpError {
        service: S.name(),
        method,
        http_status: 400,
        status: "INVALID_ARGUMENT".into(),
        reason: "INVALID_ARGUMENT".into(),
        message,
        retry: RetryClass::Terminal,
    }
}
