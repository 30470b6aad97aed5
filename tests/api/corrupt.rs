//! Stored records decode strictly: a spec or step list that does not decode answers
//! 500 CORRUPT_RECORD (with nothing internal in the message) and logs a line naming
//! the table and the row; it never turns into an empty default.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing_subscriber::fmt::MakeWriter;

use crate::common::TestApp;
use crate::support::{acme_app, acme_cluster, expect_error, ok};

const ALICE: &str = "alice@example.com";
const KC: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";

/// Log lines written on this thread (the test runtime runs the server here too).
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Logs {
        self.clone()
    }
}

impl Logs {
    /// Capture this thread's log lines until the guard drops.
    fn capture() -> (Logs, tracing::subscriber::DefaultGuard) {
        let logs = Logs::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(logs.clone())
            .with_ansi(false)
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }

    /// The `stored record unreadable` line naming `table` and `id`.
    #[track_caller]
    fn expect_corrupt(&self, table: &str, id: &str) {
        let text = self.text();
        assert!(
            text.lines().any(|l| l.contains("stored record unreadable")
                && l.contains(&format!("table=\"{table}\""))
                && l.contains(id)),
            "no log line names {table} {id}:\n{text}"
        );
    }
}

async fn exec(app: &TestApp, sql: &'static str, id: uuid::Uuid) {
    sqlx::query(sql)
        .bind(id)
        .execute(&app.db)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

#[tokio::test]
async fn corrupt_specs_are_errors_not_defaults() {
    let (logs, _guard) = Logs::capture();
    let app = acme_app(ALICE).await;
    let rec = acme_cluster(&app).await;
    ok(app.get(ALICE, KC).await);

    // A pool spec that is an empty object: it used to read back as an empty pool.
    exec(
        &app,
        "INSERT INTO node_pools (cluster_id, pool_id, state, spec) \
         VALUES ($1, 'gpu-l4-ab12', 'RUNNING', '{}')",
        rec.id,
    )
    .await;
    for path in [
        KC.to_owned(),
        format!("{KC}/nodePools"),
        format!("{KC}/nodePools/gpu-l4-ab12"),
        format!("{KC}/status"),
        format!("{KC}/accelerators"),
        "/v1/clusters".to_owned(),
    ] {
        let r = app.get(ALICE, &path).await;
        expect_error(&r, 500, "INTERNAL", "CORRUPT_RECORD");
    }
    logs.expect_corrupt("node_pools", &format!("{}/gpu-l4-ab12", rec.id));

    // A cluster spec of the wrong type.
    exec(&app, "DELETE FROM node_pools WHERE cluster_id = $1", rec.id).await;
    ok(app.get(ALICE, KC).await);
    exec(
        &app,
        r#"UPDATE clusters SET spec = '{"forceDestroy": "yes"}' WHERE id = $1"#,
        rec.id,
    )
    .await;
    for path in [KC.to_owned(), format!("{KC}/status")] {
        let r = app.get(ALICE, &path).await;
        expect_error(&r, 500, "INTERNAL", "CORRUPT_RECORD");
    }
    logs.expect_corrupt("clusters", &rec.id.to_string());

    // Resources of the wrong shape.
    exec(
        &app,
        r#"UPDATE clusters SET spec = '{}', resources = '{"gkeCluster": 5}' WHERE id = $1"#,
        rec.id,
    )
    .await;
    let r = app.get(ALICE, KC).await;
    expect_error(&r, 500, "INTERNAL", "CORRUPT_RECORD");
    let r = app.get(ALICE, "/v1/clusters").await;
    expect_error(&r, 500, "INTERNAL", "CORRUPT_RECORD");
}

#[tokio::test]
async fn corrupt_steps_are_errors_not_empty_progress() {
    let (logs, _guard) = Logs::capture();
    let app = acme_app(ALICE).await;
    let op = app.noop(ALICE, json!({"team": "acme", "steps": 2})).await;
    let name = op["name"].as_str().expect("operation name");
    let id: uuid::Uuid = name
        .strip_prefix("operations/")
        .and_then(|id| id.parse().ok())
        .expect("operation id");
    ok(app.get(ALICE, &format!("/v1/{name}")).await);
    exec(
        &app,
        r#"UPDATE operations SET steps = '[{"id": 1, "state": "PENDING"}]' WHERE id = $1"#,
        id,
    )
    .await;
    let r = app.get(ALICE, &format!("/v1/{name}")).await;
    expect_error(&r, 500, "INTERNAL", "CORRUPT_RECORD");
    let r = app.get(ALICE, "/v1/operations").await;
    expect_error(&r, 500, "INTERNAL", "CORRUPT_RECORD");
    logs.expect_corrupt("operations", &id.to_string());
}

/// A failing query keeps the driver's error as its source: `{e:#}` shows it.
#[tokio::test]
async fn store_errors_keep_their_cause() {
    let app = TestApp::spawn().await;
    let e = kineticd::store::clusters::insert(
        &app.db,
        kineticd::store::clusters::NewCluster {
            project_id: "p",
            zone: "us-central1-a",
            name: "kc",
            team_id: "no-such-team",
            state: kineticd::domain::ClusterState::Running,
            spec: Default::default(),
            resources: json!({}),
            created_by: ALICE,
        },
    )
    .await
    .expect_err("a cluster of a missing team violates the foreign key");
    assert_eq!(e.to_string(), "database error");
    let cause = std::error::Error::source(&e).expect("the driver's error is the source");
    assert!(cause.to_string().contains("foreign key"), "{cause}");
    let full = format!("{e:#}");
    assert!(
        full.starts_with(&format!("database error: {cause}")),
        "{full}"
    );
}
