//! Crash safety of the operation engine, end to end: the real `kineticd` binary is
//! SIGKILLed over and over while it runs NOOP operations on a real PostgreSQL, then a
//! final process finishes the queue.
//!
//! What must hold afterwards (the engine's contract, see `src/ops/mod.rs`):
//! - every operation SUCCEEDED (nothing accepted is lost);
//! - every step's effect was committed exactly once (`noop_effects` has one row per
//!   (operation, step), and no other row), although steps were interrupted and re-run;
//! - chained steps still see their predecessors' results after a resume;
//! - operations of one target ran one at a time, in creation order;
//! - the kills really interrupted work (some operations were claimed more than once).

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use serve_process::chaos::{Rng, unfinished, wait_leases_expired};
use serve_process::{LogPath, Server};

const OWNER: &str = "crash-owner@example.com";
const TEAM: &str = "crash-team";
const TARGETS: usize = 6;
const OPERATIONS: usize = 36;
const KILLS: usize = 22;
const WORKERS: &str = "2";

/// The environment of the crash tests' servers: `workers` workers, the NOOP workflow,
/// 1 s leases (a killed process's work is resumed quickly), JSON logs, then `extra`.
fn crash_env<'a>(workers: &str, extra: &[(&'a str, String)]) -> Vec<(&'a str, String)> {
    let mut env = vec![
        ("KINETIC_TEST_WORKFLOWS", "true".to_owned()),
        ("KINETIC_WORKERS", workers.to_owned()),
        ("KINETIC_LEASE_SECONDS", "1".to_owned()),
        ("KINETIC_LOG_FORMAT", "json".to_owned()),
        ("KINETIC_DB_MAX_CONNECTIONS", "10".to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ];
    env.extend(extra.iter().cloned());
    env
}

/// A healthy `kineticd serve` with [`crash_env`].
async fn start_server(
    db_url: &str,
    workers: &str,
    log: &File,
    http: &reqwest::Client,
    log_path: &LogPath,
    extra: &[(&str, String)],
) -> Server {
    Server::start_healthy(db_url, log, log_path, http, &crash_env(workers, extra)).await
}

async fn post(http: &reqwest::Client, server: &Server, path: &str, body: Value) -> Value {
    let r = http
        .post(server.url(path))
        .header("x-kinetic-user", OWNER)
        .json(&body)
        .send()
        .await
        .expect("request");
    let status = r.status();
    let body: Value = r.json().await.expect("JSON body");
    assert!(status.is_success(), "POST {path}: {status} {body}");
    body
}

#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: Uuid,
    target: String,
    state: String,
    attempt: i32,
    steps: Value,
    create_time: DateTime<Utc>,
    start_time: Option<DateTime<Utc>>,
    end_time: Option<DateTime<Utc>>,
}

/// `kineticd_lease_rescues_total` as `server` reports it.
async fn lease_rescues(http: &reqwest::Client, server: &Server) -> f64 {
    let text = server.scrape(http).await;
    text.lines()
        .find_map(|l| l.strip_prefix("kineticd_lease_rescues_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no kineticd_lease_rescues_total:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loop_loses_nothing_and_applies_every_effect_once() {
    let started = Instant::now();
    let (db, url) = common::fresh_db().await;
    let http = kineticd::app::http_client().expect("http client");
    let (log_path, log) = LogPath::temp("crash");
    let mut rng = Rng(0x6b69_6e65_7469_6364);

    // Set up through the API of a process without workers: a team and the operations.
    let mut expected_steps: HashMap<Uuid, (u32, bool)> = HashMap::new();
    {
        let mut setup = start_server(&url, "0", &log, &http, &log_path, &[]).await;
        post(
            &http,
            &setup,
            "/v1/teams",
            json!({"teamId": TEAM, "projects": []}),
        )
        .await;
        for i in 0..OPERATIONS {
            let steps = rng.range(6, 8) as u32;
            let step_millis = rng.range(80, 150);
            let parallel = i % 6 == 5;
            let op = post(
                &http,
                &setup,
                "/v1/testing/noopOperations",
                json!({
                    "team": TEAM,
                    "target": format!("crash/target-{}", i % TARGETS),
                    "steps": steps,
                    "stepMillis": step_millis,
                    "parallel": parallel,
                }),
            )
            .await;
            let name = op["name"].as_str().expect("operation name");
            let id = Uuid::parse_str(name.trim_start_matches("operations/")).expect("uuid");
            expected_steps.insert(id, (steps, parallel));
        }
        setup.kill();
    }
    let total_steps: i64 = expected_steps.values().map(|(n, _)| i64::from(*n)).sum();

    // The kill loop.
    let mut progress = Vec::new();
    for _ in 0..KILLS {
        let mut server = start_server(&url, WORKERS, &log, &http, &log_path, &[]).await;
        let run_ms = rng.range(150, 900);
        tokio::time::sleep(Duration::from_millis(run_ms)).await;
        server.kill();
        drop(server);
        let left = unfinished(&db).await;
        progress.push(format!("{run_ms}ms->{left}"));
        wait_leases_expired(&db).await;
    }
    let interrupted_at = unfinished(&db).await;

    // A final process finishes the queue, taking over what the last kill left leased.
    let abandoned: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM operations \
         WHERE end_time IS NULL AND state <> 'QUEUED' AND lease_owner IS NOT NULL",
    )
    .fetch_one(&db)
    .await
    .expect("count abandoned leases");
    let mut last = start_server(&url, WORKERS, &log, &http, &log_path, &[]).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if unfinished(&db).await == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "operations still unfinished after 120 s; progress {progress:?}; log: {log_path}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Each take-over of an abandoned lease is counted as a rescue.
    let rescues = lease_rescues(&http, &last).await;
    assert!(
        rescues >= abandoned as f64,
        "{abandoned} abandoned leases, {rescues} rescues counted"
    );
    last.kill();
    drop(last);

    let rows: Vec<Row> = sqlx::query_as(
        "SELECT id, target, state, attempt, steps, create_time, start_time, end_time \
         FROM operations ORDER BY create_time, id",
    )
    .fetch_all(&db)
    .await
    .expect("read operations");
    assert_eq!(rows.len(), OPERATIONS);

    // Every operation succeeded, with every step DONE; chains kept their results.
    for r in &rows {
        assert_eq!(r.state, "SUCCEEDED", "operation {} ended {}", r.id, r.state);
        let (n, parallel) = expected_steps[&r.id];
        let steps = r.steps.as_array().expect("steps array");
        assert_eq!(steps.len(), n as usize, "operation {}", r.id);
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(s["state"], "DONE", "operation {} step {i}: {s}", r.id);
            let chain = if parallel { 1 } else { i as u64 + 1 };
            assert_eq!(
                s["result"]["chain"].as_u64(),
                Some(chain),
                "operation {} step {i} result (a resumed step must read its predecessor's \
                 stored result): {s}",
                r.id
            );
        }
    }

    // Exactly one effect per (operation, step), and nothing else.
    let counts = kineticd::store::operations::noop_effect_counts(&db)
        .await
        .expect("effect counts");
    let mut seen: BTreeMap<(Uuid, String), i64> = BTreeMap::new();
    for (op, step, count) in &counts {
        assert_eq!(
            *count, 1,
            "effect of operation {op} step {step} committed {count} times"
        );
        assert!(
            expected_steps.contains_key(op),
            "effect for unknown operation {op}"
        );
        seen.insert((*op, step.clone()), *count);
    }
    for (id, (n, _)) in &expected_steps {
        for i in 0..*n {
            assert!(
                seen.contains_key(&(*id, format!("step-{i}"))),
                "operation {id} step-{i} has no effect"
            );
        }
    }
    let effect_rows: i64 = sqlx::query_scalar("SELECT count(*) FROM noop_effects")
        .fetch_one(&db)
        .await
        .expect("count effects");
    assert_eq!(effect_rows, total_steps);

    // Per target: one at a time, in creation order.
    let mut by_target: BTreeMap<&str, Vec<&Row>> = BTreeMap::new();
    for r in &rows {
        by_target.entry(&r.target).or_default().push(r);
    }
    assert_eq!(by_target.len(), TARGETS);
    for (target, ops) in &by_target {
        for pair in ops.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            assert!(a.create_time <= b.create_time);
            let (a_end, b_end) = (a.end_time.unwrap(), b.end_time.unwrap());
            assert!(
                a_end < b_end,
                "{target}: {} (created first) ended at {a_end}, after {} ended at {b_end}",
                a.id,
                b.id
            );
            let b_start = b.start_time.expect("start_time of a finished operation");
            assert!(
                b_start >= a_end,
                "{target}: {} started at {b_start} before {} ended at {a_end}",
                b.id,
                a.id
            );
        }
    }

    // The kills interrupted real work.
    let resumed = rows.iter().filter(|r| r.attempt > 1).count();
    assert!(
        resumed > 0,
        "no operation was claimed twice: the kills interrupted nothing ({progress:?})"
    );
    assert!(
        interrupted_at < OPERATIONS as i64,
        "the kill loop made no progress at all ({progress:?}); log: {log_path}"
    );
    println!(
        "crash: {KILLS} kills, {resumed}/{OPERATIONS} operations resumed (max attempt {}), \
         {interrupted_at} unfinished when the kills stopped ({abandoned} leased, {rescues} \
         lease rescues counted), progress {progress:?}, {:.1} s",
        rows.iter().map(|r| r.attempt).max().unwrap_or(0),
        started.elapsed().as_secs_f64()
    );
    drop(log);
    log_path.remove();
}

/// The provisioning workflows under the same treatment: `kineticd serve` (production
/// mode, its cloud clients pointed at a simulator that outlives it) is SIGKILLed
/// repeatedly during an `up`; the operation still succeeds and every Google resource
/// was created exactly once (resume, not restart; ensure steps adopt what an
/// interrupted attempt created).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_up_creates_every_resource_exactly_once() {
    let (db, url) = common::fresh_db().await;
    // Virtual time 20x real time: GKE's minutes become seconds, so kills land mid-step.
    let (sim, _) = kineticd::sim::Sim::start(
        kineticd::sim::SimConfig {
            clock: kineticd::sim::clock::ClockMode::Auto { speed: 20.0 },
            ..Default::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("simulator");
    // What `kineticd sim` prints for a separate `kineticd serve`.
    let sim_env = sim.serve_env();
    let extra: Vec<(&str, String)> = sim_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.clone()))
        .collect();
    let http = kineticd::app::http_client().expect("http client");
    let (log_path, log) = LogPath::temp("crash-up");
    let mut rng = Rng(0x7570_2d63_7261_7368);

    let op_id = {
        let mut setup = start_server(&url, "0", &log, &http, &log_path, &extra).await;
        post(
            &http,
            &setup,
            "/v1/teams",
            json!({"teamId": TEAM, "projects": ["crash-proj"]}),
        )
        .await;
        let r = http
            .put(setup.url("/v1/projects/crash-proj/zones/us-central1-a/clusters/kc"))
            .header("x-kinetic-user", OWNER)
            .json(&json!({"accelerator": "gpu-l4"}))
            .send()
            .await
            .expect("up");
        assert_eq!(r.status(), reqwest::StatusCode::ACCEPTED);
        let op: Value = r.json().await.expect("operation");
        setup.kill();
        Uuid::parse_str(
            op["name"]
                .as_str()
                .unwrap()
                .trim_start_matches("operations/"),
        )
        .unwrap()
    };

    let mut kills = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    while unfinished(&db).await > 0 {
        assert!(
            Instant::now() < deadline,
            "up unfinished after 180 s; log: {log_path}"
        );
        let mut server = start_server(&url, WORKERS, &log, &http, &log_path, &extra).await;
        if kills < 8 {
            tokio::time::sleep(Duration::from_millis(rng.range(200, 900))).await;
            server.kill();
            kills += 1;
            wait_leases_expired(&db).await;
        } else {
            while unfinished(&db).await > 0 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    let (state, attempt, error): (String, i32, Option<Value>) =
        sqlx::query_as("SELECT state, attempt, error FROM operations WHERE id = $1")
            .bind(op_id)
            .fetch_one(&db)
            .await
            .expect("operation row");
    assert_eq!(state, "SUCCEEDED", "error {error:?}; log: {log_path}");
    assert!(
        attempt > 1,
        "the kills never interrupted the operation (attempt {attempt})"
    );

    let journal = serve_process::journal::sim_journal(&http, &sim.url(), &[]).await;
    let created = |method: &str| {
        journal
            .iter()
            .filter(|e| e["method"] == method && e["status"].as_u64().is_some_and(|s| s < 300))
            .count()
    };
    for (method, n) in [
        ("buckets.insert", 3),
        ("networks.insert", 1),
        ("routers.insert", 1),
        ("serviceAccounts.create", 2),
        ("repositories.create", 1),
        ("clusters.create", 1),
        ("nodePools.create", 1),
    ] {
        assert_eq!(
            created(method),
            n,
            "{method} (after {kills} kills, attempt {attempt})"
        );
    }
    let cluster: String = sqlx::query_scalar("SELECT state FROM clusters WHERE name = 'kc'")
        .fetch_one(&db)
        .await
        .expect("cluster row");
    assert_eq!(cluster, "RUNNING");
    log_path.remove();
}
