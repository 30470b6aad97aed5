//! A binary never runs against a schema newer than it knows: `store::migrate`, and with it
//! `kineticd serve` and `kineticd migrate`, refuse a database whose `_sqlx_migrations`
//! records a migration past the binary's newest, naming both versions; the database is
//! left as it was.

mod common;

use std::process::Output;
use std::time::Duration;

use kineticd::store::db::{self, SchemaError};

/// Record a migration one past this binary's newest, as a newer release would have.
async fn from_the_future(pool: &kineticd::store::Db) -> i64 {
    let future = db::newest_known_migration() + 1;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'added by a newer release', true, '\\x00'::bytea, 1)",
    )
    .bind(future)
    .execute(pool)
    .await
    .expect("record a future migration");
    future
}

/// Run the kineticd binary with only `env` (plus `DATABASE_URL`); a process still
/// running after two minutes has accepted the schema: it is killed and the test fails.
async fn run_binary(args: &[&str], url: &str, env: &[(&str, &str)]) -> Output {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kineticd"))
        .args(args)
        .env_clear()
        .env("DATABASE_URL", url)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start kineticd");
    tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("kineticd {args:?} kept running on a newer schema"))
        .expect("wait for kineticd")
}

/// The process failed and said which versions disagree.
fn assert_refused(out: &Output, future: i64) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "exit {:?}: {stderr}", out.status);
    let binary = db::newest_known_migration();
    assert!(
        stderr.contains(&format!(
            "at migration {future}, newer than this kineticd knows"
        )) && stderr.contains(&format!("its newest migration is {binary}")),
        "{stderr}"
    );
}

async fn migrations_recorded(pool: &kineticd::store::Db) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await
        .expect("count migrations")
}

#[tokio::test]
async fn migrate_refuses_a_newer_schema_naming_both_versions() {
    let (pool, _) = common::fresh_db().await;
    let future = from_the_future(&pool).await;
    let e = kineticd::store::migrate(&pool).await.unwrap_err();
    match e {
        SchemaError::Newer { database, binary } => {
            assert_eq!(database, future);
            assert_eq!(binary, db::newest_known_migration());
        }
        other => panic!("expected SchemaError::Newer, got {other:?}"),
    }
}

#[tokio::test]
async fn the_current_schema_is_accepted_and_left_alone() {
    let (pool, _) = common::fresh_db().await;
    let before = migrations_recorded(&pool).await;
    assert_eq!(
        db::newest_applied_migration(&pool).await.unwrap(),
        db::newest_known_migration()
    );
    kineticd::store::migrate(&pool)
        .await
        .expect("a current schema");
    assert_eq!(migrations_recorded(&pool).await, before);
}

#[tokio::test]
async fn serve_refuses_to_start_on_a_newer_schema() {
    let (pool, url) = common::fresh_db().await;
    let future = from_the_future(&pool).await;
    let before = migrations_recorded(&pool).await;
    let out = run_binary(
        &["serve"],
        &url,
        &[
            ("KINETIC_LISTEN", "127.0.0.1:0"),
            ("KINETIC_AUTH", "iap"),
            (
                "KINETIC_IAP_AUDIENCE",
                "/projects/1/global/backendServices/2",
            ),
        ],
    )
    .await;
    assert_refused(&out, future);
    assert_eq!(migrations_recorded(&pool).await, before);
}

#[tokio::test]
async fn the_migrate_command_refuses_a_newer_schema() {
    let (pool, url) = common::fresh_db().await;
    let future = from_the_future(&pool).await;
    let out = run_binary(&["migrate"], &url, &[]).await;
    assert_refused(&out, future);
}
