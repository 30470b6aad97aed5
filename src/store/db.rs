//! Connection pool and embedded migrations. Migrations are compiled into the binary and
//! applied at start-up, so a running kineticd always has the schema it was built for.

use std::time::Duration;

use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

pub type Db = PgPool;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// How long a caller waits for a free connection before its request fails.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Open a pool of at most `max_connections` to `url`.
pub async fn connect(url: &str, max_connections: u32) -> Result<Db, sqlx::Error> {
    connect_waiting(url, max_connections, ACQUIRE_TIMEOUT).await
}

/// [`connect`], waiting up to `acquire_timeout` for a free connection (tests on a loaded
/// machine wait longer than production should).
pub async fn connect_waiting(
    url: &str,
    max_connections: u32,
    acquire_timeout: Duration,
) -> Result<Db, sqlx::Error> {
    let opts: PgConnectOptions = url.parse()?;
    let opts = opts.application_name("kineticd");
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(acquire_timeout)
        // A broken connection fails its query and is replaced; a ping before every
        // acquire would cost a round trip on the engine's hot path.
        .test_before_acquire(false)
        .connect_with(opts)
        .await
}

/// Apply every embedded migration not yet applied.
pub async fn migrate(db: &Db) -> Result<(), sqlx::migrate::MigrateError> {
    MIGRATOR.run(db).await
}

/// True when the database answers and every embedded migration is applied.
pub async fn ready(db: &Db) -> Result<bool, sqlx::Error> {
    let applied: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM _sqlx_migrations WHERE success AND version = ANY($1)",
    )
    .bind(MIGRATOR.iter().map(|m| m.version).collect::<Vec<i64>>())
    .fetch_one(db)
    .await?;
    Ok(applied as usize == MIGRATOR.iter().count())
}
