//! An operation whose stored steps do not decode is never run as "no steps" (which would
//! succeed having done nothing): the worker fails it with CORRUPT_RECORD and keeps the
//! stored steps exactly as they were.

use std::time::{Duration, Instant};

use kineticd::domain::OperationState;
use serde_json::json;

use crate::{USER, app_with_team, noop, op_id};

#[tokio::test]
async fn unreadable_steps_fail_the_operation_and_are_kept() {
    let app = app_with_team().await;
    let op = app.noop(USER, noop(2, json!({}))).await;
    let id: uuid::Uuid = op_id(&op).parse().expect("operation id");
    let corrupt = r#"[{"id": 1, "state": "PENDING"}]"#;
    sqlx::query("UPDATE operations SET steps = $2::json WHERE id = $1")
        .bind(id)
        .bind(corrupt)
        .execute(&app.db)
        .await
        .expect("corrupt the stored steps");

    let pool = app.workers(crate::common::test_worker_config(1));
    let deadline = Instant::now() + Duration::from_secs(120);
    let row = loop {
        let row = kineticd::store::operations::get(&app.db, id)
            .await
            .expect("read the operation")
            .expect("the operation");
        if row.state.is_final() {
            break row;
        }
        assert!(Instant::now() < deadline, "still {:?}", row.state);
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    pool.shutdown(Duration::from_secs(5)).await;

    assert_eq!(row.state, OperationState::Failed);
    let err = row.error.expect("an error");
    assert_eq!(err["details"][0]["reason"], "CORRUPT_RECORD", "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("nothing was run"),
        "{err}"
    );
    let kept: serde_json::Value = serde_json::from_str(corrupt).expect("json");
    assert_eq!(row.steps, kept, "the stored steps are kept as they were");
    let effects = kineticd::store::operations::noop_effect_counts(&app.db)
        .await
        .expect("effects");
    assert!(effects.is_empty(), "no step ran: {effects:?}");
}
