//! Records written through the store for the read benchmarks (api_reads, scale,
//! console): RUNNING clusters with GPU node pools, and queued NOOP operations.
//!
//! Invariant: every record is written by the production store functions, so the reads
//! measured see exactly what the service would have written.

use anyhow::Result;
use kineticd::domain::{ClusterState, OperationType, PoolState};
use kineticd::ops::queue::{self, Enqueue};
use kineticd::ops::workflows::noop::{self, NoopSpec};
use kineticd::store::{self, ClusterSpecRecord, Db, PoolSpecRecord};
use serde_json::json;

/// Where a cluster goes and who owns it.
pub struct Place<'a> {
    pub project: &'a str,
    pub zone: &'a str,
    pub team: &'a str,
    pub owner: &'a str,
}

impl<'a> Place<'a> {
    pub fn new(project: &'a str, zone: &'a str, team: &'a str, owner: &'a str) -> Self {
        Place {
            project,
            zone,
            team,
            owner,
        }
    }
}

/// The first pool [`insert_cluster`] records.
#[allow(dead_code)] // named by some of the benches that include this file
pub const FIRST_POOL: &str = "gpu-l4-0000";

/// A RUNNING gpu-l4 cluster `name` with `pools` L4 pools ([`FIRST_POOL`], ...); pool `k`
/// is spot when `spot(k)`.
pub async fn insert_cluster(
    tx: &mut sqlx::PgConnection,
    at: &Place<'_>,
    name: &str,
    pools: usize,
    spot: impl Fn(usize) -> bool,
) -> Result<()> {
    let (project, zone) = (at.project, at.zone);
    let rec = store::clusters::insert(
        &mut *tx,
        store::clusters::NewCluster {
            project_id: project,
            zone,
            name,
            team_id: at.team,
            state: ClusterState::Running,
            spec: ClusterSpecRecord {
                accelerator: Some("gpu-l4".into()),
                ..Default::default()
            },
            resources: json!({"gkeCluster": format!("projects/{project}/locations/{zone}/clusters/{name}")}),
            created_by: at.owner,
        },
    )
    .await?;
    for k in 0..pools {
        let id = format!("gpu-l4-{k:04}");
        let spec: PoolSpecRecord = serde_json::from_value(json!({
            "poolId": id, "accelerator": "gpu-l4", "kind": "GPU",
            "machineType": "g2-standard-8", "gkeAcceleratorType": "nvidia-l4",
            "acceleratorCount": 1, "minNodes": 0, "maxNodes": 4, "spot": spot(k),
            "zones": [zone], "labels": {}, "taints": []
        }))?;
        store::node_pools::insert(
            &mut *tx,
            rec.id,
            &id,
            PoolState::Running,
            &spec,
            "test@example.com",
        )
        .await?;
    }
    Ok(())
}

/// Queues a default NOOP operation on `target` for `team`; returns its id.
pub async fn enqueue_noop(
    db: &Db,
    team: &str,
    owner: &str,
    serial_key: String,
    target: String,
) -> Result<String> {
    let spec = NoopSpec::default();
    let e = queue::enqueue(
        db,
        &Enqueue {
            op_type: OperationType::Noop,
            serial_key,
            target,
            team_id: team.to_owned(),
            cluster_id: None,
            created_by: owner.to_owned(),
            input: queue::input_of::<noop::Noop>(&spec)
                .map_err(|e| anyhow::anyhow!("NOOP input: {e}"))?,
            plan: None,
            steps: spec.steps(),
            idempotency: None,
        },
    )
    .await
    .map_err(|e| anyhow::anyhow!("enqueue: {e}"))?;
    Ok(e.op.id.to_string())
}
