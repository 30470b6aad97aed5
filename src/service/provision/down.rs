//! `down` (DELETE a cluster): everything `up` made goes, except the APIs, the state
//! bucket and the profiles. With `forceDestroy: false` it refuses at once while a
//! bucket holds objects, naming them.

use crate::cloud::Cloud;
use crate::cloud::gcp::storage::ListObjects;
use crate::domain::ClusterState;
use crate::ops::workflows::cluster::{Down, Provisioning};
use crate::plan::down::{DownInput, plan};
use crate::store::{self, clusters::ClusterRecord};

use super::super::{Error, Result, Services};
use super::{Begin, Mutation, OpRequest, Plan, Submitted, begin, live, submit, transaction};

/// Buckets that still hold objects (a bucket that does not exist counts as empty).
async fn non_empty(cloud: &Cloud, buckets: &[&str]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for b in buckets {
        let q = ListObjects {
            max_results: Some(1),
            ..Default::default()
        };
        match cloud.gcp.storage.list_objects(b, &q).await {
            Ok(page) if !page.items.is_empty() => out.push(b.to_string()),
            Ok(_) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                // Transient as far as the caller can tell: 503 with Retry-After, not 409.
                return Err(Error::unavailable(
                    "CLOUD_UNAVAILABLE",
                    format!("could not check whether bucket {b} is empty ({e}); try again"),
                    5,
                )
                .with("service", e.service)
                .with("method", e.method)
                .with("cloudReason", &e.reason)
                .was("BUCKET_CHECK_FAILED"));
            }
        }
    }
    Ok(out)
}

/// `down`: the cluster and everything `up` made for it go.
pub async fn down(svc: &Services, m: &Mutation) -> Result<Submitted> {
    let (team, cluster) = match begin(&svc.db, m, "running down").await? {
        Begin::Repeat(op) => return Ok(Submitted::Operation(op)),
        Begin::Go { team, cluster } => (team, cluster),
    };
    let c = live(cluster, &m.path)?;
    let force_destroy = c.spec.force_destroy;
    if !force_destroy {
        refuse_full_buckets(&svc.cloud, m).await?;
    }
    let (pools, p) = down_plan(svc, m, &c, force_destroy).await?;
    if m.validate_only {
        return Ok(Submitted::Plan(p));
    }
    let mut tx = transaction(&svc.db).await?;
    let c = super::lock(&mut tx, m).await?;
    store::clusters::set_state(&mut *tx, c.id, ClusterState::Deleting, false).await?;
    let op = OpRequest {
        target: m.path.name(),
        team: &team,
        cluster_id: c.id,
        pools,
        new_cluster: false,
        request: serde_json::json!({"forceDestroy": force_destroy}),
    };
    submit::<Provisioning<Down>, _>(tx, m, op, &p).await
}

/// With `forceDestroy: false`, refuse at once while a bucket holds objects, naming them.
async fn refuse_full_buckets(cloud: &Cloud, m: &Mutation) -> Result<()> {
    let n = m.names();
    let full = non_empty(cloud, &[&n.jobs_bucket, &n.builds_bucket]).await?;
    if full.is_empty() {
        return Ok(());
    }
    Err(Error::precondition(
        "BUCKETS_NOT_EMPTY",
        format!(
            "cluster {} has forceDestroy: false and these buckets still hold objects: {}. Empty them, or PUT the cluster with forceDestroy: true, then run down again",
            m.path.name(),
            full.join(", ")
        ),
    )
    .with("buckets", full.join(",")))
}

/// The cluster's pools and the plan that deletes them and the rest.
async fn down_plan(
    svc: &Services,
    m: &Mutation,
    c: &ClusterRecord,
    force_destroy: bool,
) -> Result<(Vec<String>, Plan)> {
    let pools: Vec<String> = store::node_pools::list(&svc.db, c.id, None, 10_000)
        .await?
        .into_iter()
        .map(|p| p.pool_id)
        .collect();
    let p = plan(&DownInput {
        names: &m.names(),
        pools: &pools,
        force_destroy,
    });
    Ok((pools, p))
}
