//! Placement advice over a team with many clusters (issue 31):
//! `POST /v1/teams/{team}/placements:search` against the simulator, its median and p99
//! against the 300 ms target (`cargo bench --profile dev --bench placements`; not a
//! test).
//!
//! The real app (HTTP API) runs in this process on a private temporary PostgreSQL and the
//! cloud simulator at speed 0. `KBENCH_CLUSTERS` (default 50) GKE clusters in one region,
//! each with one L4 pool of `KBENCH_NODES` (default 2) nodes, are created through the
//! simulator's GKE API and recorded RUNNING for one team; then `KBENCH_RUNS` (default 30)
//! searches for 4 L4s, each of which reads every cluster's GKE record, nodes and pods,
//! the region's quotas, and per zone its accelerator types, Compute's capacity advice
//! and its reservations, all at once under the search's deadline. Every answer must
//! hold one EXISTING_CAPACITY placement per cluster and no warning (nothing missed the
//! deadline); a median over the target fails the bench.

#[path = "../support/app.rs"]
#[allow(dead_code)] // shared by the benches; this one starts the app only
mod app_support;
#[allow(dead_code)] // shared with the other benches
#[path = "../support/records.rs"]
mod records;
#[path = "../support/mod.rs"]
mod support;

use std::time::Instant;

use anyhow::{Result, bail, ensure};
use kineticd::devdb::PrivatePostgres;
use records::FIRST_POOL as POOL;
use reqwest::Method;
use serde_json::{Value, json};
use support::{OWNER, ZONE, env_or, median};

const TEAM: &str = "place-team";
const PROJECT: &str = "place-proj";
const TARGET_MS: f64 = 300.0;

fn main() -> Result<()> {
    if support::start("placements").is_none() {
        return Ok(());
    }
    kineticd::auth::install_tls_provider();
    let clusters: usize = env_or("KBENCH_CLUSTERS", 50)?;
    let nodes: usize = env_or("KBENCH_NODES", 2)?;
    let runs: usize = env_or("KBENCH_RUNS", 30)?;
    if clusters == 0 || nodes == 0 || runs == 0 {
        bail!("KBENCH_CLUSTERS, KBENCH_NODES and KBENCH_RUNS must be at least 1");
    }
    support::on_private_postgres(async |pg| run(pg, clusters, nodes, runs).await)
}

async fn run(pg: &PrivatePostgres, clusters: usize, nodes: usize, runs: usize) -> Result<()> {
    let app = app_support::start_for_l4_nodes(pg, "kbench_placements", clusters * nodes).await?;
    app_support::call_api(
        &app.http,
        &app.api,
        OWNER,
        Method::POST,
        "/v1/teams",
        json!({"teamId": TEAM, "projects": [PROJECT]}),
    )
    .await?;
    let t = Instant::now();
    let names = (0..clusters).map(|c| format!("p{c:04}")).collect();
    app_support::l4_clusters(&app, PROJECT, ZONE, names, POOL, nodes).await?;
    let mut tx = app.db.begin().await?;
    let at = records::Place::new(PROJECT, ZONE, TEAM, OWNER);
    for c in 0..clusters {
        records::insert_cluster(&mut tx, &at, &format!("p{c:04}"), 1, |_| false).await?;
    }
    tx.commit().await?;
    println!(
        "{clusters} clusters x {nodes} L4 nodes created in the simulator and recorded RUNNING in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let path = format!("/v1/teams/{TEAM}/placements:search");
    let body = json!({"accelerator": "l4", "count": 4});
    let mut times = Vec::with_capacity(runs);
    for i in 0..=runs {
        let t = Instant::now();
        let v = app_support::call_api(
            &app.http,
            &app.api,
            OWNER,
            Method::POST,
            &path,
            body.clone(),
        )
        .await?;
        let secs = t.elapsed().as_secs_f64();
        check(&v, clusters)?;
        // The first search warms the connections (GKE, Kubernetes clients): not counted.
        if i > 0 {
            times.push(secs * 1e3);
        }
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let p99 = sorted[((sorted.len() as f64 * 0.99).ceil() as usize).clamp(1, sorted.len()) - 1];
    let med = median(times);
    println!(
        "placements:search over {clusters} clusters ({runs} runs): median {med:.1} ms, p99 {p99:.1} ms (target: median under {TARGET_MS:.0} ms)"
    );
    ensure!(med < TARGET_MS, "median {med:.1} ms is over {TARGET_MS} ms");
    Ok(())
}

/// One EXISTING_CAPACITY placement per cluster (every node is free), NEW_POOL zones
/// after them, and nothing unread.
fn check(v: &Value, clusters: usize) -> Result<()> {
    let p = v["placements"].as_array().cloned().unwrap_or_default();
    let existing = p
        .iter()
        .filter(|x| x["kind"] == "EXISTING_CAPACITY")
        .count();
    ensure!(existing == clusters, "{existing} existing placements: {v}");
    ensure!(
        p.iter().any(|x| x["kind"] == "NEW_POOL"),
        "no new pool placement: {v}"
    );
    ensure!(v["warnings"] == json!([]), "warnings: {}", v["warnings"]);
    Ok(())
}
