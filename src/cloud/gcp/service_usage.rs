//! Service Usage v1 client: enable APIs on a project and read their state; also the
//! AIP-151 operation waiter Artifact Registry shares.
//!
//! Invariant: a batchEnable never carries more than [`BATCH_ENABLE_MAX`] IDs (larger
//! sets are split); an operation counts as finished only when `done`, and a done
//! operation carrying `error` is returned as a classified [`GcpError`], never as success.

use std::future::Future;

use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::lro::{self, LroPolicy};
use super::types::service_usage::{
    BATCH_ENABLE_MAX, BatchEnableServicesRequest, Operation, Service as ApiService,
};

const S: Service = Service::ServiceUsage;

/// The operation methods of a client of an AIP-151 service (one with an `http` field,
/// in a module whose `S` names the service): `get_operation` and `wait_operation`.
macro_rules! aip151_operations {
    () => {
        /// operations.get: `name` as the operation gives it (`operations/...`,
        /// `projects/{p}/locations/{l}/operations/{id}`).
        pub async fn get_operation(&self, name: &str) -> Result<Operation, GcpError> {
            $crate::cloud::gcp::service_usage::get_operation(&self.http, S, name).await
        }

        /// Poll `op` until done (at once if it already is); its `error` becomes the `Err`.
        pub async fn wait_operation(
            &self,
            op: Operation,
            policy: LroPolicy,
            cancel: &CancellationToken,
        ) -> Result<Operation, GcpError> {
            $crate::cloud::gcp::service_usage::wait_operation(&self.http, S, op, policy, cancel)
                .await
        }
    };
}
pub(crate) use aip151_operations;

#[derive(Debug, Clone)]
pub struct ServiceUsage {
    pub(super) http: GcpHttp,
}

impl ServiceUsage {
    pub fn new(http: GcpHttp) -> ServiceUsage {
        ServiceUsage { http }
    }

    /// services.batchEnable, one call per chunk of at most 20 IDs (in order); returns
    /// one operation per chunk. Already-enabled chunks may come back as the done
    /// `operations/noop.DONE_OPERATION`.
    pub async fn batch_enable(
        &self,
        project: &str,
        service_ids: &[&str],
    ) -> Result<Vec<Operation>, GcpError> {
        let mut ops = Vec::new();
        for chunk in service_ids.chunks(BATCH_ENABLE_MAX) {
            let body = BatchEnableServicesRequest {
                service_ids: chunk.iter().map(|s| (*s).to_owned()).collect(),
            };
            let op = self
                .http
                .call(
                    Call::post(
                        S,
                        "services.batchEnable",
                        format!("projects/{project}/services:batchEnable"),
                    )
                    .json(&body),
                )
                .await?;
            ops.push(op);
        }
        Ok(ops)
    }

    /// Enable `service_ids` and wait until every batch is done.
    pub async fn enable_services(
        &self,
        project: &str,
        service_ids: &[&str],
        policy: LroPolicy,
        cancel: &CancellationToken,
    ) -> Result<(), GcpError> {
        for op in self.batch_enable(project, service_ids).await? {
            self.wait_operation(op, policy, cancel).await?;
        }
        Ok(())
    }

    /// services.get: `service_id` such as `compute.googleapis.com`.
    pub async fn get_service(
        &self,
        project: &str,
        service_id: &str,
    ) -> Result<ApiService, GcpError> {
        self.http
            .get(
                S,
                "services.get",
                format!("projects/{project}/services/{service_id}"),
            )
            .await
    }

    aip151_operations!();
}

/// AIP-151 operations.get on `service` (`name` as the operation gives it).
pub(crate) async fn get_operation(
    http: &GcpHttp,
    service: Service,
    name: &str,
) -> Result<Operation, GcpError> {
    http.get(service, "operations.get", name).await
}

/// Poll an AIP-151 operation of `service` until done (see [`wait_done`]).
pub(crate) async fn wait_operation(
    http: &GcpHttp,
    service: Service,
    op: Operation,
    policy: LroPolicy,
    cancel: &CancellationToken,
) -> Result<Operation, GcpError> {
    wait_done(service.name(), op, policy, cancel, |name| async move {
        get_operation(http, service, &name).await
    })
    .await
}

/// Wait for an AIP-151 operation with `get(name)` as the poll (capped backoff, rides out
/// retryable poll errors, ends promptly on cancellation).
pub async fn wait_done<F, Fut>(
    service: &'static str,
    op: Operation,
    policy: LroPolicy,
    cancel: &CancellationToken,
    get: F,
) -> Result<Operation, GcpError>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Operation, GcpError>>,
{
    let done = if op.done {
        op
    } else {
        let name = op.name;
        lro::wait_until(
            service,
            "operations.get",
            policy,
            cancel,
            || get(name.clone()),
            |op: &Operation| op.done,
        )
        .await?
    };
    lro::outcome(service, done, |done| {
        let status = done.error.as_ref()?;
        Some(lro::Failure::of(status, "operations.get"))
    })
}
