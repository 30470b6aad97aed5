//! Webhooks (issue 30 item 3): a real receiver on 127.0.0.1 gets signed, de-duplicable
//! deliveries of the team's audit events; a failed try is retried; a pending delivery
//! in PostgreSQL survives a restart; SSRF and bad input are refused with nothing
//! stored; members read, ADMINs change, outsiders get 404; the Slack body.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, KeyInit, Mac};
use kineticd::domain::states::EventType;
use kineticd::domain::webhooks::Allow;
use kineticd::ops::WorkerPool;
use kineticd::ops::deliveries::DeliveryConfig;
use kineticd::store;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::common::{OUTSIDER, OWNER, TestApp, VIEWER, test_worker_config};
use crate::support::{expect_error, expect_not_found, ok, put_role};

const BOSS: &str = "boss@example.com";
const HOOKS: &str = "/v1/teams/acme/webhooks";

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Got {
    headers: HeaderMap,
    body: Bytes,
}

impl Got {
    fn header(&self, name: &str) -> String {
        self.headers[name].to_str().unwrap().to_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Default)]
struct Inner {
    got: Vec<Got>,
    /// Statuses to answer, in order; 200 once they run out.
    script: VecDeque<u16>,
}

/// A webhook receiver on 127.0.0.1 that records every request.
#[derive(Clone)]
struct Receiver {
    url: String,
    inner: Arc<Mutex<Inner>>,
}

/// Records the request and answers the script's next status; a 3xx points elsewhere
/// (a path with no route: 404 if a client followed it).
async fn receive(
    State(r): State<Receiver>,
    headers: HeaderMap,
    body: Bytes,
) -> (
    StatusCode,
    [(axum::http::header::HeaderName, &'static str); 1],
) {
    let mut i = r.inner.lock().unwrap();
    i.got.push(Got { headers, body });
    let status = StatusCode::from_u16(i.script.pop_front().unwrap_or(200)).unwrap();
    (status, [(axum::http::header::LOCATION, "/elsewhere")])
}

impl Receiver {
    async fn start(script: &[u16]) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let r = Receiver {
            url,
            inner: Arc::new(Mutex::new(Inner {
                got: Vec::new(),
                script: script.iter().copied().collect(),
            })),
        };
        let app = Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(r.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        r
    }

    /// Create a webhook (`body` without its url) to this receiver as `user`.
    async fn hook(&self, app: &TestApp, user: &str, mut body: Value) -> Value {
        body["url"] = self.url.clone().into();
        create(app, user, body).await
    }

    fn got(&self) -> Vec<Got> {
        self.inner.lock().unwrap().got.clone()
    }

    /// The requests once there are `n` (20 s at most).
    async fn wait_for(&self, n: usize) -> Vec<Got> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.got();
            if got.len() >= n {
                return got;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "receiver got {} requests, not {n}",
                got.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Workers whose delivery loop may reach loopback (as `--dev`) and retries quickly.
fn workers(app: &TestApp, allow_loopback: bool) -> WorkerPool {
    let mut cfg = test_worker_config(2);
    cfg.deliveries = deliveries(allow_loopback);
    app.workers(cfg)
}

/// A delivery loop that may reach loopback (as `--dev`) and retries quickly.
fn deliveries(allow_loopback: bool) -> DeliveryConfig {
    DeliveryConfig {
        allow: Allow {
            loopback: allow_loopback,
            private: false,
        },
        backoff_base: Duration::from_millis(100),
        backoff_cap: Duration::from_millis(400),
        poll: Duration::from_millis(100),
        ..DeliveryConfig::default()
    }
}

/// Append team `acme`'s audit event as kineticd's own collectors do.
async fn append(app: &TestApp, event_type: EventType, target: &str, details: Value) {
    store::events::append(
        &app.db,
        &store::events::NewEvent {
            team_id: Some("acme"),
            actor: "kineticd",
            event_type,
            target,
            request_id: None,
            details,
        },
    )
    .await
    .unwrap();
}

/// Team `acme` with OWNER, BOSS (ADMIN) and VIEWER.
async fn acme() -> TestApp {
    let app = TestApp::spawn().await;
    app.team(OWNER, "acme", &[]).await;
    assert_eq!(put_role(&app, OWNER, BOSS, "ADMIN").await.status, 200);
    assert_eq!(put_role(&app, OWNER, VIEWER, "VIEWER").await.status, 200);
    app
}

/// [`acme`] with a webhook of `body` (without its url), created by `user`, to a new
/// receiver answering `script`.
async fn hooked(script: &[u16], user: &str, body: Value) -> (TestApp, Receiver, Value) {
    let app = acme().await;
    let rx = Receiver::start(script).await;
    let w = rx.hook(&app, user, body).await;
    (app, rx, w)
}

async fn create(app: &TestApp, user: &str, body: Value) -> Value {
    let r = app.post(user, HOOKS, body).await;
    assert_eq!(r.status, 201, "{:#}", r.body);
    r.body
}

fn hook_path(w: &Value) -> String {
    format!("/v1/{}", w["name"].as_str().unwrap())
}

/// Whether `sig` (`t=..,v1=..`) is HMAC-SHA256(secret, "t.body").
fn verifies(secret: &str, sig: &str, body: &[u8]) -> bool {
    let (t, v1) = sig
        .split_once(",v1=")
        .map(|(t, v)| (t.trim_start_matches("t="), v))
        .unwrap();
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let want: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let age = chrono::Utc::now().timestamp() - t.parse::<i64>().unwrap();
    want == v1 && (0..300).contains(&age)
}

/// The webhook's delivery log.
async fn log(app: &TestApp, user: &str, w: &Value) -> Vec<Value> {
    let r = app.get(user, &format!("{}/deliveries", hook_path(w))).await;
    ok(r)["deliveries"].as_array().unwrap().clone()
}

/// The log once its newest delivery is no longer PENDING (20 s at most).
async fn settled(app: &TestApp, w: &Value) -> Vec<Value> {
    log_once(app, w, |d| d["state"] != "PENDING").await
}

/// The log once its newest delivery is as `done` says (20 s at most).
async fn log_once(app: &TestApp, w: &Value, done: impl Fn(&Value) -> bool) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let l = log(app, VIEWER, w).await;
        if l.first().is_some_and(&done) {
            return l;
        }
        assert!(std::time::Instant::now() < deadline, "{l:#?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn an_operation_that_ends_is_delivered_once_signed() {
    let (app, rx, w) = hooked(&[], BOSS, json!({"events": ["OPERATION_FINISHED"]})).await;
    let secret = w["secret"].as_str().unwrap().to_owned();
    assert!(
        secret.starts_with("whsec_") && secret.len() == 6 + 64,
        "{secret}"
    );
    assert_eq!(w["format"], "JSON");
    assert_eq!(w["creator"], BOSS);
    // The secret is shown once: not by get or list, nor in the audit trail.
    let got = ok(app.get(VIEWER, &hook_path(&w)).await);
    assert!(got.get("secret").is_none(), "{got:#}");
    assert_eq!(got["url"], rx.url.as_str());
    let list = ok(app.get(VIEWER, HOOKS).await);
    assert_eq!(list["webhooks"].as_array().unwrap().len(), 1);
    assert!(!list.to_string().contains(&secret));
    let trail = ok(app.get(VIEWER, "/v1/teams/acme/events?pageSize=1000").await);
    assert!(!trail.to_string().contains(&secret));
    assert!(
        trail["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "WEBHOOK_CREATED" && e["details"]["urlHost"] == "127.0.0.1"),
        "{trail:#}"
    );

    let _w = workers(&app, true);
    let op = app.noop(OWNER, json!({"team": "acme", "steps": 1})).await;
    let name = op["name"].as_str().unwrap();
    app.wait_done(OWNER, name).await;
    let got = rx.wait_for(1).await;
    let d = &got[0];
    assert!(
        verifies(&secret, &d.header("x-kinetic-signature"), &d.body),
        "{}",
        d.header("x-kinetic-signature")
    );
    assert!(!verifies(
        "whsec_other",
        &d.header("x-kinetic-signature"),
        &d.body
    ));
    assert_eq!(d.header("x-kinetic-event"), "OPERATION_FINISHED");
    assert_eq!(d.header("content-type"), "application/json");
    let body = d.json();
    assert_eq!(body["id"], d.header("x-kinetic-delivery").as_str());
    assert_eq!(body["type"], "OPERATION_FINISHED");
    assert_eq!(body["team"], "acme");
    assert_eq!(body["target"], name);
    assert_eq!(body["details"]["to"], "SUCCEEDED");
    assert!(body["time"].as_str().unwrap().ends_with('Z'), "{body:#}");
    // QUEUED and RUNNING are not ends: one delivery, sent once.
    let l = settled(&app, &w).await;
    assert_eq!(l.len(), 1, "{l:#?}");
    assert_eq!(l[0]["id"], body["id"]);
    assert_eq!(l[0]["state"], "DELIVERED");
    assert_eq!(
        (l[0]["attempts"].as_i64(), l[0]["lastStatus"].as_i64()),
        (Some(1), Some(200))
    );
    assert!(l[0].get("nextAttemptTime").is_none() && l[0]["deliverTime"].is_string());
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.got().len(), 1);
}

#[tokio::test]
async fn a_failed_try_is_retried_and_every_try_logged() {
    let events = json!({"events": ["OPERATION_FINISHED", "APPROVAL_NEEDED"]});
    let (app, rx, w) = hooked(&[500], OWNER, events).await;
    let _w = workers(&app, true);
    let op = app.noop(OWNER, json!({"team": "acme", "steps": 1})).await;
    app.wait_done(OWNER, op["name"].as_str().unwrap()).await;
    let got = rx.wait_for(2).await;
    assert_eq!(
        got[0].header("x-kinetic-delivery"),
        got[1].header("x-kinetic-delivery"),
        "a retry is the same delivery"
    );
    assert_eq!(got[0].body, got[1].body);
    let l = settled(&app, &w).await;
    assert_eq!(l.len(), 1, "{l:#?}");
    assert_eq!(l[0]["state"], "DELIVERED");
    assert_eq!(l[0]["attempts"], 2);
    assert_eq!(l[0]["lastStatus"], 200);
    let id = uuid::Uuid::parse_str(l[0]["id"].as_str().unwrap()).unwrap();
    let tries = store::webhooks::attempts(&app.db, id).await.unwrap();
    let statuses: Vec<Option<i32>> = tries.iter().map(|t| t.status).collect();
    assert_eq!(statuses, vec![Some(500), Some(200)]);
    assert!(tries[1].time > tries[0].time);
}

#[tokio::test]
async fn a_pending_delivery_survives_a_restart_and_new_audit_types_fan_out() {
    let slack = json!({"events": ["BUDGET_THRESHOLD"], "format": "SLACK"});
    let (app, rx, w) = hooked(&[], BOSS, slack).await;
    // The collector's audit event (appended by the lead's work later), with no worker
    // running: the delivery waits in PostgreSQL.
    append(
        &app,
        EventType::BudgetThreshold,
        "teams/acme/policy",
        json!({"percent": 80}),
    )
    .await;
    // An event of another type, or of another team, is no delivery.
    append(&app, EventType::SpotReclaimed, "teams/acme", json!({})).await;
    let l = log(&app, VIEWER, &w).await;
    assert_eq!(l.len(), 1, "{l:#?}");
    assert_eq!(
        (l[0]["state"].as_str(), l[0]["attempts"].as_i64()),
        (Some("PENDING"), Some(0))
    );
    assert!(l[0]["nextAttemptTime"].is_string());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rx.got().is_empty());

    // A new process on the same database delivers it.
    let restarted = TestApp::spawn_with(app.db.clone(), app.url.clone(), |s| s).await;
    let _w = workers(&restarted, true);
    let got = rx.wait_for(1).await;
    let body = got[0].json();
    assert_eq!(got[0].header("x-kinetic-event"), "BUDGET_THRESHOLD");
    // Slack's incoming-webhook shape: a fallback text and Block Kit blocks.
    assert!(
        body["text"].as_str().unwrap().contains("BUDGET_THRESHOLD"),
        "{body:#}"
    );
    assert_eq!(body["blocks"][0]["type"], "section");
    assert_eq!(body["blocks"][0]["text"]["type"], "mrkdwn");
    assert_eq!(body["blocks"][1]["type"], "context");
    assert!(
        body["blocks"][1]["elements"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&got[0].header("x-kinetic-delivery"))
    );
    assert_eq!(settled(&restarted, &w).await[0]["state"], "DELIVERED");

    // Retention: a settled delivery older than the operations' retention goes.
    let month = Duration::from_secs(30 * 86_400);
    sqlx::query("UPDATE webhook_deliveries SET create_time = now() - interval '31 days'")
        .execute(&app.db)
        .await
        .unwrap();
    assert_eq!(
        kineticd::ops::retention::purge_deliveries_once(&app.db, month)
            .await
            .unwrap(),
        1
    );
    assert!(log(&app, VIEWER, &w).await.is_empty());
}

#[tokio::test]
async fn a_delivery_to_an_address_the_worker_refuses_is_not_sent() {
    // Allowed when it was created (--dev allows loopback), refused by a deployment
    // that does not: checked again at delivery, the receiver never sees it.
    let (app, rx, w) = hooked(&[], OWNER, json!({"events": ["SPOT_RECLAIMED"]})).await;
    let _w = workers(&app, false);
    append(&app, EventType::SpotReclaimed, "teams/acme", json!({})).await;
    let l = log_once(&app, &w, |d| d["attempts"].as_i64() >= Some(1)).await;
    assert_eq!(l[0]["state"], "PENDING");
    assert!(l[0].get("lastStatus").is_none());
    assert!(
        l[0]["lastError"].as_str().unwrap().contains("loopback"),
        "{l:#?}"
    );
    assert!(rx.got().is_empty());
}

#[tokio::test]
async fn ssrf_and_bad_input_are_refused_and_nothing_is_stored() {
    let app = acme().await;
    for url in [
        "http://169.254.169.254/computeMetadata/v1/",
        "https://169.254.169.254/",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://10.0.0.1/hook",
        "https://192.168.0.10/hook",
        "https://[fe80::1]/hook",
        "https://[::ffff:169.254.169.254]/",
    ] {
        let r = app
            .post(
                OWNER,
                HOOKS,
                json!({"url": url, "events": ["OPERATION_FINISHED"]}),
            )
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "WEBHOOK_URL_REFUSED");
        assert_eq!(
            r.body["error"]["details"][0]["metadata"]["field"], "url",
            "{url}"
        );
    }
    let bad = [
        (
            json!({"url": "ftp://hooks.example.com/x", "events": ["OPERATION_FINISHED"]}),
            "url",
        ),
        (
            json!({"url": "http://hooks.example.com/x", "events": ["OPERATION_FINISHED"]}),
            "url",
        ),
        (
            json!({"url": "https://u:p@hooks.example.com/x", "events": ["OPERATION_FINISHED"]}),
            "url",
        ),
        (
            json!({"url": "hooks.example.com", "events": ["OPERATION_FINISHED"]}),
            "url",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "events": []}),
            "events",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "events": ["OPERATION_DONE"]}),
            "events",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "events": ["IDLE_ACTION", "IDLE_ACTION"]}),
            "events",
        ),
        (
            json!({"url": "https://hooks.example.com/x", "events": ["IDLE_ACTION"], "format": "XML"}),
            "format",
        ),
    ];
    for (body, field) in bad {
        let r = app.post(OWNER, HOOKS, body.clone()).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_WEBHOOK");
        assert_eq!(
            r.body["error"]["details"][0]["metadata"]["field"], field,
            "{body}"
        );
    }
    let r = app
        .post(
            OWNER,
            HOOKS,
            json!({"url": "https://h.example.com/", "events": ["IDLE_ACTION"], "secret": "mine"}),
        )
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "UNKNOWN_FIELD");
    assert_eq!(ok(app.get(OWNER, HOOKS).await)["webhooks"], json!([]));

    // The cap: 20 webhooks a team.
    for i in 0..20 {
        create(
            &app,
            OWNER,
            json!({"url": format!("https://hooks{i}.example.com/x"), "events": ["TTL_WARNING"]}),
        )
        .await;
    }
    let r = app
        .post(
            OWNER,
            HOOKS,
            json!({"url": "https://one-more.example.com/", "events": ["TTL_WARNING"]}),
        )
        .await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "WEBHOOK_LIMIT_REACHED");
    assert_eq!(
        ok(app.get(OWNER, HOOKS).await)["webhooks"]
            .as_array()
            .unwrap()
            .len(),
        20
    );
}

#[tokio::test]
async fn members_read_admins_change_outsiders_see_nothing() {
    let app = acme().await;
    assert_eq!(
        put_role(&app, OWNER, "member@example.com", "MEMBER")
            .await
            .status,
        200
    );
    let body = json!({"url": "https://hooks.example.com/k", "events": ["APPROVAL_NEEDED"]});
    for who in [VIEWER, "member@example.com"] {
        let r = app.post(who, HOOKS, body.clone()).await;
        expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    }
    expect_not_found(
        &app.post(OUTSIDER, HOOKS, body.clone()).await,
        "TEAM_NOT_FOUND",
    );
    let w = create(&app, BOSS, body).await;
    let path = hook_path(&w);
    assert!(
        w["name"]
            .as_str()
            .unwrap()
            .starts_with("teams/acme/webhooks/wh-"),
        "{w}"
    );
    for p in [HOOKS.to_owned(), path.clone(), format!("{path}/deliveries")] {
        expect_not_found(&app.get(OUTSIDER, &p).await, "TEAM_NOT_FOUND");
        assert_eq!(app.get("member@example.com", &p).await.status, 200, "{p}");
    }
    expect_not_found(&app.delete(OUTSIDER, &path).await, "TEAM_NOT_FOUND");
    let r = app.delete(VIEWER, &path).await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    expect_not_found(
        &app.get(VIEWER, &format!("{HOOKS}/wh-00000000")).await,
        "WEBHOOK_NOT_FOUND",
    );
    assert_eq!(app.delete(BOSS, &path).await.status, 204);
    expect_not_found(&app.get(VIEWER, &path).await, "WEBHOOK_NOT_FOUND");
    expect_not_found(
        &app.get(VIEWER, &format!("{path}/deliveries")).await,
        "WEBHOOK_NOT_FOUND",
    );
    expect_not_found(&app.delete(BOSS, &path).await, "WEBHOOK_NOT_FOUND");
    let trail = ok(app.get(VIEWER, "/v1/teams/acme/events?pageSize=1000").await);
    let deleted: Vec<&Value> = trail["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "WEBHOOK_DELETED")
        .collect();
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0]["actor"], BOSS);
    assert_eq!(deleted[0]["target"], w["name"]);
}

#[tokio::test]
async fn deleting_a_webhook_removes_its_pending_deliveries() {
    let app = acme().await;
    let w = create(
        &app,
        OWNER,
        json!({"url": "https://hooks.example.com/x", "events": ["IDLE_WARNING"]}),
    )
    .await;
    append(&app, EventType::IdleWarning, "teams/acme", json!({})).await;
    assert_eq!(log(&app, OWNER, &w).await.len(), 1);
    assert_eq!(app.delete(OWNER, &hook_path(&w)).await.status, 204);
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM webhook_deliveries")
        .fetch_one(&app.db)
        .await
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test]
async fn two_replicas_send_each_delivery_once() {
    let (app, rx, _) = hooked(&[], OWNER, json!({"events": ["IDLE_ACTION"]})).await;
    let other = TestApp::spawn_with(app.db.clone(), app.url.clone(), |s| s).await;
    let _a = workers(&app, true);
    let _b = workers(&other, true);
    const N: usize = 40;
    for i in 0..N {
        append(&app, EventType::IdleAction, "teams/acme", json!({"i": i})).await;
    }
    rx.wait_for(N).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let got = rx.got();
    let mut ids: Vec<String> = got.iter().map(|g| g.header("x-kinetic-delivery")).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((got.len(), ids.len()), (N, N), "a delivery sent twice");

    // The log pages newest first through every delivery.
    let w = &ok(app.get(VIEWER, HOOKS).await)["webhooks"][0];
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let path = format!("{}/deliveries?pageSize=15&pageToken={token}", hook_path(w));
        let page = ok(app.get(VIEWER, &path).await);
        for d in page["deliveries"].as_array().unwrap() {
            seen.push(d["id"].as_str().unwrap().to_owned());
        }
        match page["nextPageToken"].as_str() {
            Some(t) => token = t.to_owned(),
            None => break,
        }
    }
    seen.sort();
    assert_eq!(seen, ids);
}

#[tokio::test]
async fn a_delivery_never_accepted_ends_failed_and_redirects_are_not_followed() {
    // Always a redirect (to a path that would answer 200): never followed, never delivered.
    let (app, rx, w) = hooked(&[307; 64], OWNER, json!({"events": ["TTL_WARNING"]})).await;
    let mut cfg = test_worker_config(1);
    cfg.deliveries = DeliveryConfig {
        backoff_base: Duration::from_millis(50),
        backoff_cap: Duration::from_millis(100),
        retry_period: Duration::from_millis(600),
        poll: Duration::from_millis(50),
        ..deliveries(true)
    };
    let _w = app.workers(cfg);
    append(&app, EventType::TtlWarning, "teams/acme", json!({})).await;
    let l = settled(&app, &w).await;
    assert_eq!(l[0]["state"], "FAILED", "{l:#?}");
    assert_eq!(l[0]["lastStatus"], 307);
    let tries = l[0]["attempts"].as_i64().unwrap();
    assert!(tries >= 2, "{l:#?}");
    assert!(l[0].get("nextAttemptTime").is_none() && l[0].get("deliverTime").is_none());
    // Every try reached the webhook's own path, none followed the redirect.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.got().len() as i64, tries);
}

#[tokio::test]
async fn audit_types_map_to_webhook_events() {
    let (db, _) = crate::common::fresh_db().await;
    let cases = [
        (
            "OPERATION_STATE_CHANGED",
            json!({"to": "SUCCEEDED"}),
            vec!["OPERATION_FINISHED"],
        ),
        (
            "OPERATION_STATE_CHANGED",
            json!({"to": "FAILED"}),
            vec!["OPERATION_FINISHED"],
        ),
        (
            "OPERATION_STATE_CHANGED",
            json!({"to": "CANCELLED"}),
            vec!["OPERATION_FINISHED"],
        ),
        (
            "OPERATION_STATE_CHANGED",
            json!({"to": "CANCELLED", "reason": "APPROVAL_EXPIRED"}),
            vec!["OPERATION_FINISHED", "APPROVAL_DECIDED"],
        ),
        (
            "OPERATION_STATE_CHANGED",
            json!({"to": "PENDING_APPROVAL"}),
            vec!["APPROVAL_NEEDED"],
        ),
        ("OPERATION_STATE_CHANGED", json!({"to": "RUNNING"}), vec![]),
        ("OPERATION_APPROVED", json!({}), vec!["APPROVAL_DECIDED"]),
        ("OPERATION_REJECTED", json!({}), vec!["APPROVAL_DECIDED"]),
        ("IDLE_WARNING", json!({}), vec!["IDLE_WARNING"]),
        ("IDLE_ACTION", json!({}), vec!["IDLE_ACTION"]),
        ("TTL_WARNING", json!({}), vec!["TTL_WARNING"]),
        ("BUDGET_THRESHOLD", json!({}), vec!["BUDGET_THRESHOLD"]),
        ("SPOT_RECLAIMED", json!({}), vec!["SPOT_RECLAIMED"]),
        ("REQUEST_ACCEPTED", json!({}), vec![]),
        ("MEMBER_ADDED", json!({}), vec![]),
    ];
    for (kind, details, want) in cases {
        let got: Vec<String> = sqlx::query_scalar("SELECT webhook_events_of($1, $2)")
            .bind(kind)
            .bind(&details)
            .fetch_one(&db)
            .await
            .unwrap();
        assert_eq!(got, want, "{kind} {details}");
    }
    // Every name the mapping yields is one a webhook may subscribe to.
    for e in kineticd::domain::webhooks::WebhookEvent::ALL {
        assert!(
            ["OPERATION_FINISHED", "APPROVAL_NEEDED", "APPROVAL_DECIDED"].contains(&e.as_str())
                || EventType::parse(e.as_str()).is_ok(),
            "{e}"
        );
    }
}
