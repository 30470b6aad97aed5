//! The real app for a benchmark: a database on the bench's private PostgreSQL, the
//! cloud simulator at a fixed clock speed, and the HTTP API on 127.0.0.1, all in this
//! process. Included (by `#[path]`) by the benches that measure through the API.
//!
//! Invariant: the app runs with the production router, clients and settings of
//! `serve --dev`; only the addresses (port 0) and the simulator's speed differ.

use std::time::Duration;

use anyhow::Result;
use kineticd::app::{self, AppState};
use kineticd::cloud::Cloud;
use kineticd::config::{Identity, LogFormat, Settings};
use kineticd::devdb::PrivatePostgres;
use kineticd::ops::{self, WorkerConfig, WorkerPool};
use kineticd::sim::clock::ClockMode;
use kineticd::sim::{Sim, SimConfig};
use kineticd::store::{self, Db};

/// The running app (no workers: a bench starts them when it needs them).
pub struct App {
    /// `http://127.0.0.1:{port}`.
    pub api: String,
    pub http: reqwest::Client,
    pub db: Db,
    pub state: AppState,
    /// The simulator, kept running for as long as the app.
    pub _sim: Sim,
}

impl App {
    /// The operation workers with the production configuration (8 workers, 8 steps at
    /// once per operation) on this app's database and cloud.
    pub fn start_workers(&self) -> WorkerPool {
        WorkerPool::start(
            self.db.clone(),
            self.state.events.clone(),
            ops::registry(&self.db, &self.state.cloud, false),
            WorkerConfig::default(),
        )
    }
}

/// Database `name` (created if absent, migrated), the simulator at `speed` (its
/// configuration changed by `tweak`, e.g. larger quotas) and the API.
pub async fn start(
    pg: &PrivatePostgres,
    name: &str,
    speed: f64,
    tweak: impl FnOnce(&mut SimConfig),
) -> Result<App> {
    pg.ensure_database(name).await?;
    start_at(&pg.url(name), 20, speed, tweak).await
}

/// [`start`] at simulator speed 0 with regional quota for `nodes` g2-standard-8 L4 nodes
/// (8 vCPUs and one L4 each, twice over), after printing the machine's CPUs and load.
#[allow(dead_code)] // used by some of the benches that include this file
pub async fn start_for_l4_nodes(pg: &PrivatePostgres, name: &str, nodes: usize) -> Result<App> {
    let gpus = nodes as f64 * 2.0;
    let app = start(pg, name, 0.0, |c| {
        c.quotas.insert("NVIDIA_L4_GPUS".into(), gpus);
        c.quotas.insert("CPUS".into(), gpus * 8.0);
    })
    .await?;
    println!(
        "machine: {} CPUs, load average {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        super::support::loadavg()
    );
    Ok(app)
}

/// The app on the (existing, possibly empty) database at `url`, migrated, with a pool of
/// `pool` connections; otherwise as [`start`].
pub async fn start_at(
    url: &str,
    pool: u32,
    speed: f64,
    tweak: impl FnOnce(&mut SimConfig),
) -> Result<App> {
    let url = url.to_owned();
    let db = store::connect(&url, pool).await?;
    store::migrate(&db).await?;
    let mut config = SimConfig {
        clock: ClockMode::Auto { speed },
        ..SimConfig::default()
    };
    tweak(&mut config);
    let (sim, _) = Sim::start(config, "127.0.0.1:0".parse()?).await?;
    let http = app::http_client()?;
    let (gcp, manifests) = kineticd::cli::dev::sim_config(&sim.url(), speed)?;
    let cloud = Cloud::new(gcp, manifests, http.clone());
    let settings = Settings {
        dev: true,
        listen: "127.0.0.1:0".parse()?,
        database_url: Some(url.clone()),
        db_max_connections: pool,
        identity: Identity::Dev,
        admins: Vec::new(),
        log_format: LogFormat::Pretty,
        workers: WorkerConfig::default().workers,
        lease: Duration::from_secs(30),
        operation_retention: Duration::from_secs(30 * 86_400),
        approval_ttl: std::time::Duration::from_secs(7 * 86_400),
        audit_retention: Duration::from_secs(400 * 86_400),
        usage_interval: std::time::Duration::from_secs(60),
        test_workflows: false,
        shutdown_grace: Duration::from_secs(5),
        data_dir: std::env::temp_dir(),
        sim_listen: "127.0.0.1:0".parse()?,
        sim_speed: Some(speed),
        prices: Default::default(),
        gcp: kineticd::cloud::gcp::GcpConfig::google(),
        gcp_explicit: false,
        manifests: Default::default(),
        limits: Default::default(),
        webhook_allow: Default::default(),
    };
    let state = AppState::start(db.clone(), &url, &settings, cloud).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(app::serve(
        listener,
        app::router(state.clone()),
        std::future::pending(),
    ));
    Ok(App {
        api: format!("http://{addr}"),
        http,
        db,
        state,
        _sim: sim,
    })
}

/// `method path` with `body` (none when it is null) as `user` against the API at `api`:
/// the JSON answer, or an error naming the call on a non-2xx status.
pub async fn call_api(
    http: &reqwest::Client,
    api: &str,
    user: &str,
    method: reqwest::Method,
    path: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value> {
    let mut req = http
        .request(method.clone(), format!("{api}{path}"))
        .header("x-kinetic-user", user);
    if !body.is_null() {
        req = req.json(&body);
    }
    let r = req.send().await?;
    let status = r.status();
    let v: serde_json::Value = r.json().await.unwrap_or(serde_json::Value::Null);
    if !status.is_success() {
        anyhow::bail!("{method} {path}: {status} {v}");
    }
    Ok(v)
}

/// GKE clusters `names` in `project`/`zone` through the simulator's GKE API (8 at once),
/// each with one L4 pool `pool` of `nodes` g2-standard-8 nodes (minNodes = maxNodes, so
/// the simulator's Kubernetes API holds them), waited for and RUNNING.
#[allow(dead_code)] // the usage and placements benches build clusters; others do not
pub async fn l4_clusters(
    app: &App,
    project: &str,
    zone: &str,
    names: Vec<String>,
    pool: &str,
    nodes: usize,
) -> Result<()> {
    use futures::StreamExt;
    use kineticd::cloud::gcp::types::container::{
        AcceleratorConfig, Cluster, NodeConfig, NodePool, NodePoolAutoscaling,
    };
    let gcp = &app.state.cloud.gcp;
    let nodes = i32::try_from(nodes)?;
    let pool = NodePool {
        name: pool.into(),
        initial_node_count: Some(nodes),
        autoscaling: Some(NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(nodes),
            max_node_count: Some(nodes),
            ..Default::default()
        }),
        config: Some(NodeConfig {
            machine_type: Some("g2-standard-8".into()),
            accelerators: vec![AcceleratorConfig {
                accelerator_count: 1,
                accelerator_type: "nvidia-l4".into(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let results: Vec<Result<()>> = futures::stream::iter(names)
        .map(|name| {
            let cluster = Cluster {
                name,
                node_pools: vec![pool.clone()],
                ..Default::default()
            };
            async move {
                let op = gcp
                    .container
                    .create_cluster(project, zone, &cluster)
                    .await?;
                let cancel = tokio_util::sync::CancellationToken::new();
                gcp.container
                    .wait_operation(&op, &cancel, Duration::from_secs(120))
                    .await?;
                let got = gcp
                    .container
                    .get_cluster(project, zone, &cluster.name)
                    .await?;
                anyhow::ensure!(
                    got.status.as_deref() == Some("RUNNING"),
                    "cluster {} is {:?}",
                    cluster.name,
                    got.status
                );
                Ok(())
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    results.into_iter().collect()
}
