//! `down` (DELETE a cluster): everything `up` made goes, except the APIs, the state
//! bucket and the profiles. With `forceDestroy: false` it refuses at once while a
//! bucket holds objects, naming them.

use crate::cloud::Cloud;
use crate::cloud::gcp::storage::ListObjects;
use crate::domain::ClusterState;
use crate::ops::queue::Idempotency;
use crate::ops::workflows::cluster::DOWN;
use crate::plan::down::{DownInput, plan};
use crate::store::{self, Db};

use super::super::clusters::ClusterPath;
use super::super::{Caller, Error, Result};
use super::{Begin, OpRequest, Submitted, begin, live, names, operation};

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
                return Err(Error::precondition(
                    "BUCKET_CHECK_FAILED",
                    format!("could not check whether bucket {b} is empty ({e}); try again"),
                ));
            }
        }
    }
    Ok(out)
}

pub async fn down(
    db: &Db,
    cloud: &Cloud,
    caller: &Caller,
    path: &ClusterPath,
    validate_only: bool,
    idempotency: Option<Idempotency>,
) -> Result<Submitted> {
    let (team, cluster) = match begin(
        db,
        caller,
        path,
        "running down",
        validate_only,
        idempotency.as_ref(),
    )
    .await?
    {
        Begin::Repeat(op) => return Ok(Submitted::Operation(op)),
        Begin::Go { team, cluster } => (team, cluster),
    };
    let c = live(cluster, path)?;
    let n = names(path);
    let force_destroy = c.spec.force_destroy;
    if !force_destroy {
        let full = non_empty(cloud, &[&n.jobs_bucket, &n.builds_bucket]).await?;
        if !full.is_empty() {
            return Err(Error::precondition(
                "BUCKETS_NOT_EMPTY",
                format!(
                    "cluster {} has forceDestroy: false and these buckets still hold objects: {}. Empty them, or PUT the cluster with forceDestroy: true, then run down again",
                    path.name(),
                    full.join(", ")
                ),
            )
            .with("buckets", full.join(",")));
        }
    }
    let pools: Vec<String> = store::node_pools::list(db, c.id, None, 10_000)
        .await?
        .into_iter()
        .map(|p| p.pool_id)
        .collect();
    let p = plan(&DownInput {
        names: &n,
        pools: &pools,
        force_destroy,
    });
    if validate_only {
        return Ok(Submitted::Plan(p));
    }
    let mut tx = db.begin().await.map_err(store::StoreError::from)?;
    let c = super::lock(&mut tx, path).await?;
    store::clusters::set_state(&mut *tx, c.id, ClusterState::Deleting, false).await?;
    let enq = operation(
        OpRequest {
            op_type: DOWN,
            path,
            target: path.name(),
            team: &team,
            caller,
            cluster_id: c.id,
            pools,
            new_cluster: false,
            request: serde_json::json!({"forceDestroy": force_destroy}),
            idempotency,
        },
        &p,
    );
    Ok(Submitted::Operation(Box::new(
        super::enqueue(tx, &enq).await?,
    )))
}
