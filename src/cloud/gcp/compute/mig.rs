//! Compute's zonal managed instance groups (the VMs behind a GKE node pool, named by the
//! pool's `instanceGroupUrls`): list a group's instances, delete some of them.
//!
//! Invariant: one method per Google call; `deleteInstances` carries a `requestId`, so a
//! retried call (same id) is deduplicated by Compute instead of deleting twice.

use uuid::Uuid;

use super::super::error::GcpError;
use super::super::http::Call;
use super::super::types::compute::Operation;
use super::super::types::mig::{DeleteInstancesRequest, ManagedInstance, ManagedInstanceList};
use super::{Compute, SVC, all_pages};

/// A zonal managed instance group, as an `instanceGroupUrls` entry names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigRef {
    pub project: String,
    pub zone: String,
    pub name: String,
}

impl MigRef {
    /// From `.../projects/{p}/zones/{z}/instanceGroupManagers/{name}` (a URL or a path);
    /// `None` for anything else (a regional group, another resource).
    pub fn parse(url: &str) -> Option<MigRef> {
        let segs: Vec<&str> = url.split('/').collect();
        let i = segs.iter().rposition(|s| *s == "projects")?;
        match segs.get(i + 1..)? {
            [project, "zones", zone, "instanceGroupManagers", name]
                if !project.is_empty() && !zone.is_empty() && !name.is_empty() =>
            {
                Some(MigRef {
                    project: (*project).to_owned(),
                    zone: (*zone).to_owned(),
                    name: (*name).to_owned(),
                })
            }
            _ => None,
        }
    }

    /// `instanceGroupManagers.listManagedInstances` of the group: a POST without a body
    /// (a page size and token still to add).
    fn list_managed_instances<'a>(&self) -> Call<'a> {
        let method = "instanceGroupManagers.listManagedInstances";
        Call::post(SVC, method, self.path("listManagedInstances"))
    }

    fn path(&self, verb: &str) -> String {
        format!(
            "projects/{}/zones/{}/instanceGroupManagers/{}/{verb}",
            self.project, self.zone, self.name
        )
    }
}

impl Compute {
    /// Every managed instance of the group, all pages.
    pub async fn list_managed_instances(
        &self,
        mig: &MigRef,
    ) -> Result<Vec<ManagedInstance>, GcpError> {
        let call = mig.list_managed_instances();
        all_pages::<ManagedInstanceList>(&self.http, call, Some(500)).await
    }

    /// `instanceGroupManagers.deleteInstances`: the group deletes the VMs (and lowers its
    /// target size by as many); a zonal operation.
    pub async fn delete_instances(
        &self,
        mig: &MigRef,
        req: &DeleteInstancesRequest,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let method = "instanceGroupManagers.deleteInstances";
        self.post(method, mig.path("deleteInstances"), req, request_id)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_urls() {
        let m = MigRef::parse("https://compute.googleapis.com/compute/v1/projects/p1/zones/us-central1-a/instanceGroupManagers/gke-kc-pool-grp").unwrap();
        assert_eq!(
            m,
            MigRef {
                project: "p1".into(),
                zone: "us-central1-a".into(),
                name: "gke-kc-pool-grp".into()
            }
        );
        assert_eq!(
            m.path("deleteInstances"),
            "projects/p1/zones/us-central1-a/instanceGroupManagers/gke-kc-pool-grp/deleteInstances"
        );
        assert!(MigRef::parse("projects/p1/regions/r/instanceGroupManagers/x").is_none());
        assert!(MigRef::parse("projects/p1/zones/z/instanceGroups/x").is_none());
    }
}
