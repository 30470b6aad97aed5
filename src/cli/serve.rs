//! `kineticd serve`: database (private in --dev without DATABASE_URL), migrations, API,
//! worker pool and background tasks, and an orderly shutdown of all of them.

use anyhow::Context;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::app::{self, AppState};
use crate::cloud::Cloud;
use crate::config::{ServeArgs, Settings};
use crate::devdb::PrivatePostgres;
use crate::ops::{self, WorkerConfig, WorkerPool, retention};
use crate::store;

use super::dev;

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    let settings = Settings::from_args(args)?;
    crate::telemetry::init(settings.log_format);

    let mut private = None;
    let url = match &settings.database_url {
        Some(u) => u.clone(),
        None => {
            let dir = settings.data_dir.join("pg");
            tracing::info!(dir = %dir.display(), "DATABASE_URL unset: starting a private PostgreSQL");
            let pg = PrivatePostgres::start(&dir)
                .await
                .context("starting the private PostgreSQL")?;
            pg.ensure_database("kineticd").await?;
            let url = pg.url("kineticd");
            private = Some(pg);
            url
        }
    };

    let result = serve(&settings, &url).await;
    if let Some(pg) = private
        && let Err(e) = pg.stop().await
    {
        tracing::warn!(error = %e, "private PostgreSQL did not stop cleanly");
    }
    result
}

async fn serve(settings: &Settings, url: &str) -> anyhow::Result<()> {
    // Installed first: a SIGTERM at any point from here on drains instead of killing.
    let shutdown = app::shutdown_signal();
    let pool = store::db::PoolConfig {
        max_connections: settings.db_max_connections,
        acquire_timeout: settings.limits.db_acquire_timeout,
        max_operations_per_team: settings.limits.max_operations_per_team,
    };
    let db = store::db::connect_pool(url, &pool)
        .await
        .context("connecting to PostgreSQL")?;
    store::migrate(&db).await.context("applying migrations")?;
    // --dev runs the whole product locally: the cloud is the built-in simulator (unless
    // KINETIC_GCP_URL points elsewhere), configured like any other endpoint.
    let mut settings = settings.clone();
    let sim = dev::start_sim(&mut settings).await?;
    let settings = &settings;
    let cloud = Cloud::new(
        settings.gcp.clone(),
        settings.manifests.clone(),
        app::http_client()?,
    );
    let state = AppState::start(db.clone(), url, settings, cloud).await?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, dev = settings.dev, workers = settings.workers, "kineticd listening");
    if settings.dev {
        println!("kineticd API: http://{addr}  (docs: http://{addr}/docs)");
        if let Some(sim) = &sim {
            println!(
                "cloud simulator: {}  (journal: {}/sim/v1/journal)",
                sim.url(),
                sim.url()
            );
        }
    }

    let workers = (settings.workers > 0).then(|| {
        WorkerPool::start(
            db.clone(),
            state.events.clone(),
            ops::registry(&db, &state.cloud, settings.test_workflows),
            WorkerConfig {
                workers: settings.workers,
                lease: settings.lease,
                deliveries: ops::deliveries::DeliveryConfig {
                    allow: settings.webhook_allow,
                    ..Default::default()
                },
                ..WorkerConfig::default()
            },
        )
    });
    let background = CancellationToken::new();
    tokio::spawn(retention::run(
        db.clone(),
        settings.operation_retention,
        settings.audit_retention,
        std::time::Duration::from_secs(3600),
        background.clone(),
    ));
    tokio::spawn(
        ops::usage::Collector::new(
            db.clone(),
            state.cloud.clone(),
            state.prices.clone(),
            settings.usage_interval,
        )
        .run(background.clone()),
    );
    tokio::spawn(crate::service::idle::run(
        state.services.clone(),
        settings.usage_interval,
        background.clone(),
    ));
    tokio::spawn(retention::run_gauges(
        db.clone(),
        std::time::Duration::from_secs(5),
        background.clone(),
    ));

    let grace = settings.shutdown_grace;
    let events = state.events.clone();
    let stop = CancellationToken::new();
    let stop_http = stop.clone();
    let server = tokio::spawn(app::serve_with(
        listener,
        app::router(state),
        app::connection_limits(&settings.limits),
        async move { stop_http.cancelled().await },
    ));
    shutdown.await;
    stop.cancel();
    // Long polls answer now rather than hold the drain until the grace cuts them off.
    events.close();
    background.cancel();
    // Workers and HTTP drain together within the grace period.
    let drain_workers = async {
        if let Some(w) = workers {
            w.shutdown(grace).await;
        }
    };
    let drain_http = async {
        if tokio::time::timeout(grace, server).await.is_err() {
            tracing::warn!(?grace, "grace period over; closing open connections");
        }
    };
    tokio::join!(drain_workers, drain_http);
    db.close().await;
    tracing::info!("stopped");
    Ok(())
}
