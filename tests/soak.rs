//! Crash soak under cloud faults (issue 15, hardening 1): `kineticd serve` processes,
//! their Google and Kubernetes clients pointed at a simulator that answers 429 or 503 to
//! 20% of calls and never answers 5% of them, are SIGKILLed at random moments while
//! several clusters go through every mutating operation (up, pool add, resize, drill,
//! pool remove, down). The short form runs here; `scripts/long-soak.sh` runs 50
//! operations of every type with more kills.
//!
//! What must hold once the last process finished the queue:
//! - every operation reached a final state, and none that a retryable fault caused
//!   ended FAILED (429, 503 and timeouts are retried with backoff);
//! - no operation stayed RUNNING on an expired lease while a process was up to take it;
//! - the journal shows no resource created twice, and nothing created that no record
//!   names;
//! - the simulated cloud holds exactly the clusters and node pools (with their
//!   autoscaling bounds) that the records hold.

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

#[path = "soak/checks.rs"]
mod checks;
#[path = "soak/config.rs"]
mod config;
#[path = "soak/report.rs"]
mod report;
#[path = "soak/run.rs"]
mod run;
#[path = "soak/script.rs"]
mod script;

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::Value;

use config::SoakConfig;
use script::{Kind, Outcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkills_under_cloud_faults_leave_records_and_cloud_in_agreement() {
    let cfg = SoakConfig::from_env();
    println!(
        "soak: seed {} (replay with KINETIC_SOAK_SEED={}), {cfg:?}",
        cfg.seed, cfg.seed
    );
    let started = Instant::now();
    let report = run::run(&cfg).await;
    let db = &report.db;
    let log = &report.log;

    // Every operation ended.
    let unfinished = serve_process::chaos::unfinished(db).await;
    assert_eq!(unfinished, 0, "operations left unfinished; log: {log}");
    assert!(
        report.max_overdue_seconds < report.stuck_after_seconds,
        "an operation stayed RUNNING {:.1} s past its lease while a process was up; log: {log}",
        report.max_overdue_seconds
    );

    // Outcomes by type and state, and every failure's reason.
    let rows: Vec<(String, String, Option<Value>, i32)> = sqlx::query_as(
        "SELECT op_type, state, error, attempt FROM operations ORDER BY create_time",
    )
    .fetch_all(db)
    .await
    .expect("operations");
    if std::env::var_os("KINETIC_SOAK_VERBOSE").is_some() {
        report::steps(db).await;
    }
    let mut by_type: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (t, state, error, _) in &rows {
        *by_type.entry((t.clone(), state.clone())).or_default() += 1;
        if state == "FAILED" {
            failures.push((t.clone(), error.clone().unwrap_or(Value::Null)));
        }
    }
    let resumed = rows.iter().filter(|r| r.3 > 1).count();
    let mut refused = Vec::new();
    let mut skipped = 0;
    let mut sent: BTreeMap<Kind, usize> = BTreeMap::new();
    for s in &report.scripts {
        for (k, o) in &s.outcomes {
            match o {
                Outcome::Ran { op, state, error } => {
                    *sent.entry(*k).or_default() += 1;
                    if state != "SUCCEEDED" {
                        println!("soak: {} {k:?} {op} ended {state}: {error}", s.cluster);
                    }
                }
                Outcome::Refused { status, reason } => {
                    refused.push(format!("{} {k:?}: {status} {reason}", s.cluster));
                }
                Outcome::Skipped => skipped += 1,
            }
        }
    }
    let mut planned: BTreeMap<Kind, usize> = BTreeMap::new();
    for s in &report.scripts {
        for (k, n) in s.planned() {
            *planned.entry(k).or_default() += n;
        }
    }
    for k in Kind::ALL {
        let ended: Vec<String> = by_type
            .iter()
            .filter(|((t, _), _)| t == k.op_type())
            .map(|((_, state), n)| format!("{n} {state}"))
            .collect();
        println!(
            "soak: {:<17} planned {:>3}, sent {:>3}, ended {}",
            k.op_type(),
            planned.get(&k).copied().unwrap_or(0),
            sent.get(&k).copied().unwrap_or(0),
            ended.join(", ")
        );
    }
    println!(
        "soak: {} operations; {resumed} resumed after a kill; {} kills; {skipped} skipped; \
         refused {refused:?}; max lease overdue {:.1} s; {:.0} s",
        rows.len(),
        report.kills,
        report.max_overdue_seconds,
        started.elapsed().as_secs_f64()
    );
    for (t, e) in &failures {
        println!("soak: FAILED {t}: {e}");
    }
    assert!(refused.is_empty(), "requests refused at once: {refused:?}");
    assert!(
        failures.is_empty(),
        "operations FAILED although only retryable faults were armed: {failures:#?}; log: {log}"
    );
    assert!(
        resumed > 0,
        "no operation was resumed: the kills interrupted nothing"
    );

    // The journal: nothing created twice, nothing created that no record names.
    let http = kineticd::app::http_client().expect("http client");
    let life = checks::lifecycle(&http, &report.sim_url).await;
    println!("soak: successful creates {:?}", life.creates);
    assert!(
        life.duplicates.is_empty(),
        "resources created twice: {:#?}",
        life.duplicates
    );
    // A pool is created by its own step (`pool:<id>`) of an up or a pool add: the plan
    // the caller saw. A create no plan named is a duplicate under another name.
    let planned_pools: Vec<(String, String)> = sqlx::query_as(
        "SELECT o.input->>'cluster', substr(s->>'id', 6) FROM operations o, \
         json_array_elements(o.steps) s \
         WHERE o.op_type IN ('UP_CLUSTER', 'ADD_NODE_POOL') AND s->>'id' LIKE 'pool:%'",
    )
    .fetch_all(db)
    .await
    .expect("every planned pool");
    for (cluster, pool) in &life.gke_pools {
        assert!(
            planned_pools.contains(&(cluster.clone(), pool.clone())),
            "node pool {cluster}/{pool} was created but no operation planned it"
        );
    }

    // The cloud equals the records.
    let cloud = checks::cloud_clusters(&http, &report.sim_url).await;
    let records = checks::recorded_clusters(db).await;
    for (name, (_, state, _)) in &records {
        assert_eq!(state, "RUNNING", "cluster {name} recorded {state}");
    }
    // Every GKE cluster has its default (system) pool, created with it and not a pool
    // record (as `status` and `diagnose` treat it).
    let default_pool = kineticd::ops::workflows::cluster::wire::DEFAULT_POOL;
    let cloud_view: BTreeMap<_, _> = cloud
        .iter()
        .map(|(n, (zone, _, pools))| {
            let mut pools = pools.clone();
            assert!(
                pools.remove(default_pool).is_some(),
                "GKE cluster {n} has no {default_pool}: {pools:?}"
            );
            (n.clone(), (zone.clone(), pools))
        })
        .collect();
    let record_view: BTreeMap<_, _> = records
        .iter()
        .map(|(n, (zone, _, pools))| (n.clone(), (zone.clone(), pools.clone())))
        .collect();
    assert_eq!(
        cloud_view, record_view,
        "the simulated cloud (left) differs from the records (right)"
    );
    for (name, (_, status, _)) in &cloud {
        assert_eq!(status, "RUNNING", "GKE cluster {name} is {status}");
    }
    assert!(
        !records.is_empty(),
        "no cluster left standing: the comparison checked nothing"
    );
    report.log_path_cleanup();
}
