//! The team policy's cost on a preview and an apply (`cargo bench --bench policy`; not a
//! test), beside the provision bench.
//!
//! The real app (HTTP API) runs in this process on a private temporary PostgreSQL and the
//! cloud simulator. A team holds `KBENCH_CLUSTERS` RUNNING clusters of
//! `KBENCH_POOLS` L4 pools each (default 8 x 8: the policy counts every one). It then
//! previews a pool add (`POST .../nodePools?validateOnly=true`) `KBENCH_RUNS` times
//! (default 200) with no policy set, and as many times with a policy setting every
//! limit, and reports:
//!
//! - the SQL statements of one preview and of one apply, and how many of them are the
//!   policy's (the statement that reads the policy and the usage: `usage_seq`): the issue
//!   allows the check one round trip;
//! - the median preview latency with and without a policy, and the median of the
//!   policy's statement alone, against the median of `SELECT 1` on the same connection
//!   pool in the same run (one round trip, measured here, not assumed).

#[allow(dead_code)] // shared with the other benches
#[path = "../support/app.rs"]
mod app_support;
#[path = "../api_reads/count.rs"]
mod count;
#[allow(dead_code)] // shared with the other benches
#[path = "../support/records.rs"]
mod records;
#[path = "../support/mod.rs"]
mod support;

use anyhow::{Result, bail};
use kineticd::devdb::PrivatePostgres;
use reqwest::Method;
use serde_json::{Value, json};
use support::{OWNER, PROJECT, TEAM, ZONE, env_or, median_seconds};

/// What marks the policy's statement in sqlx's log.
const MARKER: &str = "usage_seq";

fn main() -> Result<()> {
    if support::bench_args("policy").is_none() {
        return Ok(());
    }
    count::init();
    kineticd::auth::install_tls_provider();
    let runs: usize = env_or("KBENCH_RUNS", 200)?;
    let clusters: usize = env_or("KBENCH_CLUSTERS", 8)?;
    let pools: usize = env_or("KBENCH_POOLS", 8)?;
    if runs == 0 || clusters == 0 {
        bail!("KBENCH_RUNS and KBENCH_CLUSTERS must be at least 1");
    }
    support::on_private_postgres(async |pg| run(pg, runs, clusters, pools).await)
}

async fn run(pg: &PrivatePostgres, runs: usize, clusters: usize, pools: usize) -> Result<()> {
    let app = app_support::start(pg, "kbench_policy", 100.0, |_| {}).await?;
    let call = |m: Method, path: String, body: Value| {
        let (http, api) = (app.http.clone(), app.api.clone());
        async move { app_support::call_api(&http, &api, OWNER, m, &path, body).await }
    };
    call(
        Method::POST,
        "/v1/teams".into(),
        json!({"teamId": TEAM, "projects": [PROJECT]}),
    )
    .await?;
    let mut tx = app.db.begin().await?;
    let at = records::Place::new(PROJECT, ZONE, TEAM, OWNER);
    for c in 0..clusters {
        records::insert_cluster(&mut tx, &at, &format!("c{c}"), pools, |k| k % 2 == 0).await?;
    }
    tx.commit().await?;
    let pools_path = format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/c0/nodePools");
    let preview_path = format!("{pools_path}?validateOnly=true");
    let ask = json!({"accelerator": "gpu-l4"});
    let preview = || call(Method::POST, preview_path.clone(), ask.clone());

    // Warm the connections and the simulator's catalogue.
    for _ in 0..10 {
        preview().await?;
    }
    let (plan, all, marked) = count::counting_marked(MARKER, preview()).await;
    let verdict = plan?["policy"]["verdict"].clone();
    println!(
        "team: {clusters} clusters x {pools} pools; preview: {all} statements, {marked} of them the policy's (verdict {verdict})"
    );
    let without = median_seconds(runs, preview).await?;

    call(
        Method::PATCH,
        format!("/v1/teams/{TEAM}/policy"),
        json!({
            "allowedAccelerators": ["gpu-l4", "gpu-a100", "tpu-v5litepod"],
            "allowedZones": [ZONE, "us-central1-b"],
            "allowedProvisioning": ["ON_DEMAND", "SPOT"],
            "maxAccelerators": {"gpu-l4": 100_000, "gpu-a100": 64},
            "maxClusters": 1000, "maxNodePools": 10_000,
            "maxHourlyCostUsd": 1_000_000.0, "approvalAboveHourlyCostUsd": 1_000_000.0,
            "monthlyBudgetUsd": 1e9
        }),
    )
    .await?;
    let (plan, all_p, marked_p) = count::counting_marked(MARKER, preview()).await;
    let v = plan?["policy"].clone();
    println!("with every limit set: {all_p} statements, {marked_p} of them the policy's ({v})");
    let with = median_seconds(runs, preview).await?;

    let (op, all_a, marked_a) =
        count::counting_marked(MARKER, call(Method::POST, pools_path.clone(), ask.clone())).await;
    let op = op?;
    println!(
        "apply (pool add, {}): {all_a} statements, {marked_a} of them the policy's",
        op["metadata"]["state"]
    );

    // One round trip, and the policy's statement alone, on the app's pool.
    let trip = median_seconds(runs, || async {
        sqlx::query("SELECT 1").execute(&app.db).await?;
        Ok(Value::Null)
    })
    .await?;
    let standing = median_seconds(runs, || async {
        kineticd::store::policies::standing(&app.db, TEAM).await?;
        Ok(Value::Null)
    })
    .await?;
    let ms = |x: f64| x * 1e3;
    println!(
        "preview median: {:.2} ms without a policy, {:.2} ms with one ({:+.2} ms)",
        ms(without),
        ms(with),
        ms(with - without)
    );
    println!(
        "policy statement median: {:.3} ms; SELECT 1 median: {:.3} ms; ratio {:.2} (the statement reads {} pools)",
        ms(standing),
        ms(trip),
        standing / trip,
        clusters * pools
    );
    if marked != 1 || marked_p != 1 || marked_a != 1 {
        bail!(
            "the policy check took {marked}/{marked_p}/{marked_a} statements (preview, preview with a policy, apply); it may take one"
        );
    }
    Ok(())
}
