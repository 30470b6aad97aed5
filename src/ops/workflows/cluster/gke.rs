//! Ensure steps for the GKE cluster and its accelerator node pools.
//!
//! Invariant: a pool is always built from its record ([`wire::node_pool`]), never from
//! the request or from GKE's current state; a cluster or pool in progress is waited
//! for, not created again.

use serde_json::Value;

use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::lro;
use crate::cloud::gcp::types::container::{Cluster, NodePool};
use crate::ops::steps::{RpcCode, StepError};
use crate::store::{self, PoolSpecRecord};

use super::exec::Step;
use super::results::{ClusterReady, Outcome, PoolReady, outcome, result};
use super::{gcp_error, store_error, wire};

fn in_progress(status: Option<&str>) -> bool {
    matches!(status, Some("PROVISIONING" | "RECONCILING"))
}

fn broken(what: &str, name: &str, status: &str, message: Option<&str>) -> StepError {
    StepError::terminal(
        RpcCode::FailedPrecondition,
        &format!("GKE_{status}"),
        format!(
            "{what} {name} is {status}{}: delete it (down, or pool remove) and try again",
            message.map(|m| format!(" ({m})")).unwrap_or_default()
        ),
    )
    .with("resource", name)
}

impl Step<'_> {
    fn location(&self) -> (&str, &str, &str) {
        (&self.names.project, &self.names.zone, &self.names.cluster)
    }

    /// Poll `clusters.get` until the cluster is out of PROVISIONING / RECONCILING.
    async fn settle_cluster(&self) -> Result<Cluster, GcpError> {
        let (p, z, c) = self.location();
        let gke = &self.env.cloud.gcp.container;
        lro::wait_until(
            "container",
            "clusters.get",
            self.env.timing.lro_policy(),
            &self.ctx.cancel,
            || gke.get_cluster(p, z, c),
            |c: &Cluster| !in_progress(c.status.as_deref()),
        )
        .await
    }

    async fn settle_pool(&self, pool: &str) -> Result<NodePool, GcpError> {
        let (p, z, c) = self.location();
        let gke = &self.env.cloud.gcp.container;
        lro::wait_until(
            "container",
            "nodePools.get",
            self.env.timing.lro_policy(),
            &self.ctx.cancel,
            || gke.get_node_pool(p, z, c, pool),
            |np: &NodePool| !in_progress(np.status.as_deref()),
        )
        .await
    }

    /// The running GKE cluster (for Kubernetes steps).
    pub async fn running_cluster(&self) -> Result<Cluster, StepError> {
        let c = self.settle_cluster().await.map_err(gcp_error)?;
        match c.status.as_deref() {
            Some("RUNNING") => Ok(c),
            other => Err(StepError::retryable(
                RpcCode::Unavailable,
                "CLUSTER_NOT_RUNNING",
                format!(
                    "cluster {} is {}",
                    c.name,
                    other.unwrap_or("in an unknown state")
                ),
            )),
        }
    }
}

/// GKE leaves a cluster or pool whose creation failed (quota, stockout) in ERROR: one of
/// ours in that state is deleted and created again from the records.
fn failed_in_gke(status: Option<&str>) -> bool {
    status == Some("ERROR")
}

pub async fn ensure_cluster(s: &Step<'_>) -> Result<Value, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    let mut found = Outcome::Adopted;
    let missing = match gke.get_cluster(p, z, c).await {
        Ok(existing) => {
            if !wire::is_ours(&existing.resource_labels) {
                return Err(s.foreign("GKE cluster", c, "it has no label kinetic=true"));
            }
            if failed_in_gke(existing.status.as_deref()) {
                remove_cluster(s).await?;
                found = Outcome::Recreated;
                true
            } else {
                false
            }
        }
        Err(e) if e.is_not_found() => {
            found = Outcome::Created;
            true
        }
        Err(e) => return Err(gcp_error(e)),
    };
    if missing {
        match gke.create_cluster(p, z, &wire::cluster(s.names)).await {
            Ok(op) => {
                gke.wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                    .await
                    .map_err(gcp_error)?;
            }
            // Created by an attempt whose answer was lost: adopt it.
            Err(e) if e.is_already_exists() => found = Outcome::Adopted,
            Err(e) => return Err(gcp_error(e)),
        }
    }
    let cluster = s.settle_cluster().await.map_err(gcp_error)?;
    let status = cluster.status.as_deref().unwrap_or("UNKNOWN");
    if status != "RUNNING" {
        return Err(broken(
            "GKE cluster",
            c,
            status,
            cluster.status_message.as_deref(),
        ));
    }
    if let Some(endpoint) = &cluster.endpoint {
        store::clusters::set_endpoint(&s.env.db, s.input.cluster_id, endpoint)
            .await
            .map_err(store_error)?;
    }
    result(ClusterReady {
        outcome: found,
        endpoint: cluster.endpoint.clone(),
        status: status.to_owned(),
    })
}

/// Delete the cluster and wait until it is gone; false when it was not there.
async fn remove_cluster(s: &Step<'_>) -> Result<bool, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    match gke.delete_cluster(p, z, c).await {
        Ok(op) => {
            gke.wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                .await
                .map_err(gcp_error)?;
            Ok(true)
        }
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(gcp_error(e)),
    }
}

pub async fn delete_cluster(s: &Step<'_>) -> Result<Value, StepError> {
    let (p, z, c) = s.location();
    match s.env.cloud.gcp.container.get_cluster(p, z, c).await {
        Ok(existing) if !wire::is_ours(&existing.resource_labels) => {
            Err(s.foreign("GKE cluster", c, "it has no label kinetic=true"))
        }
        Ok(_) => outcome(if remove_cluster(s).await? {
            Outcome::Deleted
        } else {
            Outcome::Absent
        }),
        Err(e) if e.is_not_found() => outcome(Outcome::Absent),
        Err(e) => Err(gcp_error(e)),
    }
}

async fn pool_record(s: &Step<'_>, pool: &str) -> Result<PoolSpecRecord, StepError> {
    let rec = store::node_pools::get(&s.env.db, s.input.cluster_id, pool)
        .await
        .map_err(store_error)?
        .ok_or_else(|| {
            StepError::terminal(
                RpcCode::FailedPrecondition,
                "NODE_POOL_NOT_RECORDED",
                format!("node pool {pool} has no record: add it with POST .../nodePools"),
            )
        })?;
    let mut spec = rec.spec;
    spec.pool_id = pool.to_owned();
    Ok(spec)
}

pub async fn ensure_pool(s: &Step<'_>, pool: &str) -> Result<Value, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    let spec = pool_record(s, pool).await?;
    let mut found = Outcome::Adopted;
    let missing = match gke.get_node_pool(p, z, c, pool).await {
        Ok(existing) => {
            let labels = existing.config.map(|c| c.labels).unwrap_or_default();
            if !wire::is_ours(&labels) {
                return Err(s.foreign("node pool", pool, "its nodes lack the label kinetic=true"));
            }
            if failed_in_gke(existing.status.as_deref()) {
                remove_pool(s, pool).await?;
                found = Outcome::Recreated;
                true
            } else {
                false
            }
        }
        Err(e) if e.is_not_found() => {
            found = Outcome::Created;
            true
        }
        Err(e) => return Err(gcp_error(e)),
    };
    if missing {
        let want = wire::node_pool(s.names, &spec);
        match gke.create_node_pool(p, z, c, &want).await {
            Ok(op) => {
                gke.wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                    .await
                    .map_err(gcp_error)?;
            }
            Err(e) if e.is_already_exists() => found = Outcome::Adopted,
            Err(e) => return Err(gcp_error(e)),
        }
    }
    let np = s.settle_pool(pool).await.map_err(gcp_error)?;
    let status = np.status.as_deref().unwrap_or("UNKNOWN");
    if status != "RUNNING" {
        return Err(broken(
            "node pool",
            pool,
            status,
            np.status_message.as_deref(),
        ));
    }
    result(PoolReady {
        outcome: found,
        status: status.to_owned(),
    })
}

pub async fn delete_pool(s: &Step<'_>, pool: &str) -> Result<Value, StepError> {
    let existed = remove_pool(s, pool).await?;
    outcome(if existed {
        Outcome::Deleted
    } else {
        Outcome::Absent
    })
}

/// Delete the pool and wait until it is gone; false when it was not there.
async fn remove_pool(s: &Step<'_>, pool: &str) -> Result<bool, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    match gke.get_node_pool(p, z, c, pool).await {
        Ok(np) if np.status.as_deref() == Some("STOPPING") => {}
        Ok(_) => match gke.delete_node_pool(p, z, c, pool).await {
            Ok(op) => {
                gke.wait_operation(&op, &s.ctx.cancel, s.env.timing.lro)
                    .await
                    .map_err(gcp_error)?;
                return Ok(true);
            }
            Err(e) if e.is_not_found() => return Ok(false),
            Err(e) => return Err(gcp_error(e)),
        },
        Err(e) if e.is_not_found() => return Ok(false),
        Err(e) => return Err(gcp_error(e)),
    }
    // Someone else's delete is in flight: wait for the pool to be gone.
    let gone = lro::wait_until(
        "container",
        "nodePools.get",
        s.env.timing.lro_policy(),
        &s.ctx.cancel,
        || async {
            match gke.get_node_pool(p, z, c, pool).await {
                Ok(_) => Ok(false),
                Err(e) if e.is_not_found() => Ok(true),
                Err(e) => Err(e),
            }
        },
        |gone: &bool| *gone,
    )
    .await;
    gone.map_err(gcp_error)?;
    Ok(true)
}
