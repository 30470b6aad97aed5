//! GKE (container.googleapis.com v1) client: clusters, node pools and their operations.
//!
//! Invariant: one method per Google call, typed with [`crate::cloud::gcp::types::container`];
//! every error is a classified [`GcpError`]; [`Container::wait_operation`] never reports
//! success for an operation that ended DONE with an `error` (the error keeps GKE's reason,
//! e.g. `QUOTA_EXCEEDED` or `GCE_STOCKOUT`).

use std::time::Duration;

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::config::Service;
use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::lro::{self, LroPolicy};
use super::types::container::{
    Cluster, CreateClusterRequest, CreateNodePoolRequest, ListClustersResponse,
    ListNodePoolsResponse, NodePool, NodePoolAutoscaling, Operation, SetNodePoolAutoscalingRequest,
    SetNodePoolSizeRequest,
};

const SVC: Service = Service::Container;

#[derive(Debug, Clone)]
pub struct Container {
    pub(super) http: GcpHttp,
}

fn parent(project: &str, location: &str) -> String {
    format!("projects/{project}/locations/{location}")
}

fn cluster_path(project: &str, location: &str, cluster: &str) -> String {
    format!("{}/clusters/{cluster}", parent(project, location))
}

fn pool_path(project: &str, location: &str, cluster: &str, pool: &str) -> String {
    format!(
        "{}/nodePools/{pool}",
        cluster_path(project, location, cluster)
    )
}

/// The Google method an operation type stands for (for errors and metrics).
pub fn method_of(operation_type: &str) -> &'static str {
    match operation_type {
        "CREATE_CLUSTER" => "clusters.create",
        "DELETE_CLUSTER" => "clusters.delete",
        "CREATE_NODE_POOL" => "nodePools.create",
        "DELETE_NODE_POOL" => "nodePools.delete",
        "SET_NODE_POOL_SIZE" => "nodePools.setSize",
        _ => "operations.get",
    }
}

/// `(project, location, name)` of an operation, from its `selfLink`
/// (`.../projects/{p}/{zones|locations}/{l}/operations/{name}`).
pub fn operation_ref(op: &Operation) -> Option<(String, String, String)> {
    let link = op.self_link.as_deref()?;
    let segs: Vec<&str> = link.split('/').collect();
    let i = segs.iter().rposition(|s| *s == "projects")?;
    match segs.get(i + 1..i + 6)? {
        [p, "zones" | "locations", l, "operations", name] if !p.is_empty() && !name.is_empty() => {
            Some(((*p).to_owned(), (*l).to_owned(), (*name).to_owned()))
        }
        _ => None,
    }
}

impl Container {
    pub fn new(http: GcpHttp) -> Container {
        Container { http }
    }

    /// A POST of `body` to `path` (a create, or a `:verb` action), answered with the
    /// operation.
    async fn post(
        &self,
        method: &'static str,
        path: String,
        body: &impl Serialize,
    ) -> Result<Operation, GcpError> {
        self.http
            .call(Call::post(SVC, method, path).json(body))
            .await
    }

    /// A DELETE of `path`, answered with the operation.
    async fn delete(&self, method: &'static str, path: String) -> Result<Operation, GcpError> {
        self.http.call(Call::delete(SVC, method, path)).await
    }

    /// `clusters.create`: POST `projects/{p}/locations/{l}/clusters` `{"cluster": ...}`.
    pub async fn create_cluster(
        &self,
        project: &str,
        location: &str,
        cluster: &Cluster,
    ) -> Result<Operation, GcpError> {
        let body = CreateClusterRequest {
            cluster: Some(cluster.clone()),
        };
        let path = format!("{}/clusters", parent(project, location));
        self.post("clusters.create", path, &body).await
    }

    /// `clusters.get`.
    pub async fn get_cluster(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
    ) -> Result<Cluster, GcpError> {
        let path = cluster_path(project, location, cluster);
        self.http.get(SVC, "clusters.get", path).await
    }

    /// `clusters.delete`.
    pub async fn delete_cluster(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
    ) -> Result<Operation, GcpError> {
        let path = cluster_path(project, location, cluster);
        self.delete("clusters.delete", path).await
    }

    /// `clusters.list` of `location` (`-`: every location; GKE does not page it).
    pub async fn list_clusters(
        &self,
        project: &str,
        location: &str,
    ) -> Result<ListClustersResponse, GcpError> {
        let path = format!("{}/clusters", parent(project, location));
        self.http.get(SVC, "clusters.list", path).await
    }

    /// `nodePools.create`: POST `.../clusters/{c}/nodePools` `{"nodePool": ...}`.
    pub async fn create_node_pool(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
        pool: &NodePool,
    ) -> Result<Operation, GcpError> {
        let body = CreateNodePoolRequest {
            node_pool: Some(pool.clone()),
        };
        let path = format!("{}/nodePools", cluster_path(project, location, cluster));
        self.post("nodePools.create", path, &body).await
    }

    /// `nodePools.get`.
    pub async fn get_node_pool(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
        pool: &str,
    ) -> Result<NodePool, GcpError> {
        let path = pool_path(project, location, cluster, pool);
        self.http.get(SVC, "nodePools.get", path).await
    }

    /// `nodePools.list` (GKE does not page node pools).
    pub async fn list_node_pools(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
    ) -> Result<Vec<NodePool>, GcpError> {
        let path = format!("{}/nodePools", cluster_path(project, location, cluster));
        let r: ListNodePoolsResponse = self.http.get(SVC, "nodePools.list", path).await?;
        Ok(r.node_pools)
    }

    /// `nodePools.delete`.
    pub async fn delete_node_pool(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
        pool: &str,
    ) -> Result<Operation, GcpError> {
        let path = pool_path(project, location, cluster, pool);
        self.delete("nodePools.delete", path).await
    }

    /// `nodePools.setSize`: POST `.../nodePools/{np}:setSize` `{"nodeCount": N}` (per zone).
    pub async fn set_node_pool_size(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
        pool: &str,
        node_count: i32,
    ) -> Result<Operation, GcpError> {
        let body = SetNodePoolSizeRequest {
            node_count: Some(node_count),
        };
        let path = format!("{}:setSize", pool_path(project, location, cluster, pool));
        self.post("nodePools.setSize", path, &body).await
    }

    /// `nodePools.setAutoscaling`: POST `.../nodePools/{np}:setAutoscaling`
    /// `{"autoscaling": {...}, "name": ...}` (min/max per zone; replaces the whole config).
    pub async fn set_node_pool_autoscaling(
        &self,
        project: &str,
        location: &str,
        cluster: &str,
        pool: &str,
        autoscaling: &NodePoolAutoscaling,
    ) -> Result<Operation, GcpError> {
        let name = pool_path(project, location, cluster, pool);
        let body = SetNodePoolAutoscalingRequest {
            autoscaling: Some(autoscaling.clone()),
            name: Some(name.clone()),
        };
        let path = format!("{name}:setAutoscaling");
        self.post("nodePools.setAutoscaling", path, &body).await
    }

    /// `operations.get`: GET `projects/{p}/locations/{l}/operations/{name}`.
    pub async fn get_operation(
        &self,
        project: &str,
        location: &str,
        name: &str,
    ) -> Result<Operation, GcpError> {
        let path = format!("{}/operations/{name}", parent(project, location));
        self.http.get(SVC, "operations.get", path).await
    }

    /// Poll `op` (located through its `selfLink`) until DONE; see [`Self::wait_operation_at`].
    pub async fn wait_operation(
        &self,
        op: &Operation,
        cancel: &CancellationToken,
        deadline: Duration,
    ) -> Result<Operation, GcpError> {
        let Some((project, location, name)) = operation_ref(op) else {
            let method = method_of(&op.operation_type);
            return Err(lro::unlocatable(SVC.name(), method, &op.name));
        };
        self.wait_operation_at(&project, &location, &name, cancel, deadline)
            .await
    }

    /// Poll an operation by name until DONE (retrying retryable polling errors), the
    /// deadline (DEADLINE_EXCEEDED, retryable) or cancellation (CANCELLED). A DONE
    /// operation with an `error` becomes that error ([`GcpError::from_operation`]).
    pub async fn wait_operation_at(
        &self,
        project: &str,
        location: &str,
        name: &str,
        cancel: &CancellationToken,
        deadline: Duration,
    ) -> Result<Operation, GcpError> {
        let policy = LroPolicy::with(self.http.config.poll, deadline);
        let get = || self.get_operation(project, location, name);
        lro::finish(
            SVC.name(),
            "operations.get",
            policy,
            cancel,
            get,
            Operation::is_done,
            |done| {
                let err = done.error.as_ref()?;
                Some(lro::Failure::of(err, method_of(&done.operation_type)))
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
        let op = Operation {
            self_link: Some(
                "https://container.googleapis.com/v1/projects/123/zones/us-central1-a/operations/operation-1-ab"
                    .into(),
            ),
            ..Operation::default()
        };
        assert_eq!(
            operation_ref(&op),
            Some((
                "123".into(),
                "us-central1-a".into(),
                "operation-1-ab".into()
            ))
        );
        let op = Operation {
            self_link: Some(
                "http://127.0.0.1:1/container/v1/projects/p/locations/europe-west4/operations/op"
                    .into(),
            ),
            ..Operation::default()
        };
        assert_eq!(operation_ref(&op).map(|r| r.1), Some("europe-west4".into()));
        assert_eq!(operation_ref(&Operation::default()), None);
    }
}
