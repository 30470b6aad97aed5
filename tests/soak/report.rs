//! What the soak prints about each operation when `KINETIC_SOAK_VERBOSE` is set: how
//! long it took, how often it was claimed, and every step that needed more than one
//! attempt, with its last message (where the time went).
//!
//! Invariant: read-only.

use serde_json::Value;

pub async fn steps(db: &kineticd::store::Db) {
    let rows: Vec<(String, String, String, i32, Option<f64>, Value)> = sqlx::query_as(
        "SELECT id::text, op_type, state, attempt, \
         extract(epoch FROM end_time - start_time)::float8, steps::jsonb \
         FROM operations ORDER BY create_time",
    )
    .fetch_all(db)
    .await
    .expect("operations");
    for (id, t, state, attempt, secs, steps) in rows {
        println!(
            "soak: op {id} {t} {state} in {:.1} s, claimed {attempt} times",
            secs.unwrap_or(-1.0)
        );
        for s in steps.as_array().cloned().unwrap_or_default() {
            let n = s["attempts"].as_u64().unwrap_or(0);
            if n > 1 || s["state"] != "DONE" {
                let msg: String = s["message"]
                    .as_str()
                    .unwrap_or("")
                    .chars()
                    .take(160)
                    .collect();
                println!(
                    "soak:     {} {} x{n}: {msg}",
                    s["id"].as_str().unwrap_or("?"),
                    s["state"].as_str().unwrap_or("?")
                );
            }
        }
    }
}
