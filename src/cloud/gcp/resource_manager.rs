//! Cloud Resource Manager v3 client: projects and project IAM policies, with the
//! read-modify-write loop every IAM policy edit needs.
//!
//! Invariant: a policy edit is get -> mutate -> set with the etag that was read, at
//! policy version 3; an etag conflict (409 ABORTED), a retryable error, or a policy that
//! names a service account IAM does not know yet, redoes the whole cycle with capped
//! exponential backoff and jitter; nothing is written when the edit changes nothing.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::iam::is_unknown_service_account;
use super::lro;
use super::types::resource_manager::{
    GetIamPolicyRequest, GetPolicyOptions, POLICY_VERSION, Policy, Project, SetIamPolicyRequest,
};

const S: Service = Service::ResourceManager;

/// How often and how patiently a policy read-modify-write is retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RmwPolicy {
    /// Attempts in all (the first included).
    pub max_attempts: u32,
    pub first_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RmwPolicy {
    fn default() -> Self {
        RmwPolicy {
            max_attempts: 8,
            first_delay: Duration::from_millis(250),
            max_delay: Duration::from_secs(8),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ResourceManager {
    http: GcpHttp,
    rmw: RmwPolicy,
}

impl ResourceManager {
    pub fn new(http: GcpHttp) -> ResourceManager {
        ResourceManager {
            http,
            rmw: RmwPolicy::default(),
        }
    }

    /// The same client with another read-modify-write retry policy.
    pub fn with_rmw_policy(mut self, rmw: RmwPolicy) -> ResourceManager {
        self.rmw = rmw;
        self
    }

    /// projects.get (`project`: ID or number).
    pub async fn get_project(&self, project: &str) -> Result<Project, GcpError> {
        self.http
            .call(Call::get(S, "projects.get", format!("projects/{project}")))
            .await
    }

    /// projects.getIamPolicy, asking for policy version 3.
    pub async fn get_iam_policy(&self, project: &str) -> Result<Policy, GcpError> {
        let body = GetIamPolicyRequest {
            options: Some(GetPolicyOptions {
                requested_policy_version: Some(POLICY_VERSION),
            }),
        };
        self.http
            .call(
                Call::post(
                    S,
                    "projects.getIamPolicy",
                    format!("projects/{project}:getIamPolicy"),
                )
                .json(&body),
            )
            .await
    }

    /// projects.setIamPolicy, always at policy version 3 (a lower version cannot carry
    /// conditional bindings). A stale etag fails with 409 ABORTED.
    pub async fn set_iam_policy(&self, project: &str, policy: &Policy) -> Result<Policy, GcpError> {
        let body = SetIamPolicyRequest {
            policy: Policy {
                version: Some(POLICY_VERSION),
                ..policy.clone()
            },
            update_mask: None,
        };
        self.http
            .call(
                Call::post(
                    S,
                    "projects.setIamPolicy",
                    format!("projects/{project}:setIamPolicy"),
                )
                .json(&body),
            )
            .await
    }

    /// Read-modify-write of the project policy: `mutate` edits the policy read and says
    /// whether it changed. Returns the policy in force afterwards.
    pub async fn modify_iam_policy<F>(
        &self,
        project: &str,
        cancel: &CancellationToken,
        mutate: F,
    ) -> Result<Policy, GcpError>
    where
        F: FnMut(&mut Policy) -> bool,
    {
        modify_policy(
            S.name(),
            "projects.setIamPolicy",
            self.rmw,
            cancel,
            || self.get_iam_policy(project),
            |p| async move { self.set_iam_policy(project, &p).await },
            mutate,
        )
        .await
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

/// The read-modify-write loop shared by project and service-account policies.
pub async fn modify_policy<G, GF, W, WF, M>(
    service: &'static str,
    method: &'static str,
    rmw: RmwPolicy,
    cancel: &CancellationToken,
    get: G,
    set: W,
    mut mutate: M,
) -> Result<Policy, GcpError>
where
    G: Fn() -> GF,
    GF: Future<Output = Result<Policy, GcpError>>,
    W: Fn(Policy) -> WF,
    WF: Future<Output = Result<Policy, GcpError>>,
    M: FnMut(&mut Policy) -> bool,
{
    let mut delay = rmw.first_delay;
    let mut attempt = 1;
    loop {
        if cancel.is_cancelled() {
            return Err(lro::cancelled(service, method));
        }
        let outcome = async {
            let mut policy = get().await?;
            if !mutate(&mut policy) {
                return Ok(policy);
            }
            policy.version = Some(POLICY_VERSION);
            set(policy).await
        }
        .await;
        let err = match outcome {
            Ok(p) => return Ok(p),
            Err(e) => e,
        };
        let again = err.is_retryable() || is_unknown_service_account(&err);
        if !again || attempt >= rmw.max_attempts {
            return Err(err);
        }
        tracing::debug!(service, method, attempt, error = %err, "policy update failed; redoing read-modify-write");
        // Full jitter between half and all of the delay.
        let sleep = delay.mul_f64(0.5 + rand::random::<f64>() / 2.0);
        tokio::select! {
            _ = tokio::time::sleep(sleep) => {}
            _ = cancel.cancelled() => return Err(lro::cancelled(service, method)),
        }
        delay = (delay * 2).min(rmw.max_delay);
        attempt += 1;
    }
}
