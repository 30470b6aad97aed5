//! Limits (issue 15, hardening 5) and database faults (hardening 2): per-caller rate
//! limiting, the request deadline, the cap on a team's unfinished operations, the cap on
//! `:watch` streams, and 503 DATABASE_UNAVAILABLE when PostgreSQL cannot be reached or
//! every connection is busy. The database outage is made by a TCP relay in front of the
//! shared PostgreSQL that the test closes (every connection cut, the port refusing) and
//! opens again on the same port: what kineticd sees is a stopped and restarted server.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use kineticd::store::db::{PoolConfig, connect_pool};

use crate::common::{ADMIN, BOB, TestApp, fresh_db};
use crate::support::{
    app_with_rate, cancel_frees_the_stream, expect_error, message, meta, one_watch_app,
    queued_noop, wait_runs_its_timeout,
};

const ALICE: &str = "alice@example.com";

fn pool(max_connections: u32, acquire: Duration, cap: Option<u32>) -> PoolConfig {
    PoolConfig {
        max_connections,
        acquire_timeout: acquire,
        max_operations_per_team: cap,
    }
}

#[tokio::test]
async fn a_caller_past_its_rate_gets_429_with_retry_after_and_others_do_not() {
    let app = app_with_rate(0.5, 3).await;
    for _ in 0..3 {
        let r = app.get(ALICE, "/v1/teams").await;
        assert_eq!(r.status, 200, "{:#}", r.body);
    }
    let r = app.get(ALICE, "/v1/teams").await;
    expect_error(&r, 429, "RESOURCE_EXHAUSTED", "RATE_LIMITED");
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&wait), "Retry-After {wait}");
    assert_eq!(meta(&r, "retryAfterSeconds"), wait.to_string());
    assert!(message(&r).contains(ALICE), "{}", message(&r));
    // Another caller has its own bucket; health endpoints are not charged.
    assert_eq!(app.get(BOB, "/v1/teams").await.status, 200);
    for _ in 0..10 {
        assert_eq!(app.get(ALICE, "/healthz").await.status, 200);
        assert_eq!(app.get(ALICE, "/readyz").await.status, 200);
    }
    // The bucket refills: after the wait the caller is served again.
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert_eq!(app.get(ALICE, "/v1/teams").await.status, 200);
}

#[tokio::test]
async fn a_slow_request_gets_504_but_long_polls_keep_their_own_bound() {
    let (_, url) = fresh_db().await;
    // One connection, a long acquire wait: a request waiting for it outlives the deadline.
    let db = connect_pool(&url, &pool(1, Duration::from_secs(20), None))
        .await
        .unwrap();
    let app = TestApp::spawn_with(db, url, |mut s| {
        s.limits.request_timeout = Some(Duration::from_millis(500));
        s
    })
    .await;
    app.team(ALICE, "acme", &["acme-project"]).await;
    let name = queued_noop(&app, ALICE).await;
    // A :wait longer than the deadline is answered by its own timeout (no workers: the
    // operation stays queued).
    wait_runs_its_timeout(&app, ALICE, &name).await;
    let held = app.db.acquire().await.unwrap();
    let started = Instant::now();
    let r = app.get(ALICE, "/v1/teams").await;
    expect_error(&r, 504, "DEADLINE_EXCEEDED", "REQUEST_TIMEOUT");
    assert_eq!(meta(&r, "timeoutSeconds"), "0.5");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    drop(held);
    assert_eq!(app.get(ALICE, "/v1/teams").await.status, 200);
}

#[tokio::test]
async fn a_team_past_its_operation_cap_gets_409_with_the_cap_and_count() {
    let (_, url) = fresh_db().await;
    let db = connect_pool(&url, &pool(10, Duration::from_secs(120), Some(2)))
        .await
        .unwrap();
    let app = TestApp::spawn_with(db, url, |s| s).await;
    app.team(ALICE, "acme", &["acme-project"]).await;
    app.team(BOB, "other", &["other-project"]).await;
    let first = app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    let r = app
        .post(
            ALICE,
            "/v1/testing/noopOperations",
            json!({"team": "acme", "steps": 1}),
        )
        .await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "TOO_MANY_OPERATIONS");
    assert_eq!(meta(&r, "maxOperations"), "2");
    assert_eq!(meta(&r, "unfinishedOperations"), "2");
    assert!(message(&r).contains("cancel"), "{}", message(&r));
    // Nothing was created by the refusal.
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM operations WHERE team_id = 'acme'")
        .fetch_one(&app.db)
        .await
        .unwrap();
    assert_eq!(n, 2);
    // Another team has its own count.
    app.noop(BOB, json!({"team": "other", "steps": 1})).await;
    // A finished operation frees its place.
    let name = first["name"].as_str().unwrap();
    let r = app.op_action(ALICE, name, "cancel").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
}

#[tokio::test]
async fn watch_streams_per_caller_are_capped_and_released_when_a_stream_ends() {
    let (app, name) = one_watch_app(ALICE, BOB).await;
    let watch = |user: &'static str| app.stream_as(user, &format!("/v1/{name}:watch"));
    let open = watch(ALICE).await.unwrap();
    assert_eq!(open.status(), 200);
    let r = TestApp::read(watch(ALICE).await.unwrap()).await;
    expect_error(&r, 429, "RESOURCE_EXHAUSTED", "TOO_MANY_WATCHES");
    assert_eq!(meta(&r, "maxWatches"), "1");
    assert_eq!(r.headers["retry-after"], "1");
    // Another caller has its own places.
    let bobs = watch(BOB).await.unwrap();
    assert_eq!(bobs.status(), 200);
    // The operation ends: the stream sends `done` and closes, freeing the place.
    drop(bobs);
    cancel_frees_the_stream(&app, ALICE, &name, open, || watch(ALICE)).await;
}

/// A TCP relay to PostgreSQL that can be cut (every connection closed, the port
/// refusing) and restored on the same port.
struct Relay {
    addr: SocketAddr,
    upstream: SocketAddr,
    tasks: JoinSet<()>,
}

impl Relay {
    async fn start(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut r = Relay {
            addr: listener.local_addr().unwrap(),
            upstream,
            tasks: JoinSet::new(),
        };
        r.serve(listener);
        r
    }

    fn serve(&mut self, listener: TcpListener) {
        let upstream = self.upstream;
        self.tasks.spawn(async move {
            // Connections live inside this task's set: aborting it closes them all.
            let mut conns = JoinSet::new();
            while let Ok((mut down, _)) = listener.accept().await {
                conns.spawn(async move {
                    if let Ok(mut up) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
            }
        });
    }

    async fn cut(&mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }

    async fn restore(&mut self) {
        let listener = TcpListener::bind(self.addr).await.unwrap();
        self.serve(listener);
    }
}

#[tokio::test]
async fn database_down_is_503_unavailable_within_the_acquire_wait_and_recovers() {
    let (_, url) = fresh_db().await;
    let mut parsed = reqwest::Url::parse(&url).unwrap();
    let host = parsed.host_str().unwrap().to_owned();
    let port = parsed.port().unwrap_or(5432);
    let upstream = tokio::net::lookup_host((host.as_str(), port))
        .await
        .unwrap()
        .next()
        .unwrap();
    let mut relay = Relay::start(upstream).await;
    parsed.set_host(Some("127.0.0.1")).unwrap();
    parsed.set_port(Some(relay.addr.port())).unwrap();
    let relayed = parsed.to_string();
    let acquire = Duration::from_secs(1);
    let db = connect_pool(&relayed, &pool(4, acquire, None))
        .await
        .unwrap();
    kineticd::store::migrate(&db).await.unwrap();
    let app = TestApp::spawn_with(db, relayed, |s| s).await;
    app.team(ALICE, "acme", &["acme-project"]).await;
    assert_eq!(app.get(ALICE, "/v1/teams/acme").await.status, 200);

    relay.cut().await;
    for _ in 0..3 {
        let started = Instant::now();
        let r = app.get(ALICE, "/v1/teams/acme").await;
        expect_error(&r, 503, "UNAVAILABLE", "DATABASE_UNAVAILABLE");
        assert!(message(&r).contains("retry"), "{}", message(&r));
        let took = started.elapsed();
        assert!(took < acquire + Duration::from_secs(2), "took {took:?}");
    }
    let r = app.get(ADMIN, "/healthz").await;
    assert_eq!(r.status, 200);
    let r = app.get(ADMIN, "/readyz").await;
    expect_error(&r, 503, "UNAVAILABLE", "NOT_READY");

    relay.restore().await;
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = app.get(ALICE, "/v1/teams/acme").await;
        if r.status == 200 {
            assert_eq!(r.body["name"], "teams/acme", "{:#}", r.body);
            break;
        }
        expect_error(&r, 503, "UNAVAILABLE", "DATABASE_UNAVAILABLE");
        assert!(Instant::now() < deadline, "no recovery: {:#}", r.body);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(app.get(ADMIN, "/readyz").await.status, 200);
}

#[tokio::test]
async fn an_exhausted_pool_is_503_within_the_acquire_wait() {
    let (_, url) = fresh_db().await;
    let acquire = Duration::from_millis(500);
    let db = connect_pool(&url, &pool(1, acquire, None)).await.unwrap();
    let app = TestApp::spawn_with(db, url, |s| s).await;
    app.team(ALICE, "acme", &["acme-project"]).await;
    // A slow query holds the only connection.
    let held = app.db.acquire().await.unwrap();
    let started = Instant::now();
    let r = app.get(ALICE, "/v1/teams/acme").await;
    expect_error(&r, 503, "UNAVAILABLE", "DATABASE_UNAVAILABLE");
    assert!(
        started.elapsed() < acquire + Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(r.headers["retry-after"], "1");
    assert_eq!(app.get(ALICE, "/healthz").await.status, 200);
    drop(held);
    assert_eq!(app.get(ALICE, "/v1/teams/acme").await.status, 200);
}
