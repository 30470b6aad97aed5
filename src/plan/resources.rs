//! The full names of a cluster's resources as the cluster record stores them
//! (`Cluster.resources`): derived from [`ClusterNames`] alone, so they are known (and
//! recorded) before anything is created.

use crate::domain::resource_names::ClusterNames;
use crate::model::ClusterResources;

pub fn cluster_resources(n: &ClusterNames) -> ClusterResources {
    let p = &n.project;
    ClusterResources {
        gke_cluster: Some(n.gke_cluster()),
        network: Some(format!("projects/{p}/global/networks/{}", n.network)),
        router: Some(format!(
            "projects/{p}/regions/{}/routers/{}",
            n.region, n.router
        )),
        nat: Some(format!(
            "projects/{p}/regions/{}/routers/{}/nats/{}",
            n.region, n.router, n.nat
        )),
        artifact_repository: Some(format!(
            "projects/{p}/locations/{}/repositories/{}",
            n.repository_location, n.repository
        )),
        jobs_bucket: Some(format!("projects/_/buckets/{}", n.jobs_bucket)),
        builds_bucket: Some(format!("projects/_/buckets/{}", n.builds_bucket)),
        state_bucket: Some(format!("projects/_/buckets/{}", n.state_bucket)),
        node_service_account: Some(format!(
            "projects/{p}/serviceAccounts/{}",
            n.node_sa_email()
        )),
        build_service_account: Some(format!(
            "projects/{p}/serviceAccounts/{}",
            n.build_sa_email()
        )),
    }
}
