//! Test harness: a real PostgreSQL (`DATABASE_URL`, or a private server started once per
//! test process from the installed binaries), one fresh database per test cloned from a
//! migrated template, and the real app on an ephemeral port.
#![allow(dead_code)]

pub mod api_paths;
pub mod checks;
pub mod dev_server;
pub mod gke;
pub mod iap_keys;
pub mod kubectl;
pub mod shell;
pub mod tls_front;

use std::net::SocketAddr;
use std::sync::OnceLock;

use kineticd::app::{self, AppState};
use kineticd::config::{Identity, LogFormat, Settings};
use kineticd::devdb::PrivatePostgres;
use kineticd::domain::Email;
use kineticd::ops::steps::RetryPolicy;
use kineticd::ops::{self, WorkerConfig, WorkerPool};
use kineticd::store::{self, Db};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sqlx::{Connection, Executor, PgConnection};

/// URL of the server's maintenance database, with `{db}` where a database name goes.
fn server_url_template() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("DATABASE_URL")
            && !url.trim().is_empty()
        {
            // Replace the database part of the URL (keep any query string).
            let (base, query) = match url.split_once('?') {
                Some((b, q)) => (b.to_owned(), format!("?{q}")),
                None => (url.clone(), String::new()),
            };
            let cut = base.rfind('/').expect("DATABASE_URL has a database part");
            return format!("{}/{{db}}{query}", &base[..cut]);
        }
        static PG: OnceLock<PrivatePostgres> = OnceLock::new();
        // Start on a throw-away runtime in its own thread: the server is supervised by a
        // long-lived thread of its own and dies with this process.
        let pg = std::thread::spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime")
                .block_on(PrivatePostgres::start_temporary())
        })
        .join()
        .expect("start thread")
        .expect(
            "private PostgreSQL for tests (install PostgreSQL server binaries or set DATABASE_URL)",
        );
        let url = pg.url("kt_db_marker").replace("kt_db_marker", "{db}");
        let _ = PG.set(pg);
        url
    })
}

/// `method path` (with `body`) on the simulator's admin API (`/sim/v1/...`), which must
/// succeed; its JSON answer (null when it has none).
pub async fn sim_admin(
    sim: &kineticd::sim::Sim,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let http = app::http_client().unwrap();
    let mut req = http.request(method, format!("{}{path}", sim.url()));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("simulator");
    assert!(r.status().is_success(), "{path}: {}", r.status());
    r.json().await.unwrap_or(Value::Null)
}

pub fn db_url(name: &str) -> String {
    server_url_template().replace("{db}", name)
}

fn template_name() -> String {
    let h = kineticd::domain::hash::fnv1a(store::db::MIGRATOR.iter().flat_map(|m| {
        m.checksum
            .iter()
            .copied()
            .chain(m.version.to_le_bytes())
            .collect::<Vec<u8>>()
    }));
    format!("kineticd_tpl_{h:016x}")
}

/// A connection to the server's `postgres` database, to create databases from.
pub async fn admin_connection() -> PgConnection {
    PgConnection::connect(&db_url("postgres"))
        .await
        .expect("connect to postgres")
}

/// Runs database DDL (`CREATE DATABASE ...`: names cannot be bound), panicking with the
/// statement if it fails.
pub async fn ddl(admin: &mut PgConnection, sql: String) {
    if let Err(e) = admin.execute(sqlx::AssertSqlSafe(sql.clone())).await {
        panic!("{sql}: {e}");
    }
}

static TEMPLATE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();

async fn ensure_template() -> String {
    TEMPLATE
        .get_or_init(|| async {
            let name = template_name();
            let mut admin = admin_connection().await;
            // Serialise template creation across test processes sharing one server.
            admin
                .execute("SELECT pg_advisory_lock(7301)")
                .await
                .expect("lock");
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                    .bind(&name)
                    .fetch_one(&mut admin)
                    .await
                    .expect("query");
            if !exists {
                let tmp = format!("{name}_build_{}", std::process::id());
                ddl(&mut admin, format!("DROP DATABASE IF EXISTS {tmp}")).await;
                ddl(&mut admin, format!("CREATE DATABASE {tmp}")).await;
                {
                    let db = store::connect(&db_url(&tmp), 2)
                        .await
                        .expect("connect template");
                    store::migrate(&db).await.expect("migrate template");
                    db.close().await;
                }
                ddl(&mut admin, format!("ALTER DATABASE {tmp} RENAME TO {name}")).await;
            }
            admin
                .execute("SELECT pg_advisory_unlock(7301)")
                .await
                .expect("unlock");
            name
        })
        .await
        .clone()
}

/// A fresh, migrated database for one test.
pub async fn fresh_db() -> (Db, String) {
    let template = ensure_template().await;
    let name = format!("kt_{}", uuid::Uuid::new_v4().simple());
    let mut admin = admin_connection().await;
    let clone = format!("CREATE DATABASE {name} TEMPLATE {template}");
    ddl(&mut admin, clone).await;
    let url = db_url(&name);
    // A generous wait for a free connection: on a loaded machine, 1,000 woken waiters
    // sharing 10 connections must queue, not fail.
    let db = store::db::connect_waiting(&url, 10, std::time::Duration::from_secs(120))
        .await
        .expect("connect test db");
    (db, url)
}

pub const ADMIN: &str = "admin@example.com";

/// The callers of the tests that need one per role of a seeded team: its OWNER, a
/// VIEWER, and someone outside it.
pub const OWNER: &str = "owner@example.com";
pub const VIEWER: &str = "viewer@example.com";
pub const OUTSIDER: &str = "outsider@example.com";
/// Others a test makes members of a team, each with the role the test gives them.
pub const BOB: &str = "bob@example.com";
pub const CAROL: &str = "carol@example.com";

pub fn test_settings(url: &str) -> Settings {
    Settings {
        dev: true,
        listen: "127.0.0.1:0".parse().unwrap(),
        database_url: Some(url.to_owned()),
        db_max_connections: 10,
        identity: Identity::Dev,
        admins: vec![Email::parse(ADMIN).unwrap()],
        log_format: LogFormat::Pretty,
        workers: 0,
        lease: std::time::Duration::from_secs(30),
        operation_retention: std::time::Duration::from_secs(30 * 86_400),
        approval_ttl: std::time::Duration::from_secs(7 * 86_400),
        audit_retention: std::time::Duration::from_secs(400 * 86_400),
        usage_interval: std::time::Duration::from_secs(60),
        test_workflows: true,
        shutdown_grace: std::time::Duration::from_secs(5),
        data_dir: std::env::temp_dir(),
        sim_listen: "127.0.0.1:0".parse().unwrap(),
        sim_speed: Some(0.0),
        prices: Default::default(),
        gcp: kineticd::cloud::gcp::GcpConfig::google(),
        gcp_explicit: false,
        manifests: Default::default(),
        limits: Default::default(),
        webhook_allow: kineticd::domain::webhooks::Allow {
            loopback: true,
            private: false,
        },
    }
}

/// The real app on 127.0.0.1:0 against a fresh database.
pub struct TestApp {
    pub addr: SocketAddr,
    pub db: Db,
    pub url: String,
    pub http: reqwest::Client,
    pub state: AppState,
}

/// Worker settings for tests: quick fallback polling and short retry delays.
pub fn test_worker_config(workers: usize) -> WorkerConfig {
    WorkerConfig {
        workers,
        lease: std::time::Duration::from_secs(10),
        poll: std::time::Duration::from_millis(200),
        policy: RetryPolicy {
            min_delay: std::time::Duration::from_millis(5),
            max_delay: std::time::Duration::from_millis(50),
            max_attempts: 5,
        },
        ..WorkerConfig::default()
    }
}

/// The entry of the array `body[items]` whose `key` is `value`; panics, showing `body`,
/// when there is none.
#[track_caller]
pub fn entry<'a, V>(body: &'a Value, items: &str, key: &str, value: V) -> &'a Value
where
    Value: PartialEq<V>,
    V: std::fmt::Display + Copy,
{
    body[items]
        .as_array()
        .and_then(|a| a.iter().find(|e| e[key] == value))
        .unwrap_or_else(|| panic!("no {items} entry with {key} {value} in {body:#}"))
}

/// Asserts that `r`'s `Server-Timing` header times each live read of a cluster (GKE,
/// the Kubernetes API's nodes and pods, Compute).
#[track_caller]
pub fn assert_live_read_timings(r: &Resp) {
    let timing = r.headers["server-timing"].to_str().unwrap().to_owned();
    for part in [
        "cloud;dur=",
        "kube;dur=",
        "nodes;dur=",
        "pods;dur=",
        "compute;dur=",
    ] {
        assert!(timing.contains(part), "{timing}");
    }
}

/// The string `key` of every entry of the array `body[items]`, in order (panics, showing
/// `body`, when there is no such array or an entry has no such string).
#[track_caller]
pub fn ids<'a>(body: &'a Value, items: &str, key: &str) -> Vec<&'a str> {
    body[items]
        .as_array()
        .unwrap_or_else(|| panic!("no {items} in {body:#}"))
        .iter()
        .map(|e| {
            e[key]
                .as_str()
                .unwrap_or_else(|| panic!("no {key} in {e:#}"))
        })
        .collect()
}

/// The id of the spot pool of a pool list (a failover pair's first).
#[track_caller]
pub fn spot_pool(list: &Value) -> String {
    entry(list, "nodePools", "spot", true)["poolId"]
        .as_str()
        .expect("the spot pool")
        .to_owned()
}

/// A response: status, JSON body (Null when empty), headers.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Resp {
    /// The Google error reason, when this is an error.
    pub fn reason(&self) -> &str {
        self.body["error"]["details"][0]["reason"]
            .as_str()
            .unwrap_or("")
    }
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        let (db, url) = fresh_db().await;
        Self::spawn_with(db, url, |s| s).await
    }

    /// The app on a fresh database, its settings changed by `tweak`.
    pub async fn spawn_tweaked(tweak: impl FnOnce(Settings) -> Settings) -> TestApp {
        let (db, url) = fresh_db().await;
        Self::spawn_with(db, url, tweak).await
    }

    pub async fn spawn_with(
        db: Db,
        url: String,
        tweak: impl FnOnce(Settings) -> Settings,
    ) -> TestApp {
        // No simulated Compute, GKE, Storage, IAM, ... unless a test starts a simulator:
        // those calls go to a closed port. Resource Manager's projects and their IAM
        // policies (what binding a project to a team reads) come from a simulator of
        // their own, whose projects every caller owns.
        let (sim, _) = start_sim().await;
        let projects = kineticd::cloud::gcp::GcpConfig::single_root(
            &url::Url::parse(&sim.url()).expect("simulator URL"),
        );
        let (mut gcp, manifests) =
            kineticd::cli::dev::sim_config("http://127.0.0.1:9", 0.0).expect("config");
        gcp.resource_manager = projects.resource_manager;
        let http = app::http_client().expect("http");
        let cloud = kineticd::cloud::Cloud::new(gcp, manifests, http);
        Self::spawn_cloud(db, url, cloud, tweak).await
    }

    /// The app on a fresh database with its cloud clients pointed at a new simulator
    /// (speed 0); returns the simulator too (keep it alive).
    pub async fn spawn_sim() -> (TestApp, kineticd::sim::Sim) {
        Self::spawn_sim_with(kineticd::sim::SimConfig {
            clock: kineticd::sim::clock::ClockMode::Auto { speed: 0.0 },
            ..Default::default()
        })
        .await
    }

    /// [`TestApp::spawn_sim`] with a simulator configured by `cfg`.
    pub async fn spawn_sim_with(cfg: kineticd::sim::SimConfig) -> (TestApp, kineticd::sim::Sim) {
        let (sim, _) = start_sim_with(cfg).await;
        let (db, url) = fresh_db().await;
        (Self::spawn_on(db, url, &sim.url(), |s| s).await, sim)
    }

    /// The app with its cloud clients pointed at the simulator at `sim_url`.
    pub async fn spawn_on(
        db: Db,
        url: String,
        sim_url: &str,
        tweak: impl FnOnce(Settings) -> Settings,
    ) -> TestApp {
        let cloud = kineticd::cli::dev::simulated_cloud(sim_url, app::http_client().expect("http"))
            .expect("cloud");
        Self::spawn_cloud(db, url, cloud, tweak).await
    }

    /// The app with the cloud clients `cloud`.
    pub async fn spawn_cloud(
        db: Db,
        url: String,
        cloud: kineticd::cloud::Cloud,
        tweak: impl FnOnce(Settings) -> Settings,
    ) -> TestApp {
        let settings = tweak(test_settings(&url));
        let state = AppState::start(db.clone(), &url, &settings, cloud)
            .await
            .expect("state");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(app::serve_with(
            listener,
            app::router(state.clone()),
            app::connection_limits(&settings.limits),
            std::future::pending(),
        ));
        TestApp {
            addr,
            db,
            url,
            http: app::http_client().expect("http client"),
            state,
        }
    }

    /// Start a worker pool in this process (NOOP workflow enabled).
    pub fn workers(&self, cfg: WorkerConfig) -> WorkerPool {
        WorkerPool::start(
            self.db.clone(),
            self.state.events.clone(),
            ops::registry(&self.db, &self.state.cloud, true),
            cfg,
        )
    }

    /// POST a NOOP operation as `user`; returns the operation JSON (asserts 202).
    pub async fn noop(&self, user: &str, body: Value) -> Value {
        let r = self.post(user, "/v1/testing/noopOperations", body).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{:?}", r.body);
        r.body
    }

    /// `POST /v1/{name}:{action}` (`cancel`, `wait?timeout=...`) on operation `name`
    /// (`operations/ID`), without a body.
    pub async fn op_action(&self, user: &str, name: &str, action: &str) -> Resp {
        self.post(user, &format!("/v1/{name}:{action}"), Value::Null)
            .await
    }

    /// A GET of `path` as `user` (the dev identity header), as the raw response: for the
    /// event streams a test holds open.
    pub fn stream_as(
        &self,
        user: &str,
        path: &str,
    ) -> impl std::future::Future<Output = reqwest::Result<reqwest::Response>> + use<> {
        self.request_as(user, Method::GET, path).send()
    }

    /// `:wait` on an operation name (`operations/ID`) until done (deadline 60 s).
    pub async fn wait_done(&self, user: &str, name: &str) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let r = self.op_action(user, name, "wait?timeout=10s").await;
            assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
            if r.body["done"] == true {
                return r.body;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "operation {name} not done in time: {}",
                r.body
            );
        }
    }

    pub fn url_of(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// A request of `method path` as `user` (the dev identity header), to finish and send.
    pub fn request_as(&self, user: &str, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url_of(path))
            .header("x-kinetic-user", user)
    }

    /// Send `method path` as `user` (dev identity header), with an optional JSON body.
    /// An error answer must be one the published document lists for the operation.
    pub async fn call(&self, user: &str, method: Method, path: &str, body: Option<Value>) -> Resp {
        let mut req = self.request_as(user, method.clone(), path);
        if let Some(b) = body {
            req = req.json(&b);
        }
        Self::read_as(Some(&method), req.send().await.expect("request")).await
    }

    /// Read a response of the app. An error answer must carry a reason the published
    /// document lists for some method of the route (the request's method is unknown
    /// here; [`TestApp::call`] checks with it).
    pub async fn read(r: reqwest::Response) -> Resp {
        Self::read_as(None, r).await
    }

    async fn read_as(method: Option<&Method>, r: reqwest::Response) -> Resp {
        let status = r.status();
        let headers = r.headers().clone();
        let url = r.url().clone();
        let text = r.text().await.expect("body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        let resp = Resp {
            status,
            body,
            headers,
        };
        reasons_conform(method, &url, &resp);
        resp
    }

    pub async fn get(&self, user: &str, path: &str) -> Resp {
        self.call(user, Method::GET, path, None).await
    }
    pub async fn post(&self, user: &str, path: &str, body: Value) -> Resp {
        self.call(user, Method::POST, path, Some(body)).await
    }
    pub async fn put(&self, user: &str, path: &str, body: Value) -> Resp {
        self.call(user, Method::PUT, path, Some(body)).await
    }
    pub async fn patch(&self, user: &str, path: &str, body: Value) -> Resp {
        self.call(user, Method::PATCH, path, Some(body)).await
    }
    pub async fn delete(&self, user: &str, path: &str) -> Resp {
        self.call(user, Method::DELETE, path, None).await
    }

    /// Create team `id` owning `projects`, as `owner`.
    pub async fn team(&self, owner: &str, id: &str, projects: &[&str]) -> Value {
        let r = self
            .post(
                owner,
                "/v1/teams",
                serde_json::json!({"teamId": id, "projects": projects}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        r.body
    }

    /// Add `email` to `team` with `role`, as `by`.
    pub async fn member(&self, by: &str, team: &str, email: &str, role: &str) {
        let r = self
            .put(
                by,
                &format!("/v1/teams/{team}/members/{email}"),
                serde_json::json!({"role": role}),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    }

    /// Insert a cluster record directly (clusters are created by `up` in production).
    pub async fn cluster(
        &self,
        team: &str,
        project: &str,
        zone: &str,
        name: &str,
    ) -> store::clusters::ClusterRecord {
        store::clusters::insert(
            &self.db,
            store::clusters::NewCluster {
                project_id: project,
                zone,
                name,
                team_id: team,
                state: kineticd::domain::ClusterState::Running,
                spec: store::ClusterSpecRecord {
                    accelerator: Some("gpu-l4".into()),
                    ..Default::default()
                },
                resources: serde_json::json!({"gkeCluster": format!("projects/{project}/locations/{zone}/clusters/{name}")}),
                created_by: "owner@example.com",
            },
        )
        .await
        .expect("insert cluster")
    }

    /// Insert a RUNNING node pool record directly into `cluster` (the spec as JSON).
    pub async fn pool(&self, cluster: uuid::Uuid, id: &str, spec: Value) {
        let spec = serde_json::from_value(spec).expect("pool spec");
        store::node_pools::insert(
            &self.db,
            cluster,
            id,
            kineticd::domain::PoolState::Running,
            &spec,
            "test@example.com",
        )
        .await
        .expect("insert pool");
    }
}

/// A simulator at speed 0 (every cloud operation instantly done) on 127.0.0.1:0, and the
/// production GCP clients pointed at it.
pub async fn start_sim() -> (kineticd::sim::Sim, kineticd::cloud::gcp::GcpClients) {
    let cfg = kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Auto { speed: 0.0 },
        ..Default::default()
    };
    start_sim_with(cfg).await
}

/// A simulator with `cfg`, and the production GCP clients pointed at it, making one
/// attempt per call (`CallBudget::once`), so that a test sees each answer the simulator
/// gives; the retries themselves are tested in `tests/cloud/retries.rs`.
pub async fn start_sim_with(
    cfg: kineticd::sim::SimConfig,
) -> (kineticd::sim::Sim, kineticd::cloud::gcp::GcpClients) {
    let (sim, _) = kineticd::sim::Sim::start(cfg, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("start simulator");
    let root = url::Url::parse(&sim.url()).unwrap();
    let gcp = kineticd::cloud::gcp::GcpClients::new(
        kineticd::cloud::gcp::GcpConfig::single_root(&root),
        app::http_client().expect("http client"),
    )
    .with_budget(kineticd::cloud::retry::CallBudget::once());
    (sim, gcp)
}

/// GET `url` with `http` and decode its JSON body (panics on a transport or decoding error).
pub async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    let r = http.get(url).send().await.expect("GET");
    r.json().await.expect("JSON body")
}

/// The published OpenAPI document (as JSON) and its route table, built once.
fn published() -> &'static (Value, kineticd::api::route_table::RouteTable) {
    static DOC: OnceLock<(Value, kineticd::api::route_table::RouteTable)> = OnceLock::new();
    DOC.get_or_init(|| {
        let doc = kineticd::api::openapi::document();
        let table = kineticd::api::route_table::RouteTable::from_openapi(&doc);
        (serde_json::to_value(&doc).expect("document as JSON"), table)
    })
}

/// Checks an answer of the app (one carrying `x-request-id`) against the published
/// document: an error's reason must be in the catalogue and, on a documented operation,
/// listed under the answer's status in that operation's `x-kineticd-reasons`. Panics
/// otherwise; with `KINETIC_REASONS_MISSING=FILE` it appends `operationId status reason`
/// lines to FILE instead (to fill src/api/route_reasons.rs from a whole test run).
#[track_caller]
fn reasons_conform(method: Option<&Method>, url: &reqwest::Url, r: &Resp) {
    let reason = r.reason();
    if r.status.as_u16() < 400 || reason.is_empty() || !r.headers.contains_key("x-request-id") {
        return;
    }
    assert!(
        kineticd::api::reasons::find(reason).is_some(),
        "{} {url} answered {} {reason}, a reason missing from the catalogue (src/api/reasons.rs)",
        method.map(Method::as_str).unwrap_or("?"),
        r.status
    );
    let (doc, routes) = published();
    let Some(route) = routes.find(url.path()) else {
        return; // not a published route (404 ROUTE_NOT_FOUND, the testing routes)
    };
    let item = &doc["paths"][&route.path];
    let methods: Vec<String> = match method {
        Some(m) if *m == Method::HEAD => vec!["get".into()],
        Some(m) => vec![m.as_str().to_ascii_lowercase()],
        None => ["get", "put", "post", "delete", "patch"]
            .map(String::from)
            .to_vec(),
    };
    let ops: Vec<&Value> = methods
        .iter()
        .map(|m| &item[m.as_str()])
        .filter(|o| o.is_object())
        .collect();
    if ops.is_empty() {
        return; // an undocumented method: 405
    }
    let status = r.status.as_u16().to_string();
    let listed = ops.iter().any(|o| {
        o["responses"][&status][kineticd::api::route_reasons::EXTENSION]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == reason))
    });
    if listed {
        return;
    }
    let id = ops[0]["operationId"].as_str().unwrap_or("?");
    if let Ok(file) = std::env::var("KINETIC_REASONS_MISSING") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .expect("KINETIC_REASONS_MISSING file");
        writeln!(f, "{id} {status} {reason}").expect("write");
        return;
    }
    panic!(
        "{} {url} answered {status} {reason}, which the published document does not list for \
         operation {id} (add it to TABLE in src/api/route_reasons.rs, then regenerate \
         openapi/kineticd.json); body: {}",
        method.map(Method::as_str).unwrap_or("?"),
        r.body
    );
}
