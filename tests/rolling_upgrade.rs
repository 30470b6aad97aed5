//! A rolling upgrade with operations in flight: two `kineticd serve` replicas
//! (production mode, two workers each) share one PostgreSQL and one `kineticd sim`.
//! Operations of every type the API enqueues (up of a new cluster, pool add, up again
//! to reconcile, pool remove, down) are requested through both replicas; once replica A
//! is in the middle of creating a GKE cluster it gets SIGTERM, and a replacement A'
//! starts on the same database while A drains.
//!
//! What must hold afterwards:
//! - every operation SUCCEEDED with every step done, and its final state was written
//!   once: one "operation finished" across all replicas' logs, by the last claim;
//! - claims of one operation carry the attempts 1..n once each, every claim but the
//!   last ended in a release by the same replica, and no worker ever lost a lease
//!   (nothing ran an operation another worker still held);
//! - every step is DONE (or SKIPPED) and ran at most once per claim;
//! - A handed back every lease before it exited (nothing waits for a lease to expire),
//!   and the long polls (`:wait`, `:watch`) in flight on A answered instead of being
//!   cut off when its grace ran out;
//! - the simulator's journal holds no resource created twice (two successful creates
//!   of one name), and exactly one GKE cluster and node pool create per name;
//! - the surviving replica B (and A') answered every request, none with a 5xx.

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use serve_process::journal::sim_journal;
use serve_process::{LogPath, Server, SimProcess};

const OWNER: &str = "rolling-owner@example.com";
const TEAM: &str = "rolling";
const PROJECT: &str = "rolling-proj";
const CLUSTERS: [&str; 4] = ["ra", "rb", "rc", "rd"];
/// Virtual seconds per real second: GKE's 5 minute cluster create takes 3 s, long
/// enough to catch in flight, short enough for the whole test to take seconds.
const SIM_SPEED: &str = "100";

fn cluster_path(name: &str) -> String {
    format!("/v1/projects/{PROJECT}/zones/us-central1-a/clusters/{name}")
}

/// One `kineticd serve` replica, logging JSON lines to its own file.
struct Replica {
    name: &'static str,
    server: Server,
    log_path: LogPath,
}

/// The replicas' environment: the simulator's exports, two workers, a short grace (A is
/// interrupted mid-step rather than left to finish a 3 s step), JSON logs with claims.
fn replica_env(sim: &SimProcess) -> Vec<(&str, String)> {
    let mut env = sim.serve_env();
    env.extend([
        ("KINETIC_WORKERS", "2".to_owned()),
        ("KINETIC_SHUTDOWN_GRACE_SECONDS", "1".to_owned()),
        ("KINETIC_DB_MAX_CONNECTIONS", "5".to_owned()),
        ("KINETIC_LOG_FORMAT", "json".to_owned()),
        (
            "RUST_LOG",
            "info,sqlx=warn,tower_http=debug,kineticd::ops::worker=debug".to_owned(),
        ),
    ]);
    env
}

impl Replica {
    async fn start(
        name: &'static str,
        db_url: &str,
        http: &reqwest::Client,
        env: &[(&str, String)],
    ) -> Replica {
        let (log_path, log) = LogPath::temp(&format!("rolling-{name}"));
        let server = Server::start_healthy(db_url, &log, &log_path, http, env).await;
        Replica {
            name,
            server,
            log_path,
        }
    }

    /// What its leases' owner contains (`host:PID:uuid/worker`).
    fn lease_mark(&self) -> String {
        format!(":{}:", self.server.pid())
    }

    /// Its JSON log lines.
    fn log_lines(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log_path.0)
            .expect("replica log")
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    async fn call(
        &self,
        http: &reqwest::Client,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> common::Resp {
        let label = format!("{method} {path} on {}", self.name);
        call(http, &self.server.url(""), method, path, body)
            .await
            .unwrap_or_else(|e| panic!("{label}: {e}"))
    }
}

/// `method path` as the owner on the replica at `base`: the response, body read whole
/// (a stream cut short is an error like a refused connection).
async fn call(
    http: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Result<common::Resp, String> {
    call_as_request(http, base, method, path, body, None).await
}

/// [`call`], with the `x-request-id` given when there is one (to find it in the log).
async fn call_as_request(
    http: &reqwest::Client,
    base: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    request_id: Option<&str>,
) -> Result<common::Resp, String> {
    let mut req = http
        .request(method, format!("{base}{path}"))
        .header("x-kinetic-user", OWNER);
    if let Some(id) = request_id {
        req = req.header("x-request-id", id);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.map_err(|e| format!("{e:?}"))?;
    let (status, headers) = (r.status(), r.headers().clone());
    let text = r
        .text()
        .await
        .map_err(|e| format!("reading the body: {e:?}"))?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok(common::Resp {
        status,
        body,
        headers,
    })
}

/// One enqueued operation.
#[derive(Debug, Clone)]
struct Enqueued {
    id: Uuid,
    op_type: String,
    target: String,
}

/// Send a request that enqueues an operation (202) through `via`.
async fn enqueue(
    http: &reqwest::Client,
    via: &Replica,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Enqueued {
    let r = via.call(http, method.clone(), path, body).await;
    assert_eq!(
        r.status,
        reqwest::StatusCode::ACCEPTED,
        "{method} {path} through {}: {}",
        via.name,
        r.body
    );
    let name = r.body["name"].as_str().expect("operation name");
    Enqueued {
        id: Uuid::parse_str(name.trim_start_matches("operations/")).expect("operation id"),
        op_type: r.body["metadata"]["type"].as_str().unwrap_or("").to_owned(),
        target: r.body["metadata"]["target"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    }
}

/// Every operation type, per cluster, in order: up (new), pool add, up (reconcile),
/// pool remove, down; the requests alternate between the replicas.
async fn enqueue_all(http: &reqwest::Client, replicas: [&Replica; 2]) -> Vec<Enqueued> {
    let mut ops = Vec::new();
    for (i, c) in CLUSTERS.iter().enumerate() {
        let via = |k: usize| replicas[(i + k) % 2];
        let path = cluster_path(c);
        let body = json!({"accelerator": "gpu-l4"});
        ops.push(enqueue(http, via(0), Method::PUT, &path, Some(body)).await);
        let pools = format!("{path}/nodePools");
        let body = json!({"accelerator": "gpu-l4"});
        let add = enqueue(http, via(1), Method::POST, &pools, Some(body)).await;
        let pool = format!("/v1/{}", add.target);
        ops.push(add);
        ops.push(enqueue(http, via(2), Method::PUT, &path, Some(json!({}))).await);
        ops.push(enqueue(http, via(3), Method::DELETE, &pool, None).await);
        ops.push(enqueue(http, via(4), Method::DELETE, &path, None).await);
    }
    let types: BTreeSet<&str> = ops.iter().map(|o| o.op_type.as_str()).collect();
    assert_eq!(
        types,
        BTreeSet::from([
            "ADD_NODE_POOL",
            "DOWN_CLUSTER",
            "REMOVE_NODE_POOL",
            "UP_CLUSTER"
        ]),
        "{ops:#?}"
    );
    ops
}

fn succeeded(e: &Value) -> bool {
    e["status"].as_u64().is_some_and(|s| s < 300)
}

/// Wait until A runs the `cluster` step of an up whose GKE cluster is being created
/// (clusters.create succeeded): the step is RUNNING (read through B's API) and A holds
/// the lease (the database's `lease_owner`). Returns that operation.
async fn wait_mid_step(
    db: &kineticd::store::Db,
    http: &reqwest::Client,
    sim: &SimProcess,
    a: &Replica,
    b: &Replica,
) -> Uuid {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let held: Vec<(Uuid, String)> = sqlx::query_as(
            "SELECT id, input->>'cluster' FROM operations WHERE end_time IS NULL \
             AND op_type = 'UP_CLUSTER' AND input->>'newCluster' = 'true' \
             AND strpos(lease_owner, $1) > 0",
        )
        .bind(a.lease_mark())
        .fetch_all(db)
        .await
        .expect("operations held by A");
        for (id, cluster) in held {
            let op = b
                .call(http, Method::GET, &format!("/v1/operations/{id}"), None)
                .await;
            let creating = op.body["metadata"]["progress"]["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|s| s["id"] == "cluster" && s["state"] == "RUNNING");
            if !creating {
                continue;
            }
            let created = sim_journal(http, &sim.url(), &[]).await.iter().any(|e| {
                e["method"] == "clusters.create"
                    && succeeded(e)
                    && e["body"]["cluster"]["name"] == cluster.as_str()
            });
            if created {
                return id;
            }
        }
        assert!(
            Instant::now() < deadline,
            "A ({}) never ran a GKE cluster creation within 180 s; logs: {}, {}",
            a.lease_mark(),
            a.log_path,
            b.log_path
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One request of the background poller: which replica, what, and the status or the
/// transport error.
#[derive(Debug, Clone)]
struct Probe {
    replica: String,
    request: String,
    outcome: Result<u16, String>,
}

/// Reads through the surviving replicas all the time, recording every answer.
#[derive(Clone, Default)]
struct Poller {
    /// (replica name, base URL) polled each round.
    targets: Arc<Mutex<Vec<(String, String)>>>,
    probes: Arc<Mutex<Vec<Probe>>>,
    stop: Arc<AtomicBool>,
}

impl Poller {
    fn add(&self, r: &Replica) {
        let mut t = self.targets.lock().expect("targets");
        t.push((r.name.to_owned(), r.server.url("")));
    }

    fn record(&self, replica: &str, request: String, outcome: Result<u16, String>) {
        self.probes.lock().expect("probes").push(Probe {
            replica: replica.to_owned(),
            request,
            outcome,
        });
    }

    /// One request to `replica` at `base`, recorded.
    async fn probe(
        &self,
        http: &reqwest::Client,
        replica: &str,
        base: &str,
        method: Method,
        path: &str,
    ) {
        let label = format!("{method} {path}");
        let outcome = call(http, base, method, path, None)
            .await
            .map(|r| r.status.as_u16());
        self.record(replica, label, outcome);
    }

    /// Poll until stopped: health, lists, every cluster, and one operation a round
    /// (read, then long-polled for up to a second).
    async fn run(self, http: reqwest::Client, ops: Vec<Uuid>) {
        let mut n = 0;
        while !self.stop.load(Ordering::SeqCst) {
            let targets = self.targets.lock().expect("targets").clone();
            let op = ops[n % ops.len()];
            n += 1;
            for (name, base) in &targets {
                let mut reads = vec![
                    "/readyz".to_owned(),
                    "/v1/operations?filter=done%3Dfalse&pageSize=50".to_owned(),
                    format!("/v1/clusters?team={TEAM}"),
                    format!("/v1/operations/{op}"),
                ];
                reads.extend(CLUSTERS.iter().map(|c| cluster_path(c)));
                for path in reads {
                    self.probe(&http, name, base, Method::GET, &path).await;
                }
                let wait = format!("/v1/operations/{op}:wait?timeout=1s");
                self.probe(&http, name, base, Method::POST, &wait).await;
            }
            // Pacing, not synchronisation: a steady stream of reads.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn probes(&self) -> Vec<Probe> {
        self.probes.lock().expect("probes").clone()
    }
}

async fn unfinished(db: &kineticd::store::Db) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM operations WHERE end_time IS NULL")
        .fetch_one(db)
        .await
        .expect("count unfinished")
}

/// What the replicas share: the database, the HTTP client, their environment and the
/// poller of the survivors.
struct Fleet<'e> {
    db_url: String,
    http: reqwest::Client,
    env: Vec<(&'e str, String)>,
    poller: Poller,
}

impl Fleet<'_> {
    async fn start(&self, name: &'static str) -> Replica {
        Replica::start(name, &self.db_url, &self.http, &self.env).await
    }

    /// `method path` sent to `r`, once `r` is handling it (its log says so): a client
    /// long-polling through the load balancer when the rollout starts.
    async fn long_poll(
        &self,
        r: &Replica,
        method: Method,
        path: String,
    ) -> tokio::task::JoinHandle<Result<u16, String>> {
        let (http, base) = (self.http.clone(), r.server.url(""));
        let route = path.split('?').next().unwrap_or("").to_owned();
        // The log names the route template, not the path: the request id finds it.
        let request_id = format!("rolling-{}", uuid::Uuid::new_v4());
        let id = request_id.clone();
        let waiting = tokio::spawn(async move {
            call_as_request(&http, &base, method, &path, None, Some(&id))
                .await
                .map(|r| r.status.as_u16())
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !r.log_lines().iter().any(|l| {
            l["message"] == "started processing request"
                && l["span"]["request_id"] == request_id.as_str()
        }) {
            assert!(
                Instant::now() < deadline,
                "{} never received {route}; log: {}",
                r.name,
                r.log_path
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        waiting
    }

    /// SIGTERM A (with a client long-polling on it) and start its replacement A' at
    /// once, as a rollout with surge does; while A drains, B is asked about the
    /// interrupted operation every few milliseconds. Returns A' once A has exited.
    async fn roll(&self, a: &mut Replica, b: &Replica, interrupted: Uuid, waited: Uuid) -> Replica {
        let op = format!("/v1/operations/{waited}");
        let waiting = [
            self.long_poll(a, Method::POST, format!("{op}:wait?timeout=20s"))
                .await,
            self.long_poll(a, Method::GET, format!("{op}:watch")).await,
        ];
        a.server.terminate();
        let a2 = self.start("a2").await;
        self.poller.add(&a2);
        let deadline = Instant::now() + Duration::from_secs(120);
        let path = format!("/v1/operations/{interrupted}");
        let status = loop {
            if let Some(s) = a.server.exit_status() {
                break s;
            }
            let base = b.server.url("");
            self.poller
                .probe(&self.http, b.name, &base, Method::GET, &path)
                .await;
            assert!(
                Instant::now() < deadline,
                "A did not exit within 120 s of SIGTERM; log: {}",
                a.log_path
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(
            status.success(),
            "A exited with {status} after SIGTERM; log: {}",
            a.log_path
        );
        let mut answers = Vec::new();
        for w in waiting {
            answers.push(w.await.expect("long poll task"));
        }
        assert!(
            answers.iter().all(|x| matches!(x, Ok(s) if *s < 500)),
            "long polls in flight on A when it was told to stop (:wait, :watch) ended in \
             {answers:?}: a client behind the load balancer sees a 502; log: {}",
            a.log_path
        );
        a2
    }
}

#[derive(Debug, sqlx::FromRow)]
struct Row {
    id: Uuid,
    op_type: String,
    state: String,
    attempt: i32,
    steps: Value,
    error: Option<Value>,
    lease_owner: Option<String>,
}

/// Per operation, from every replica's log: the claims (attempt, replica), the
/// replicas that finished it, those that released it, and per step the attempts that
/// failed retryably (a lock wait on a busy database, say: retried within the claim).
#[derive(Debug, Default)]
struct History {
    claims: Vec<(i64, &'static str)>,
    finished: Vec<&'static str>,
    released: Vec<&'static str>,
    retried: BTreeMap<String, i64>,
}

/// The operations' histories, and every "lease lost" line (there must be none).
fn histories(replicas: &[&Replica]) -> (BTreeMap<String, History>, Vec<Value>) {
    let mut by_op: BTreeMap<String, History> = BTreeMap::new();
    let mut lost = Vec::new();
    for r in replicas {
        for line in r.log_lines() {
            let Some(op) = line["operation.id"]
                .as_str()
                .or(line["span"]["operation.id"].as_str())
            else {
                continue;
            };
            let h = by_op.entry(op.to_owned()).or_default();
            match line["message"].as_str().unwrap_or("") {
                "step attempt failed" if line["outcome"] == "RETRYABLE_ERROR" => {
                    let step = line["span"]["step.id"].as_str().unwrap_or("");
                    *h.retried.entry(step.to_owned()).or_default() += 1;
                }
                "claimed" => h
                    .claims
                    .push((line["attempt"].as_i64().unwrap_or(-1), r.name)),
                "operation finished" => h.finished.push(r.name),
                "lease released for another worker" => h.released.push(r.name),
                "stopped: lease lost" => lost.push(line),
                _ => {}
            }
        }
    }
    (by_op, lost)
}

/// Every operation ended SUCCEEDED once, by its last claim; earlier claims were
/// released by the replica that held them. Returns the operations claimed more than
/// once.
fn assert_finished_once(rows: &[Row], replicas: &[&Replica]) -> Vec<Uuid> {
    let (by_op, lost) = histories(replicas);
    assert!(lost.is_empty(), "a worker lost its lease: {lost:#?}");
    let mut resumed = Vec::new();
    for r in rows {
        assert_eq!(
            r.state, "SUCCEEDED",
            "{} {}: {:?}",
            r.op_type, r.id, r.error
        );
        assert!(r.lease_owner.is_none(), "{} still leased", r.id);
        let h = by_op
            .get(&r.id.to_string())
            .unwrap_or_else(|| panic!("no log line about {}", r.id));
        // Every step done; run once per claim at most (a step interrupted by the
        // shutdown runs again after the hand-over), plus the retries its log shows.
        for s in r.steps.as_array().expect("steps") {
            let attempts = s["attempts"].as_i64().unwrap_or(0);
            let step = s["id"].as_str().unwrap_or("");
            let most = i64::from(r.attempt) + h.retried.get(step).copied().unwrap_or(0);
            assert!(
                (s["state"] == "DONE" && (1..=most).contains(&attempts))
                    || (s["state"] == "SKIPPED" && attempts == 0),
                "{} {} (claimed {} times, retries {:?}): {s}",
                r.op_type,
                r.id,
                r.attempt,
                h.retried
            );
        }
        let mut attempts: Vec<i64> = h.claims.iter().map(|c| c.0).collect();
        attempts.sort_unstable();
        let expected: Vec<i64> = (1..=i64::from(r.attempt)).collect();
        assert_eq!(attempts, expected, "claims of {}: {h:?}", r.id);
        let last = h.claims.iter().find(|c| c.0 == i64::from(r.attempt));
        assert_eq!(
            h.finished,
            vec![last.expect("last claim").1],
            "{} must be finished once, by its last claim: {h:?}",
            r.id
        );
        let mut earlier: Vec<&str> = h
            .claims
            .iter()
            .filter(|c| c.0 < i64::from(r.attempt))
            .map(|c| c.1)
            .collect();
        let mut released = h.released.clone();
        earlier.sort_unstable();
        released.sort_unstable();
        assert_eq!(earlier, released, "hand-overs of {}: {h:?}", r.id);
        if r.attempt > 1 {
            resumed.push(r.id);
        }
    }
    resumed
}

/// The name a creating call gives its resource (body or query), if any.
fn created_name(e: &Value) -> String {
    let b = &e["body"];
    [
        &b["name"],
        &b["cluster"]["name"],
        &b["nodePool"]["name"],
        &b["accountId"],
        &b["metadata"]["name"],
    ]
    .into_iter()
    .find_map(|v| v.as_str())
    .unwrap_or("")
    .to_owned()
}

/// No resource was created twice; one GKE cluster per cluster and one node pool per
/// pool (the up's first pool and the added one).
fn assert_created_once(entries: &[Value]) {
    let creating = |m: &str| m.ends_with(".create") || m.ends_with(".insert");
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for e in entries.iter().filter(|e| succeeded(e)) {
        let method = e["method"].as_str().unwrap_or("");
        // Objects are written (overwritten) by name, not created once.
        if !creating(method) || method == "objects.insert" {
            continue;
        }
        let key = format!(
            "{method} {}?{} {}",
            e["path"].as_str().unwrap_or(""),
            e["query"].as_str().unwrap_or(""),
            created_name(e)
        );
        *seen.entry(key).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "created more than once: {twice:#?}");
    let count = |m: &str| {
        seen.keys()
            .filter(|k| k.starts_with(&format!("{m} ")))
            .count()
    };
    assert_eq!(count("clusters.create"), CLUSTERS.len(), "{seen:#?}");
    assert_eq!(count("nodePools.create"), 2 * CLUSTERS.len(), "{seen:#?}");
}

/// The surviving replicas answered every request, none with a 5xx.
fn assert_no_server_errors(probes: &[Probe]) {
    let bad: Vec<String> = probes
        .iter()
        .filter(|p| !matches!(p.outcome, Ok(s) if s < 500))
        .map(|p| format!("{}: {} -> {:?}", p.replica, p.request, p.outcome))
        .collect();
    assert!(bad.is_empty(), "failed requests: {bad:#?}");
    for survivor in ["b", "a2"] {
        assert!(
            probes.iter().any(|p| p.replica == survivor),
            "the poller never reached {survivor}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_step_with_a_replacement_finishes_every_operation_once() {
    let started = Instant::now();
    let sim = SimProcess::start(&["--speed", SIM_SPEED]);
    let (db, db_url) = common::fresh_db().await;
    let fleet = Fleet {
        db_url,
        http: kineticd::app::http_client().expect("http client"),
        env: replica_env(&sim),
        poller: Poller::default(),
    };
    let http = &fleet.http;
    let mut a = fleet.start("a").await;
    let b = fleet.start("b").await;

    let r = b
        .call(
            http,
            Method::POST,
            "/v1/teams",
            Some(json!({"teamId": TEAM, "projects": [PROJECT]})),
        )
        .await;
    assert_eq!(r.status, reqwest::StatusCode::CREATED, "{}", r.body);
    let ops = enqueue_all(http, [&a, &b]).await;

    let poller = &fleet.poller;
    poller.add(&b);
    let polling = tokio::spawn(
        poller
            .clone()
            .run(http.clone(), ops.iter().map(|o| o.id).collect()),
    );

    let interrupted = wait_mid_step(&db, http, &sim, &a, &b).await;
    let last = ops.last().expect("operations").id;
    let a2 = fleet.roll(&mut a, &b, interrupted, last).await;
    // A handed back every lease on its way out: nothing waits for one to expire.
    let kept: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM operations WHERE end_time IS NULL AND strpos(lease_owner, $1) > 0",
    )
    .bind(a.lease_mark())
    .fetch_all(&db)
    .await
    .expect("leases of A");
    assert!(kept.is_empty(), "A exited holding leases of {kept:?}");

    let deadline = Instant::now() + Duration::from_secs(300);
    while unfinished(&db).await > 0 {
        assert!(
            Instant::now() < deadline,
            "operations unfinished 300 s after the roll; logs: {} {} {}",
            a.log_path,
            b.log_path,
            a2.log_path
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    poller.stop.store(true, Ordering::SeqCst);
    polling.await.expect("poller");

    let rows: Vec<Row> = sqlx::query_as(
        // The SYNC_ACCESS that follows each `up` is not one the test sent.
        "SELECT id, op_type, state, attempt, steps, error, lease_owner FROM operations \
         WHERE op_type <> 'SYNC_ACCESS'",
    )
    .fetch_all(&db)
    .await
    .expect("operations");
    assert_eq!(rows.len(), ops.len());
    let resumed = assert_finished_once(&rows, &[&a, &b, &a2]);
    assert!(
        resumed.contains(&interrupted),
        "the operation A was running ({interrupted}) was not resumed elsewhere: {resumed:?}"
    );
    assert_created_once(&sim_journal(http, &sim.url(), &[]).await);
    let probes = poller.probes();
    assert_no_server_errors(&probes);
    let cut_short = a.log_lines().iter().any(|l| {
        l["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("grace period over"))
    });
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    for p in &probes {
        let status = p
            .outcome
            .as_ref()
            .map(|s| s.to_string())
            .unwrap_or_default();
        *statuses.entry(status).or_default() += 1;
    }
    println!(
        "rolling upgrade: {} operations, resumed {resumed:?} (A's grace ran out: {cut_short}), \
         requests to survivors by status {statuses:?}, {:.1} s",
        rows.len(),
        started.elapsed().as_secs_f64()
    );
    for r in [a, b, a2] {
        r.log_path.remove();
    }
}
