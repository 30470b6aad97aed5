//! Connection pool and embedded migrations. Migrations are compiled into the binary and
//! applied at start-up, so a running kineticd always has the schema it was built for.
//!
//! Invariant: a binary never runs against a schema newer than its newest embedded
//! migration ([`migrate`] refuses, naming both versions): a newer release may have
//! changed tables this binary would misread.

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
    connect_pool(
        url,
        &PoolConfig {
            max_connections,
            acquire_timeout,
            max_operations_per_team: None,
        },
    )
    .await
}

/// How [`connect_pool`] sizes and bounds the pool.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub max_connections: u32,
    /// How long a caller waits for a free connection (or for the database to accept
    /// one) before the acquire fails with `PoolTimedOut`.
    pub acquire_timeout: Duration,
    /// The cap on a team's unfinished operations, set on every connection as the
    /// session setting [`crate::store::team_queue::CAP_SETTING`] (read by the enqueue's
    /// check; `None`: no cap).
    pub max_operations_per_team: Option<u32>,
}

/// Open a pool as `cfg` says.
pub async fn connect_pool(url: &str, cfg: &PoolConfig) -> Result<Db, sqlx::Error> {
    let opts: PgConnectOptions = url.parse()?;
    // JIT compilation costs more than it saves on kineticd's short statements (the
    // usage query's day split: 191 ms of compiling for a 184 ms run; benches/usage).
    let mut opts = opts.application_name("kineticd").options([("jit", "off")]);
    if let Some(cap) = cfg.max_operations_per_team {
        opts = opts.options([(super::team_queue::CAP_SETTING, cap.to_string())]);
    }
    PgPoolOptions::new()
        .max_connections(cfg.max_connections)
        .acquire_timeout(cfg.acquire_timeout)
        // A broken connection fails its query and is replaced; a ping before every
        // acquire would cost a round trip on the engine's hot path.
        .test_before_acquire(false)
        .connect_with(opts)
        .await
}

/// Why [`migrate`] did not bring the database to this binary's schema.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "the database schema is at migration {database}, newer than this kineticd knows \
         (its newest migration is {binary}): a newer release migrated this database; run \
         that release (or a later one) instead of this binary"
    )]
    Newer { database: i64, binary: i64 },
    #[error("reading the applied migrations: {0}")]
    Db(#[from] sqlx::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// The newest migration embedded in this binary.
pub fn newest_known_migration() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// The newest migration recorded in the database (applied or attempted); 0 before the
/// first migration.
pub async fn newest_applied_migration(db: &Db) -> Result<i64, sqlx::Error> {
    let table: Option<String> = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations')::text")
        .fetch_one(db)
        .await?;
    if table.is_none() {
        return Ok(0);
    }
    let version: Option<i64> = sqlx::query_scalar("SELECT max(version) FROM _sqlx_migrations")
        .fetch_one(db)
        .await?;
    Ok(version.unwrap_or(0))
}

/// Refuse a database whose schema is newer than this binary's.
pub async fn check_schema(db: &Db) -> Result<(), SchemaError> {
    let database = newest_applied_migration(db).await?;
    let binary = newest_known_migration();
    if database > binary {
        return Err(SchemaError::Newer { database, binary });
    }
    Ok(())
}

/// Apply every embedded migration not yet applied, after [`check_schema`].
pub async fn migrate(db: &Db) -> Result<(), SchemaError> {
    check_schema(db).await?;
    MIGRATOR.run(db).await?;
    Ok(())
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

/// Whether `e` means the database cannot be reached right now (down, restarting, every
/// connection busy past the acquire wait) rather than a fault of the query: a caller may
/// retry it later.
pub fn is_unavailable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => true,
        sqlx::Error::Tls(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d.code().is_some_and(|c| {
            // Class 08: connection exception; 57P01-57P03: admin shutdown, crash
            // shutdown, cannot connect now (starting up or shutting down).
            c.starts_with("08") || matches!(c.as_ref(), "57P01" | "57P02" | "57P03")
        }),
        _ => false,
    }
}
