//! Ensure steps for the GKE cluster and its accelerator node pools.
//!
//! Invariant: a pool is always built from its record ([`wire::node_pool`]), never from
//! the request or from GKE's current state; a cluster or pool in progress is waited
//! for, not created again.

use serde_json::Value;

use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::lro;
use crate::cloud::gcp::types::container::{Cluster, NodePool, Operation};
use crate::ops::steps::{RpcCode, StepError};
use crate::store::{self, PoolSpecRecord};

use super::results::{ClusterReady, Outcome, PoolReady, outcome, result};
use super::step::Step;
use super::{gcp_error, store_error, wire};
use crate::plan::ActionId;

fn in_progress(status: Option<&str>) -> bool {
    matches!(status, Some("PROVISIONING" | "RECONCILING"))
}

fn broken(what: &str, name: &str, status: &str, message: Option<&str>) -> StepError {
    StepError::terminal(
        RpcCode::FailedPrecondition,
        "GKE_RESOURCE_BROKEN",
        format!(
            "{what} {name} is {status}{}: delete it (down, or pool remove) and try again",
            message.map(|m| format!(" ({m})")).unwrap_or_default()
        ),
    )
    .with("resource", name)
    .with("gkeStatus", status)
    .was(&format!("GKE_{status}"))
}

impl<Id: ActionId> Step<'_, Id> {
    fn location(&self) -> (&str, &str, &str) {
        (&self.names.project, &self.names.zone, &self.names.cluster)
    }

    /// Poll `get` (the `method` named) until what it returns is out of PROVISIONING /
    /// RECONCILING.
    async fn settle<T: Resource, F: Future<Output = Result<T, GcpError>>>(
        &self,
        method: &'static str,
        get: impl FnMut() -> F,
    ) -> Result<T, StepError> {
        let policy = self.env.timing.lro_policy();
        let done = |r: &T| !in_progress(r.status());
        lro::wait_until("container", method, policy, &self.ctx.cancel, get, done)
            .await
            .map_err(gcp_error)
    }

    async fn settle_cluster(&self) -> Result<Cluster, StepError> {
        let (p, z, c) = self.location();
        let gke = &self.env.cloud.gcp.container;
        self.settle("clusters.get", || gke.get_cluster(p, z, c))
            .await
    }

    /// The running GKE cluster (for Kubernetes steps).
    pub async fn running_cluster(&self) -> Result<Cluster, StepError> {
        let c = self.settle_cluster().await?;
        match c.status.as_deref() {
            Some("RUNNING") => Ok(c),
            other => Err(StepError::retryable(
                RpcCode::Unavailable,
                "CLUSTER_NOT_READY",
                format!(
                    "cluster {} is {}",
                    c.name,
                    other.unwrap_or("in an unknown state")
                ),
            )
            .was("CLUSTER_NOT_RUNNING")),
        }
    }
}

/// GKE leaves a cluster or pool whose creation failed (quota, stockout) in ERROR: one of
/// ours in that state is deleted and created again from the records.
fn failed_in_gke(status: Option<&str>) -> bool {
    status == Some("ERROR")
}

/// A GKE cluster or node pool, as an ensure step checks what it found.
trait Resource {
    /// How errors name it.
    const WHAT: &'static str;
    /// Why one that is not ours is rejected.
    const NOT_OURS: &'static str;
    fn ours(&self) -> bool;
    fn status(&self) -> Option<&str>;
    fn status_message(&self) -> Option<&str>;
}

impl Resource for Cluster {
    const WHAT: &'static str = "GKE cluster";
    const NOT_OURS: &'static str = "it has no label kinetic=true";
    fn ours(&self) -> bool {
        wire::is_ours(&self.resource_labels)
    }
    fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }
    fn status_message(&self) -> Option<&str> {
        self.status_message.as_deref()
    }
}

impl Resource for NodePool {
    const WHAT: &'static str = "node pool";
    const NOT_OURS: &'static str = "its nodes lack the label kinetic=true";
    fn ours(&self) -> bool {
        self.config
            .as_ref()
            .is_some_and(|c| wire::is_ours(&c.labels))
    }
    fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }
    fn status_message(&self) -> Option<&str> {
        self.status_message.as_deref()
    }
}

/// The status of a settled resource, which must be RUNNING.
fn running<T: Resource>(name: &str, settled: &T) -> Result<String, StepError> {
    let status = settled.status().unwrap_or("UNKNOWN");
    if status != "RUNNING" {
        return Err(broken(T::WHAT, name, status, settled.status_message()));
    }
    Ok(status.to_owned())
}

impl<Id: ActionId> Step<'_, Id> {
    /// What an ensure step does about what `get` found: `None` to adopt it (ours and
    /// usable); else the outcome creating it will have: `Created` when it is missing,
    /// `Recreated` when it is ours but failed in GKE (`remove` deletes it first).
    async fn to_create<T: Resource>(
        &self,
        name: &str,
        got: Result<T, GcpError>,
        remove: impl Future<Output = Result<bool, StepError>>,
    ) -> Result<Option<Outcome>, StepError> {
        match got {
            Ok(existing) if !existing.ours() => Err(self.foreign(T::WHAT, name, T::NOT_OURS)),
            Ok(existing) if failed_in_gke(existing.status()) => {
                remove.await?;
                Ok(Some(Outcome::Recreated))
            }
            Ok(_) => Ok(None),
            Err(e) if e.is_not_found() => Ok(Some(Outcome::Created)),
            Err(e) => Err(gcp_error(e)),
        }
    }

    /// Wait for a create sent to finish: `outcome`, or `Adopted` when the resource
    /// already exists (created by an attempt whose answer was lost).
    async fn created(
        &self,
        sent: Result<Operation, GcpError>,
        outcome: Outcome,
    ) -> Result<Outcome, StepError> {
        match sent {
            Ok(op) => self.finish(&op).await.map(|()| outcome),
            Err(e) if e.is_already_exists() => Ok(Outcome::Adopted),
            Err(e) => Err(gcp_error(e)),
        }
    }

    /// Wait for a delete sent to finish; false when there was nothing to delete.
    async fn deleted(&self, sent: Result<Operation, GcpError>) -> Result<bool, StepError> {
        match sent {
            Ok(op) => self.finish(&op).await.map(|()| true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(gcp_error(e)),
        }
    }

    async fn finish(&self, op: &Operation) -> Result<(), StepError> {
        let gke = &self.env.cloud.gcp.container;
        gke.wait_operation(op, &self.ctx.cancel, self.env.timing.lro)
            .await
            .map_err(gcp_error)?;
        Ok(())
    }
}

pub async fn ensure_cluster(s: &Step<'_>) -> Result<Value, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    let got = gke.get_cluster(p, z, c).await;
    let found = match s.to_create(c, got, remove_cluster(s)).await? {
        Some(outcome) => {
            let sent = gke.create_cluster(p, z, &wire::cluster(s.names)).await;
            s.created(sent, outcome).await?
        }
        None => Outcome::Adopted,
    };
    let cluster = s.settle_cluster().await?;
    let status = running(c, &cluster)?;
    if let Some(endpoint) = &cluster.endpoint {
        store::clusters::set_endpoint(&s.env.db, s.cluster_id, endpoint)
            .await
            .map_err(store_error)?;
    }
    result(ClusterReady {
        outcome: found,
        endpoint: cluster.endpoint.clone(),
        status,
    })
}

/// Delete the cluster and wait until it is gone; false when it was not there.
async fn remove_cluster(s: &Step<'_>) -> Result<bool, StepError> {
    let (p, z, c) = s.location();
    s.deleted(s.env.cloud.gcp.container.delete_cluster(p, z, c).await)
        .await
}

pub async fn delete_cluster(s: &Step<'_>) -> Result<Value, StepError> {
    let (p, z, c) = s.location();
    match s.env.cloud.gcp.container.get_cluster(p, z, c).await {
        Ok(existing) if !wire::is_ours(&existing.resource_labels) => {
            Err(s.foreign("GKE cluster", c, "it has no label kinetic=true"))
        }
        Ok(existing) => {
            // GKE refuses a delete while an operation (an abandoned create, say) still
            // runs on the cluster ("Please wait and try again once it is done"): wait.
            if in_progress(existing.status.as_deref()) {
                match s.settle_cluster().await {
                    Err(e) if e.code == RpcCode::NotFound => return outcome(Outcome::Absent),
                    settled => settled.map(drop)?,
                }
            }
            outcome(if remove_cluster(s).await? {
                Outcome::Deleted
            } else {
                Outcome::Absent
            })
        }
        Err(e) if e.is_not_found() => outcome(Outcome::Absent),
        Err(e) => Err(gcp_error(e)),
    }
}

async fn pool_record<Id: ActionId>(
    s: &Step<'_, Id>,
    pool: &str,
) -> Result<PoolSpecRecord, StepError> {
    super::recorded_pool(
        s.env,
        s.cluster_id,
        pool,
        ": add it with POST .../nodePools",
    )
    .await
}

pub async fn ensure_pool<Id: ActionId>(s: &Step<'_, Id>, pool: &str) -> Result<Value, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    let spec = pool_record(s, pool).await?;
    let got = gke.get_node_pool(p, z, c, pool).await;
    let found = match s.to_create(pool, got, remove_pool(s, pool)).await? {
        Some(outcome) => {
            super::reservation::check(s, &spec).await?;
            let sent = gke
                .create_node_pool(p, z, c, &wire::node_pool(s.names, &spec))
                .await;
            s.created(sent, outcome).await?
        }
        None => Outcome::Adopted,
    };
    let np = s
        .settle("nodePools.get", || gke.get_node_pool(p, z, c, pool))
        .await?;
    result(PoolReady {
        outcome: found,
        status: running(pool, &np)?,
        queued: super::queued::template(&spec),
    })
}

pub async fn delete_pool<Id: ActionId>(s: &Step<'_, Id>, pool: &str) -> Result<Value, StepError> {
    let existed = remove_pool(s, pool).await?;
    outcome(if existed {
        Outcome::Deleted
    } else {
        Outcome::Absent
    })
}

/// Delete the pool and wait until it is gone; false when it was not there.
async fn remove_pool<Id: ActionId>(s: &Step<'_, Id>, pool: &str) -> Result<bool, StepError> {
    let (p, z, c) = s.location();
    let gke = &s.env.cloud.gcp.container;
    match gke.get_node_pool(p, z, c, pool).await {
        Ok(np) if np.status.as_deref() == Some("STOPPING") => {}
        Ok(np) => {
            // As for the cluster: a pool still being created or changed is waited for.
            if in_progress(np.status.as_deref()) {
                match s
                    .settle("nodePools.get", || gke.get_node_pool(p, z, c, pool))
                    .await
                {
                    Err(e) if e.code == RpcCode::NotFound => return Ok(false),
                    settled => settled.map(drop)?,
                }
            }
            return s.deleted(gke.delete_node_pool(p, z, c, pool).await).await;
        }
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
