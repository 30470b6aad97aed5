//! Compute Engine (compute v1) client: VPC networks, Cloud Routers (with Cloud NAT),
//! regions (quotas), zones, accelerator and machine types, and global/regional operations.
//!
//! Invariant: one method per Google call, typed with [`crate::cloud::gcp::types::compute`];
//! every insert/delete carries the caller's `requestId`, so a retried call (same id) is
//! deduplicated by Compute instead of creating or deleting twice;
//! [`Compute::wait_operation`] never reports success for a DONE operation with `error`.

pub mod advice;
pub mod mig;
pub mod reservations;

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::config::Service;
use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::lro::{self, LroPolicy};
use super::pages::{self, paged};
use super::types::compute::{
    AcceleratorType, AcceleratorTypeList, MachineType, Network, Operation, Region, Router, Zone,
    ZoneList,
};
use super::types::list::Page;

const SVC: Service = Service::Compute;

/// Hard stop for the every-page lists (a zone has a dozen types, Google ~130 zones).
const MAX_PAGES: usize = 100;

/// Follow `nextPageToken` from the first page of `call` to the last (at most
/// [`MAX_PAGES`]), `max_results` a page.
async fn all_pages<P: Page + DeserializeOwned>(
    http: &GcpHttp,
    call: Call<'_>,
    max_results: Option<u32>,
) -> Result<Vec<P::Item>, GcpError> {
    pages::all_pages::<P>(http, call, max_results, MAX_PAGES).await
}

/// `acceleratorTypes.list` of a zone (a page size and token still to add).
fn accelerator_types<'a>(project: &str, zone: &str) -> Call<'a> {
    let path = format!("projects/{project}/zones/{zone}/acceleratorTypes");
    Call::get(SVC, "acceleratorTypes.list", path)
}

/// `zones.list` of a project (a page size and token still to add).
fn zones<'a>(project: &str) -> Call<'a> {
    Call::get(SVC, "zones.list", format!("projects/{project}/zones"))
}

#[derive(Debug, Clone)]
pub struct Compute {
    pub(super) http: GcpHttp,
}

/// Where a Compute operation lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationScope {
    Global { project: String },
    Region { project: String, region: String },
    Zone { project: String, zone: String },
}

impl OperationScope {
    pub fn global(project: &str) -> OperationScope {
        OperationScope::Global {
            project: project.to_owned(),
        }
    }

    pub fn region(project: &str, region: &str) -> OperationScope {
        OperationScope::Region {
            project: project.to_owned(),
            region: region.to_owned(),
        }
    }

    fn path(&self, name: &str) -> String {
        match self {
            OperationScope::Global { project } => {
                format!("projects/{project}/global/operations/{name}")
            }
            OperationScope::Region { project, region } => {
                format!("projects/{project}/regions/{region}/operations/{name}")
            }
            OperationScope::Zone { project, zone } => {
                format!("projects/{project}/zones/{zone}/operations/{name}")
            }
        }
    }

    fn method(&self) -> &'static str {
        match self {
            OperationScope::Global { .. } => "globalOperations.get",
            OperationScope::Region { .. } => "regionOperations.get",
            OperationScope::Zone { .. } => "zoneOperations.get",
        }
    }
}

/// Scope and name of an operation, from its `selfLink`.
pub fn operation_ref(op: &Operation) -> Option<(OperationScope, String)> {
    let link = op.self_link.as_deref()?;
    let segs: Vec<&str> = link.split('/').collect();
    let i = segs.iter().rposition(|s| *s == "projects")?;
    let project = (*segs.get(i + 1)?).to_owned();
    match segs.get(i + 2..)? {
        ["global", "operations", name] => {
            Some((OperationScope::Global { project }, (*name).to_owned()))
        }
        ["regions", region, "operations", name] => Some((
            OperationScope::Region {
                project,
                region: (*region).to_owned(),
            },
            (*name).to_owned(),
        )),
        ["zones", zone, "operations", name] => Some((
            OperationScope::Zone {
                project,
                zone: (*zone).to_owned(),
            },
            (*name).to_owned(),
        )),
        _ => None,
    }
}

/// The Google method an operation stands for, from its type and target.
pub fn method_of(op: &Operation) -> &'static str {
    let target = op.target_link.as_deref().unwrap_or("");
    let kind = if target.contains("/routers/") {
        "routers"
    } else if target.contains("/networks/") {
        "networks"
    } else {
        ""
    };
    match (kind, op.operation_type.as_str()) {
        ("networks", "insert") => "networks.insert",
        ("networks", "delete") => "networks.delete",
        ("routers", "insert") => "routers.insert",
        ("routers", "delete") => "routers.delete",
        _ => "operations.get",
    }
}

impl Compute {
    pub fn new(http: GcpHttp) -> Compute {
        Compute { http }
    }

    /// A POST of `body` to `path?requestId=` (an insert or an action; a retry with the
    /// same id is deduplicated by Compute), answered with the operation.
    async fn post(
        &self,
        method: &'static str,
        path: String,
        body: &impl Serialize,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let call = Call::post(SVC, method, path).query("requestId", request_id);
        self.http.call(call.json(body)).await
    }

    /// A delete: DELETE `path?requestId=`, answered with the operation.
    async fn delete(
        &self,
        method: &'static str,
        path: String,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let call = Call::delete(SVC, method, path).query("requestId", request_id);
        self.http.call(call).await
    }

    /// `networks.insert`: POST `projects/{p}/global/networks?requestId=`.
    pub async fn insert_network(
        &self,
        project: &str,
        network: &Network,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let path = format!("projects/{project}/global/networks");
        self.post("networks.insert", path, network, request_id)
            .await
    }

    /// `networks.get`.
    pub async fn get_network(&self, project: &str, name: &str) -> Result<Network, GcpError> {
        let path = format!("projects/{project}/global/networks/{name}");
        self.http.get(SVC, "networks.get", path).await
    }

    /// `networks.delete` (400 resourceInUseByAnotherResource while a router or cluster
    /// uses it).
    pub async fn delete_network(
        &self,
        project: &str,
        name: &str,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let path = format!("projects/{project}/global/networks/{name}");
        self.delete("networks.delete", path, request_id).await
    }

    /// `routers.insert`: POST `projects/{p}/regions/{r}/routers?requestId=`.
    pub async fn insert_router(
        &self,
        project: &str,
        region: &str,
        router: &Router,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let path = format!("projects/{project}/regions/{region}/routers");
        self.post("routers.insert", path, router, request_id).await
    }

    /// `routers.get`.
    pub async fn get_router(
        &self,
        project: &str,
        region: &str,
        name: &str,
    ) -> Result<Router, GcpError> {
        let path = format!("projects/{project}/regions/{region}/routers/{name}");
        self.http.get(SVC, "routers.get", path).await
    }

    /// `routers.delete`.
    pub async fn delete_router(
        &self,
        project: &str,
        region: &str,
        name: &str,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let path = format!("projects/{project}/regions/{region}/routers/{name}");
        self.delete("routers.delete", path, request_id).await
    }

    /// `regions.get`: zones and regional quotas (limit and usage are doubles).
    pub async fn get_region(&self, project: &str, region: &str) -> Result<Region, GcpError> {
        let path = format!("projects/{project}/regions/{region}");
        self.http.get(SVC, "regions.get", path).await
    }

    /// `acceleratorTypes.list`, one page.
    pub async fn list_accelerator_types_page(
        &self,
        project: &str,
        zone: &str,
        max_results: Option<u32>,
        page_token: Option<&str>,
    ) -> Result<AcceleratorTypeList, GcpError> {
        let call = accelerator_types(project, zone);
        self.http.call(paged(call, max_results, page_token)).await
    }

    /// `acceleratorTypes.list`, every page.
    pub async fn list_accelerator_types(
        &self,
        project: &str,
        zone: &str,
    ) -> Result<Vec<AcceleratorType>, GcpError> {
        all_pages::<AcceleratorTypeList>(&self.http, accelerator_types(project, zone), None).await
    }

    /// `acceleratorTypes.get`: 404 when the zone does not offer the GPU (or does not exist).
    pub async fn get_accelerator_type(
        &self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<AcceleratorType, GcpError> {
        let path = format!("projects/{project}/zones/{zone}/acceleratorTypes/{name}");
        self.http.get(SVC, "acceleratorTypes.get", path).await
    }

    /// `machineTypes.get`: 404 when the zone does not offer the machine type (GKE's TPU
    /// machine types, `ct5lp-hightpu-4t`, exist only in the zones that have the TPUs).
    pub async fn get_machine_type(
        &self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<MachineType, GcpError> {
        let path = format!("projects/{project}/zones/{zone}/machineTypes/{name}");
        self.http.get(SVC, "machineTypes.get", path).await
    }

    /// `zones.get`: 404 for a zone Compute does not have.
    pub async fn get_zone(&self, project: &str, zone: &str) -> Result<Zone, GcpError> {
        let path = format!("projects/{project}/zones/{zone}");
        self.http.get(SVC, "zones.get", path).await
    }

    /// `zones.list`, one page.
    pub async fn list_zones_page(
        &self,
        project: &str,
        max_results: Option<u32>,
        page_token: Option<&str>,
    ) -> Result<ZoneList, GcpError> {
        self.http
            .call(paged(zones(project), max_results, page_token))
            .await
    }

    /// `zones.list`, every page: every zone the project can use.
    pub async fn list_zones(&self, project: &str) -> Result<Vec<Zone>, GcpError> {
        all_pages::<ZoneList>(&self.http, zones(project), None).await
    }

    /// `regionOperations.get`.
    pub async fn get_region_operation(
        &self,
        project: &str,
        region: &str,
        name: &str,
    ) -> Result<Operation, GcpError> {
        let scope = OperationScope::region(project, region);
        self.get_operation(&scope, name).await
    }

    /// `globalOperations.get`.
    pub async fn get_global_operation(
        &self,
        project: &str,
        name: &str,
    ) -> Result<Operation, GcpError> {
        let scope = OperationScope::global(project);
        self.get_operation(&scope, name).await
    }

    /// `{global,region,zone}Operations.get`.
    pub async fn get_operation(
        &self,
        scope: &OperationScope,
        name: &str,
    ) -> Result<Operation, GcpError> {
        self.http.get(SVC, scope.method(), scope.path(name)).await
    }

    /// Poll `op` (located through its `selfLink`) until DONE; see [`Self::wait_operation_at`].
    pub async fn wait_operation(
        &self,
        op: &Operation,
        cancel: &CancellationToken,
        deadline: Duration,
    ) -> Result<Operation, GcpError> {
        let Some((scope, name)) = operation_ref(op) else {
            return Err(lro::unlocatable(SVC.name(), method_of(op), &op.name));
        };
        self.wait_operation_at(&scope, &name, cancel, deadline)
            .await
    }

    /// Poll an operation until DONE (retrying retryable polling errors), the deadline
    /// (DEADLINE_EXCEEDED, retryable) or cancellation (CANCELLED). DONE with `error`
    /// becomes that error, with `httpErrorStatusCode` as the HTTP status.
    pub async fn wait_operation_at(
        &self,
        scope: &OperationScope,
        name: &str,
        cancel: &CancellationToken,
        deadline: Duration,
    ) -> Result<Operation, GcpError> {
        let policy = LroPolicy::with(self.http.config.poll, deadline);
        let get = || self.get_operation(scope, name);
        lro::finish(
            SVC.name(),
            scope.method(),
            policy,
            cancel,
            get,
            Operation::is_done,
            |done| {
                let err = done.error.as_ref().filter(|e| !e.errors.is_empty())?;
                Some(lro::Failure {
                    http_hint: done
                        .http_error_status_code
                        .and_then(|c| u16::try_from(c).ok()),
                    ..lro::Failure::of(err, method_of(done))
                })
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ref_from_self_link() {
        let op = |l: &str| Operation {
            self_link: Some(l.into()),
            ..Operation::default()
        };
        assert_eq!(
            operation_ref(&op(
                "https://compute.googleapis.com/compute/v1/projects/p/regions/us-central1/operations/operation-1"
            )),
            Some((
                OperationScope::Region {
                    project: "p".into(),
                    region: "us-central1".into()
                },
                "operation-1".into()
            ))
        );
        assert_eq!(
            operation_ref(&op("http://x/compute/v1/projects/p/global/operations/o")),
            Some((
                OperationScope::Global {
                    project: "p".into()
                },
                "o".into()
            ))
        );
        assert_eq!(operation_ref(&op("http://x/compute/v1/projects/p")), None);
    }
}
