//! `kineticd serve`: database (private in --dev without DATABASE_URL), migrations, API.

use anyhow::Context;
use tokio::net::TcpListener;

use crate::app::{self, AppState};
use crate::config::{ServeArgs, Settings};
use crate::devdb::PrivatePostgres;
use crate::store;

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
    if let Some(pg) = private {
        if let Err(e) = pg.stop().await {
            tracing::warn!(error = %e, "private PostgreSQL did not stop cleanly");
        }
    }
    result
}

async fn serve(settings: &Settings, url: &str) -> anyhow::Result<()> {
    let db = store::connect(url, settings.db_max_connections)
        .await
        .context("connecting to PostgreSQL")?;
    store::migrate(&db).await.context("applying migrations")?;
    let state = AppState::new(db.clone(), settings)?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .with_context(|| format!("listening on {}", settings.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, dev = settings.dev, "kineticd listening");
    if settings.dev {
        println!("kineticd API: http://{addr}  (docs: http://{addr}/docs)");
    }
    let grace = settings.shutdown_grace;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async move {
        app::shutdown_signal().await;
        let _ = tx.send(());
    };
    let server = app::serve(listener, app::router(state), shutdown);
    tokio::pin!(server);
    tokio::select! {
        r = &mut server => r?,
        _ = async { let _ = rx.await; tokio::time::sleep(grace).await } => {
            tracing::warn!(?grace, "grace period over; exiting with requests in flight");
        }
    }
    db.close().await;
    Ok(())
}
