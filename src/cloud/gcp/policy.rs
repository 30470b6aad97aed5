//! IAM policy plumbing every client with `getIamPolicy` / `setIamPolicy` shares (Cloud
//! Resource Manager projects, IAM service accounts, Artifact Registry repositories, and
//! the read-modify-write loop for Storage buckets too).
//!
//! Invariant: a policy write always carries policy version 3 and the etag that was read;
//! a read-modify-write redoes the whole get -> mutate -> set cycle on an etag conflict
//! (409 ABORTED), a retryable error, or a policy naming a service account IAM does not
//! know yet, with capped exponential backoff and jitter, and writes nothing when the
//! edit changes nothing.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::lro;
use super::types::iam::{
    GetIamPolicyRequest, GetPolicyOptions, POLICY_VERSION, Policy, SetIamPolicyRequest,
};

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

/// A client of resources that carry IAM policies: its HTTP handle and the retry policy
/// of its policy read-modify-writes, `new` (with the default [`RmwPolicy`]) and
/// `with_rmw_policy`.
macro_rules! policy_client {
    ($name:ident) => {
        #[derive(Debug, Clone)]
        pub struct $name {
            pub(super) http: $crate::cloud::gcp::http::GcpHttp,
            rmw: $crate::cloud::gcp::policy::RmwPolicy,
        }

        impl $name {
            pub fn new(http: $crate::cloud::gcp::http::GcpHttp) -> $name {
                $name {
                    http,
                    rmw: $crate::cloud::gcp::policy::RmwPolicy::default(),
                }
            }

            /// The same client with another policy read-modify-write retry policy.
            pub fn with_rmw_policy(mut self, rmw: $crate::cloud::gcp::policy::RmwPolicy) -> $name {
                self.rmw = rmw;
                self
            }
        }
    };
}
pub(crate) use policy_client;

/// The collections whose resources carry an IAM policy (`{resource}:getIamPolicy` and
/// `:setIamPolicy`); each asks for policy version 3 as its discovery document defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PolicyCollection {
    /// Resource Manager v3 `projects`: POST with `{"options": {"requestedPolicyVersion": 3}}`.
    Projects,
    /// IAM v1 `serviceAccounts`: POST with `?options.requestedPolicyVersion=3`.
    ServiceAccounts,
    /// Artifact Registry v1 `repositories`: GET with `?options.requestedPolicyVersion=3`.
    Repositories,
}

impl PolicyCollection {
    fn service(self) -> Service {
        match self {
            PolicyCollection::Projects => Service::ResourceManager,
            PolicyCollection::ServiceAccounts => Service::Iam,
            PolicyCollection::Repositories => Service::ArtifactRegistry,
        }
    }

    /// The `getIamPolicy` and `setIamPolicy` method names.
    fn methods(self) -> (&'static str, &'static str) {
        match self {
            PolicyCollection::Projects => ("projects.getIamPolicy", "projects.setIamPolicy"),
            PolicyCollection::ServiceAccounts => (
                "serviceAccounts.getIamPolicy",
                "serviceAccounts.setIamPolicy",
            ),
            PolicyCollection::Repositories => {
                ("repositories.getIamPolicy", "repositories.setIamPolicy")
            }
        }
    }
}

/// One resource's IAM policy: read, write (always at policy version 3, with the etag
/// read), and the read-modify-write loop.
pub(crate) struct IamResource<'a> {
    http: &'a GcpHttp,
    collection: PolicyCollection,
    service: Service,
    get_method: &'static str,
    set_method: &'static str,
    /// The resource name, e.g. `projects/{p}`.
    resource: String,
    rmw: RmwPolicy,
}

impl<'a> IamResource<'a> {
    pub(crate) fn new(
        http: &'a GcpHttp,
        collection: PolicyCollection,
        resource: String,
        rmw: RmwPolicy,
    ) -> IamResource<'a> {
        let (get_method, set_method) = collection.methods();
        IamResource {
            http,
            collection,
            service: collection.service(),
            get_method,
            set_method,
            resource,
            rmw,
        }
    }

    /// `{resource}:getIamPolicy`, asking for policy version 3.
    pub(crate) async fn get(&self) -> Result<Policy, GcpError> {
        let (service, method) = (self.service, self.get_method);
        let path = format!("{}:getIamPolicy", self.resource);
        let version_param = "options.requestedPolicyVersion";
        let call = match self.collection {
            PolicyCollection::Projects => {
                Call::post(service, method, path).json(&GetIamPolicyRequest {
                    options: Some(GetPolicyOptions {
                        requested_policy_version: Some(POLICY_VERSION),
                    }),
                })
            }
            PolicyCollection::ServiceAccounts => {
                Call::post(service, method, path).query(version_param, POLICY_VERSION)
            }
            PolicyCollection::Repositories => {
                Call::get(service, method, path).query(version_param, POLICY_VERSION)
            }
        };
        self.http.call(call).await
    }

    /// `{resource}:setIamPolicy` (POST), always at policy version 3 (a lower version
    /// cannot carry conditional bindings). A stale etag fails with 409 ABORTED.
    pub(crate) async fn set(&self, policy: &Policy) -> Result<Policy, GcpError> {
        let body = SetIamPolicyRequest {
            policy: Policy {
                version: Some(POLICY_VERSION),
                ..policy.clone()
            },
            update_mask: None,
        };
        let path = format!("{}:setIamPolicy", self.resource);
        let call = Call::post(self.service, self.set_method, path).json(&body);
        self.http.call(call).await
    }

    /// Read-modify-write (see [`modify_policy`]): `mutate` edits the policy read and says
    /// whether it changed. Returns the policy in force afterwards.
    pub(crate) async fn modify(
        &self,
        cancel: &CancellationToken,
        mutate: impl FnMut(&mut Policy) -> bool,
    ) -> Result<Policy, GcpError> {
        modify_policy(
            self.service.name(),
            self.set_method,
            self.rmw,
            cancel,
            || self.get(),
            |p| async move { self.set(&p).await },
            mutate,
        )
        .await
    }
}

/// Whether `e` is IAM refusing a policy that names a service account it does not know
/// (yet: a new account can take seconds to become usable in policies).
pub fn is_unknown_service_account(e: &GcpError) -> bool {
    e.http_status == 400 && e.message.contains("does not exist")
}

/// The read-modify-write loop shared by project, service-account, repository and bucket
/// policies.
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
