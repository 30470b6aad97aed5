//! Database faults (issue 15, hardening 2), end to end: the real `kineticd serve` runs
//! NOOP operations against a private PostgreSQL server that the test stops (fast
//! shutdown: every connection cut, the port refusing) for 20 s and starts again on the
//! same port and data folder.
//!
//! What must hold:
//! - during the outage the process lives and answers: `/healthz` 200, `/readyz` 503
//!   NOT_READY, every API call (reads and mutations) 503 UNAVAILABLE
//!   DATABASE_UNAVAILABLE with a message and `Retry-After`, each within the request
//!   deadline (never a 500, never a hang, never a panic in its log);
//! - a mutation refused during the outage left nothing behind (no operation, no team,
//!   no idempotency record: the same request id succeeds afterwards, once);
//! - afterwards it reconnects by itself (`/readyz` 200, the API 200, the LISTEN
//!   connection re-established), a new request works, and every operation accepted before
//!   the outage (running or queued when it began) SUCCEEDED with each step's effect
//!   committed exactly once.
//!
//! The short form runs in `cargo test`; the long form (`scripts/long-db-faults.sh`) sets
//! `KINETIC_DB_FAULTS_OUTAGE_SECONDS`, `KINETIC_DB_FAULTS_OPERATIONS` and
//! `KINETIC_DB_FAULTS_HALT=immediate` (a crash-like stop). Needs the PostgreSQL server
//! binaries (whatever `DATABASE_URL` says: the test must own the server it stops); skips
//! with a message without them unless `KINETIC_REQUIRE_PG_SERVER=1`.

#[path = "db_faults/probe.rs"]
mod probe;
#[path = "serve_process/mod.rs"]
mod serve_process;
#[path = "db_faults/timeline.rs"]
mod timeline;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use kineticd::devdb::{Halt, PgBinaries, PrivatePostgres};
use kineticd::store::Db;

use probe::{Tally, call};
use serve_process::{LogPath, Server};
use timeline::Timeline;

const OWNER: &str = "dbfaults-owner@example.com";
const TEAM: &str = "dbfaults-team";
const STEPS: u32 = 5;
const STEP_MILLIS: u64 = 700;
const WORKERS: usize = 2;
const LEASE: Duration = Duration::from_secs(45);
/// The request deadline and the wait for a connection the server is configured with.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(4);
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(1);
/// Scheduling slack on a loaded machine, on top of the deadline.
const SLACK: Duration = Duration::from_secs(1);
/// A call unanswered this long is a hang.
const HANG: Duration = Duration::from_secs(15);

/// The run's shape: the short form by default, longer through the environment.
struct Shape {
    outage: Duration,
    operations: usize,
    halt: Halt,
}

impl Shape {
    fn from_env() -> Shape {
        let num = |key: &str, default: u64| {
            std::env::var(key)
                .ok()
                .map(|v| {
                    v.parse()
                        .unwrap_or_else(|_| panic!("{key}={v}: not a number"))
                })
                .unwrap_or(default)
        };
        let halt = match std::env::var("KINETIC_DB_FAULTS_HALT").as_deref() {
            Err(_) | Ok("fast") => Halt::Fast,
            Ok("immediate") => Halt::Immediate,
            Ok(other) => panic!("KINETIC_DB_FAULTS_HALT={other}: fast or immediate"),
        };
        Shape {
            outage: Duration::from_secs(num("KINETIC_DB_FAULTS_OUTAGE_SECONDS", 20)),
            operations: num("KINETIC_DB_FAULTS_OPERATIONS", 6) as usize,
            halt,
        }
    }
}

fn serve_env() -> Vec<(&'static str, String)> {
    vec![
        ("KINETIC_TEST_WORKFLOWS", "true".to_owned()),
        ("KINETIC_WORKERS", WORKERS.to_string()),
        // Longer than the short form's outage: the claims taken before it are still
        // valid after it, so resuming them must not wait for their leases to run out.
        ("KINETIC_LEASE_SECONDS", LEASE.as_secs().to_string()),
        (
            "KINETIC_REQUEST_TIMEOUT_SECONDS",
            REQUEST_TIMEOUT.as_secs().to_string(),
        ),
        (
            "KINETIC_DB_ACQUIRE_TIMEOUT_SECONDS",
            ACQUIRE_TIMEOUT.as_secs().to_string(),
        ),
        ("KINETIC_DB_MAX_CONNECTIONS", "8".to_owned()),
        // The probes call often; rate limiting is not what is tested here.
        ("KINETIC_RATE_LIMIT_PER_SECOND", "0".to_owned()),
        ("KINETIC_LOG_FORMAT", "json".to_owned()),
        ("RUST_LOG", "info".to_owned()),
    ]
}

/// The private server, or `None` (skip) when the binaries are missing and not required.
async fn private_server() -> Option<PrivatePostgres> {
    if let Err(e) = PgBinaries::locate() {
        assert!(
            std::env::var("KINETIC_REQUIRE_PG_SERVER").as_deref() != Ok("1"),
            "the PostgreSQL server binaries are required (KINETIC_REQUIRE_PG_SERVER=1): {e}"
        );
        println!(
            "SKIPPED: {e}; set KINETIC_REQUIRE_PG_SERVER=1 to fail instead (this test stops \
             and restarts a server of its own)"
        );
        return None;
    }
    let pg = PrivatePostgres::start_temporary()
        .await
        .expect("start a private PostgreSQL");
    pg.ensure_database("kineticd")
        .await
        .expect("create database");
    Some(pg)
}

async fn connect(url: &str) -> Db {
    kineticd::store::db::connect(url, 2)
        .await
        .expect("test connection")
}

fn operation_id(op: &Value) -> Uuid {
    let name = op["name"].as_str().expect("operation name");
    Uuid::parse_str(name.trim_start_matches("operations/")).expect("operation uuid")
}

/// States of the operations, by state.
async fn states(db: &Db) -> BTreeMap<String, i64> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT state, count(*) FROM operations GROUP BY 1 ORDER BY 1")
            .fetch_all(db)
            .await
            .expect("count states");
    rows.into_iter().collect()
}

/// Steps DONE so far, over every operation.
async fn steps_done(db: &Db) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM operations, json_array_elements(steps) s \
         WHERE s->>'state' = 'DONE'",
    )
    .fetch_one(db)
    .await
    .expect("count done steps")
}

/// An operation running under a claim, and how far it had got.
struct Claim {
    id: Uuid,
    lease_expire: DateTime<Utc>,
    done: i64,
}

async fn running_claims(db: &Db) -> Vec<Claim> {
    let rows: Vec<(Uuid, DateTime<Utc>, i64)> = sqlx::query_as(
        "SELECT id, lease_expire_time, \
                (SELECT count(*) FROM json_array_elements(steps) s WHERE s->>'state' = 'DONE') \
         FROM operations WHERE state = 'RUNNING' AND lease_expire_time IS NOT NULL",
    )
    .fetch_all(db)
    .await
    .expect("running claims");
    rows.into_iter()
        .map(|(id, lease_expire, done)| Claim {
            id,
            lease_expire,
            done,
        })
        .collect()
}

/// When (database clock) every one of `claims` had finished another step or ended;
/// `None` if not within `limit`.
async fn resumed(db: &Db, claims: &[Claim], limit: Duration) -> Option<DateTime<Utc>> {
    let deadline = Instant::now() + limit;
    loop {
        let mut all = true;
        for c in claims {
            let (done, ended): (i64, bool) = sqlx::query_as(
                "SELECT (SELECT count(*) FROM json_array_elements(steps) s \
                         WHERE s->>'state' = 'DONE'), end_time IS NOT NULL \
                 FROM operations WHERE id = $1",
            )
            .bind(c.id)
            .fetch_one(db)
            .await
            .expect("progress");
            all &= ended || done > c.done;
        }
        if all {
            let now: DateTime<Utc> = sqlx::query_scalar("SELECT now()")
                .fetch_one(db)
                .await
                .expect("now");
            return Some(now);
        }
        if Instant::now() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls `check` every 100 ms until it is true; false after `limit`.
async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_then_restarted_gives_503s_then_recovers_and_finishes_every_operation() {
    let shape = Shape::from_env();
    let Some(mut pg) = private_server().await else {
        return;
    };
    let mut tl = Timeline::new();
    let url = pg.url("kineticd");
    let http = kineticd::app::http_client().expect("http client");
    let (log_path, log) = LogPath::temp("db-faults");
    let mut server = Server::start_healthy(&url, &log, &log_path, &http, &serve_env()).await;
    tl.note(format!(
        "PostgreSQL on port {} (pid {}), kineticd serve pid {}, log {log_path}",
        pg.port(),
        pg.pid(),
        server.pid()
    ));
    let base = server.url("");
    let api = |path: &str| format!("{base}{path}");
    let ask = |method: Method, path: String, body: Option<Value>| {
        let http = http.clone();
        async move { call(&http, method, &path, OWNER, body.as_ref(), HANG).await }
    };

    // Operations: more than the workers, so some run and some wait when the outage hits.
    let r = ask(
        Method::POST,
        api("/v1/teams"),
        Some(json!({"teamId": TEAM, "projects": []})),
    )
    .await;
    assert_eq!(r.status, Some(201), "create team: {}", r.body);
    let mut ops = Vec::new();
    for i in 0..shape.operations {
        let body = json!({
            "team": TEAM,
            "target": format!("dbfaults/target-{i}"),
            "steps": STEPS,
            "stepMillis": STEP_MILLIS,
        });
        let r = ask(Method::POST, api("/v1/testing/noopOperations"), Some(body)).await;
        assert_eq!(r.status, Some(202), "enqueue: {}", r.body);
        ops.push(operation_id(&r.body));
    }
    tl.note(format!("{} NOOP operations accepted", ops.len()));
    let db = connect(&url).await;
    let mid_step = eventually(Duration::from_secs(30), || async {
        let s = states(&db).await;
        s.get("RUNNING").copied().unwrap_or(0) == WORKERS as i64 && steps_done(&db).await > 0
    })
    .await;
    assert!(mid_step, "the workers never got going; log: {log_path}");
    let before = states(&db).await;
    let claims = running_claims(&db).await;
    tl.note(format!(
        "before the outage: {before:?}, {} steps done",
        steps_done(&db).await
    ));
    db.close().await;

    // The outage.
    pg.halt(shape.halt).await.expect("stop PostgreSQL");
    tl.note(format!(
        "PostgreSQL stopped ({:?}) for {:?}",
        shape.halt, shape.outage
    ));
    let outage_started = Instant::now();
    let limit = REQUEST_TIMEOUT + SLACK;
    let mut tally = Tally::default();
    let mut refused_ids = Vec::new();
    let mut refused_teams = Vec::new();
    let mut round = 0;
    while outage_started.elapsed() < shape.outage {
        round += 1;
        let at = tl.now();
        // Every probe at once, as independent callers would.
        let request_id = Uuid::new_v4();
        let team = format!("dbfaults-outage-{round}");
        let (health, ready, get_op, list, get_team, post_op, post_team) = tokio::join!(
            ask(Method::GET, api("/healthz"), None),
            ask(Method::GET, api("/readyz"), None),
            ask(
                Method::GET,
                api(&format!("/v1/operations/{}", ops[0])),
                None
            ),
            ask(Method::GET, api("/v1/operations?pageSize=5"), None),
            ask(Method::GET, api(&format!("/v1/teams/{TEAM}")), None),
            ask(
                Method::POST,
                api(&format!(
                    "/v1/testing/noopOperations?requestId={request_id}"
                )),
                Some(json!({"team": TEAM, "steps": 1})),
            ),
            ask(
                Method::POST,
                api("/v1/teams"),
                Some(json!({"teamId": team, "projects": []})),
            ),
        );
        let unavailable = "DATABASE_UNAVAILABLE";
        tally.expect_status(at, "healthz", &health, 200, limit);
        tally.expect_unavailable(at, "readyz", &ready, "NOT_READY", limit);
        tally.expect_unavailable(at, "GET operation", &get_op, unavailable, limit);
        tally.expect_unavailable(at, "list operations", &list, unavailable, limit);
        tally.expect_unavailable(at, "GET team", &get_team, unavailable, limit);
        tally.expect_unavailable(at, "POST operation", &post_op, unavailable, limit);
        tally.expect_unavailable(at, "POST team", &post_team, unavailable, limit);
        refused_ids.push(request_id);
        refused_teams.push(team);
        if server.child.exited() {
            tally.violations.push(format!(
                "[{:.2} s] kineticd exited during the outage: {:?}",
                at.as_secs_f64(),
                server.exit_status()
            ));
            break;
        }
        if round == 1 {
            tl.note(format!(
                "outage: first round answered ({})",
                tally.summary()
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tl.note(format!(
        "outage over after {round} rounds: {}",
        tally.summary()
    ));

    // Restart on the same port and data folder.
    pg.restart().await.expect("restart PostgreSQL");
    tl.note(format!("PostgreSQL restarted (pid {})", pg.pid()));
    let restarted = Instant::now();
    let mut ready_at = None;
    let mut api_at = None;
    while (ready_at.is_none() || api_at.is_none()) && restarted.elapsed() < Duration::from_secs(30)
    {
        let at = tl.now();
        let a = ask(Method::GET, api("/readyz"), None).await;
        if a.status == Some(200) {
            ready_at.get_or_insert(at);
        } else {
            tally.expect_unavailable(at, "readyz (recovering)", &a, "NOT_READY", limit);
        }
        let a = ask(
            Method::GET,
            api(&format!("/v1/operations/{}", ops[0])),
            None,
        )
        .await;
        tally.expect_ok_or_unavailable(at, "GET operation (recovering)", &a, limit);
        if a.status == Some(200) {
            api_at.get_or_insert(at);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tl.note(format!(
        "reconnected: /readyz 200 at {ready_at:?}, API 200 at {api_at:?} (since start)"
    ));
    let db = connect(&url).await;
    // The operations running when the outage began go on under a new claim once the
    // database is back, without waiting for the leases they held to run out.
    let resumed_at = resumed(&db, &claims, Duration::from_secs(60)).await;
    let leases_end = claims.iter().map(|c| c.lease_expire).min();
    tl.note(format!(
        "operations running at the outage progressed again at {resumed_at:?} (their \
         leases ran to {leases_end:?})"
    ));
    let listening = eventually(Duration::from_secs(40), || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'LISTEN %'",
        )
        .fetch_one(&db)
        .await
        .expect("pg_stat_activity");
        n > 0
    })
    .await;
    tl.note(format!("LISTEN connection re-established: {listening}"));

    // A request after the restart works; the outage's refused request ids are unused.
    let mut after = Vec::new();
    for request_id in [refused_ids[0], refused_ids[0], Uuid::new_v4()] {
        let body = json!({"team": TEAM, "steps": 2, "stepMillis": 100});
        let path = format!("/v1/testing/noopOperations?requestId={request_id}");
        let r = ask(Method::POST, api(&path), Some(body)).await;
        assert_eq!(r.status, Some(202), "enqueue after restart: {}", r.body);
        after.push(operation_id(&r.body));
    }
    tl.note("requests after the restart accepted");

    let all: Vec<Uuid> = ops.iter().chain(&after).copied().collect();
    let finished = eventually(Duration::from_secs(60 + 2 * all.len() as u64), || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM operations WHERE id = ANY($1) AND end_time IS NULL",
        )
        .bind(&all)
        .fetch_one(&db)
        .await
        .expect("count unfinished");
        n == 0
    })
    .await;
    tl.note(format!(
        "operations finished: {finished}; states {:?}",
        states(&db).await
    ));
    let alive = !server.child.exited();
    let metrics = server.scrape(&http).await;
    server.kill();
    let log_text = std::fs::read_to_string(&log_path.0).unwrap_or_default();
    let report = format!("timeline:\n{}\nlog: {log_path}", tl.render());

    // The outage was served as the contract says.
    assert!(
        tally.violations.is_empty(),
        "{} departures:\n{}\n{report}",
        tally.violations.len(),
        tally.violations.join("\n")
    );
    assert!(alive, "kineticd exited; {report}");
    assert!(
        !log_text.contains("panicked"),
        "a panic in kineticd's log; {report}"
    );
    let errors_500: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("kineticd_http_requests_total") && l.contains("status=\"500\""))
        .collect();
    assert!(
        errors_500.is_empty(),
        "500s served: {errors_500:?}; {report}"
    );
    assert!(
        ready_at.is_some() && api_at.is_some(),
        "no reconnection; {report}"
    );
    assert!(listening, "the LISTEN connection never came back; {report}");
    assert!(finished, "operations unfinished; {report}");
    let resumed_at = resumed_at.expect("progress after the restart");
    let leases_end = leases_end.expect("claims before the outage");
    assert!(
        shape.outage + Duration::from_secs(10) > LEASE * 2 / 3 || resumed_at < leases_end,
        "the running operations waited for their leases to expire ({leases_end}) before \
         resuming ({resumed_at}): a write that failed during the outage should hand the \
         operation back once the database answers; {report}"
    );

    // Refused mutations left nothing; the retried request id made one operation.
    assert_eq!(
        after[0], after[1],
        "a repeated request id made two operations"
    );
    let refused_ops: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM operations WHERE request_id = ANY($1) AND id <> $2",
    )
    .bind(refused_ids.iter().map(Uuid::to_string).collect::<Vec<_>>())
    .bind(after[0])
    .fetch_one(&db)
    .await
    .expect("refused operations");
    assert_eq!(refused_ops, 0, "operations made by refused requests");
    let refused_team_rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM teams WHERE team_id = ANY($1)")
            .bind(&refused_teams)
            .fetch_one(&db)
            .await
            .expect("refused teams");
    assert_eq!(refused_team_rows, 0, "teams made by refused requests");
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM idempotency_keys WHERE key = ANY($1)")
        .bind(refused_ids.iter().map(Uuid::to_string).collect::<Vec<_>>())
        .fetch_one(&db)
        .await
        .expect("refused idempotency keys");
    assert_eq!(
        keys, 1,
        "idempotency keys of refused requests (only the reused one may exist)"
    );

    // Every operation SUCCEEDED, every step DONE with its chain, each effect once.
    let rows: Vec<(Uuid, String, i32, Value)> =
        sqlx::query_as("SELECT id, state, attempt, steps FROM operations WHERE id = ANY($1)")
            .bind(&all)
            .fetch_all(&db)
            .await
            .expect("read operations");
    assert_eq!(
        rows.len(),
        all.len() - 1,
        "one duplicate request id expected"
    );
    let mut expected_effects = 0;
    for (id, state, _, steps) in &rows {
        assert_eq!(state, "SUCCEEDED", "operation {id}: {steps}; {report}");
        let steps = steps.as_array().expect("steps");
        for (i, s) in steps.iter().enumerate() {
            assert_eq!(s["state"], "DONE", "operation {id} step {i}: {s}");
            assert_eq!(s["result"]["chain"].as_u64(), Some(i as u64 + 1), "{s}");
        }
        expected_effects += steps.len() as i64;
    }
    let counts = kineticd::store::operations::noop_effect_counts(&db)
        .await
        .expect("effect counts");
    for (op, step, n) in &counts {
        assert_eq!(*n, 1, "effect of {op} {step} committed {n} times; {report}");
    }
    assert_eq!(counts.len() as i64, expected_effects, "effects; {report}");
    let resumed = rows.iter().filter(|r| r.2 > 1).count();
    tl.note(format!(
        "checked: {} operations SUCCEEDED ({resumed} resumed by a new claim), {} effects \
         once each, refused requests left nothing",
        rows.len(),
        counts.len()
    ));
    println!("db_faults timeline:\n{}", tl.render());
    db.close().await;
    drop(log);
    log_path.remove();
    pg.stop().await.expect("stop PostgreSQL");
}
