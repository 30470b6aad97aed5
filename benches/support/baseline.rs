//! The read benchmarks' baseline (api_reads, and scale's small database and the core of
//! its big one): one team `bench` owned by [`OWNER`] with a VIEWER [`READER`], 4
//! projects x 50 RUNNING clusters x 3 L4 node pools, and 1,000 queued NOOP operations,
//! all written through the store and the queue ([`crate::records`]).
//!
//! Invariant: the same records every time, so figures from different benches compare;
//! [`Target`] names records that exist once [`fill`] returns.

#![allow(dead_code)]

use anyhow::Result;
use kineticd::store::{Db, teams};

use crate::records;

pub const TEAM: &str = "bench";
pub const OWNER: &str = "owner@example.com";
/// A VIEWER of `bench` only: every read pays a member's authorisation.
pub const READER: &str = "reader@example.com";
pub const ZONE: &str = "us-central1-a";
pub const PROJECTS: usize = 4;
pub const CLUSTERS_PER_PROJECT: usize = 50;
pub const POOLS_PER_CLUSTER: usize = 3;
pub const OPERATIONS: usize = 1_000;

/// The records the timed reads name.
#[derive(Debug, Clone)]
pub struct Target {
    /// The id of the middle operation.
    pub operation: String,
    pub project: String,
    pub zone: String,
    pub cluster: String,
}

/// Writes the baseline into `db` (migrated, empty).
pub async fn fill(db: &Db) -> Result<Target> {
    let projects: Vec<String> = (0..PROJECTS).map(|i| format!("bench-proj-{i}")).collect();
    let mut tx = db.begin().await?;
    teams::insert_team(&mut tx, TEAM, "Bench", &projects, OWNER).await?;
    teams::upsert_member(&mut tx, TEAM, READER, "VIEWER").await?;
    for p in &projects {
        let at = records::Place::new(p, ZONE, TEAM, OWNER);
        for c in 0..CLUSTERS_PER_PROJECT {
            let name = format!("c-{c:03}");
            records::insert_cluster(&mut tx, &at, &name, POOLS_PER_CLUSTER, |_| false).await?;
        }
    }
    tx.commit().await?;
    let mut middle = String::new();
    for i in 0..OPERATIONS {
        let target = format!(
            "projects/{}/zones/{ZONE}/clusters/c-{:03}",
            projects[i % PROJECTS],
            i % CLUSTERS_PER_PROJECT
        );
        let id = records::enqueue_noop(db, TEAM, OWNER, format!("bench-{i}"), target).await?;
        if i == OPERATIONS / 2 {
            middle = id;
        }
    }
    Ok(Target {
        operation: middle,
        project: projects[1].clone(),
        zone: ZONE.into(),
        cluster: "c-025".into(),
    })
}
