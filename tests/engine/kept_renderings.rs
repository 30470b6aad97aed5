//! Finished operations are served as the rendering kept in their row: the same bytes as
//! the live rendering, read after read; never for an unfinished operation, never in
//! another format, never past a change of the row's team, and never to a caller who may
//! not see the operation. Cancel, retention and team deletion work as before.

use std::time::Duration;

use kineticd::service::operations::{render, render_format};
use kineticd::store::operations as ops_store;
use reqwest::{Method, StatusCode};
use serde_json::json;
use uuid::Uuid;

use crate::common::{OUTSIDER, TestApp, VIEWER};
use crate::{TEAM, USER, app_with_team, app_with_worker, noop, op_id};

/// `GET /v1/{name}` as `user`: status, content type, body bytes.
async fn get_raw(app: &TestApp, user: &str, name: &str) -> (StatusCode, String, Vec<u8>) {
    let r = app
        .request_as(user, Method::GET, &format!("/v1/{name}"))
        .send()
        .await
        .expect("GET");
    let status = r.status();
    let ctype = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, ctype, r.bytes().await.expect("body").to_vec())
}

/// The operation rendered now from its row, as the JSON text `GET` would send.
async fn live(app: &TestApp, id: &str) -> Vec<u8> {
    let row = ops_store::get(&app.db, id.parse().unwrap())
        .await
        .unwrap()
        .expect("row");
    serde_json::to_vec(&render(&row).expect("render")).unwrap()
}

/// The row's kept rendering and its format.
async fn kept(app: &TestApp, id: &str) -> (Option<String>, Option<String>) {
    sqlx::query_as("SELECT rendered, rendered_format FROM operations WHERE id = $1")
        .bind(id.parse::<Uuid>().unwrap())
        .fetch_one(&app.db)
        .await
        .unwrap()
}

async fn plant(app: &TestApp, id: &str, rendered: &str, format: &str) {
    sqlx::query("UPDATE operations SET rendered = $2, rendered_format = $3 WHERE id = $1")
        .bind(id.parse::<Uuid>().unwrap())
        .bind(rendered)
        .bind(format)
        .execute(&app.db)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_finished_operation_reads_as_its_kept_rendering_byte_for_byte() {
    let (app, pool) = app_with_worker().await;
    app.member(USER, TEAM, VIEWER, "VIEWER").await;
    let op = app.noop(USER, noop(3, json!({}))).await;
    let name = op["name"].as_str().unwrap().to_owned();
    let id = op_id(&op);
    app.wait_done(USER, &name).await;
    pool.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        kept(&app, &id).await,
        (None, None),
        "nothing kept before a GET"
    );

    let want = live(&app, &id).await;
    let first = get_raw(&app, VIEWER, &name).await;
    let second = get_raw(&app, VIEWER, &name).await;
    assert_eq!(
        (first.0, first.1.as_str()),
        (StatusCode::OK, "application/json")
    );
    assert_eq!(first, second, "read twice: the same answer");
    assert_eq!(first.2, want, "the live rendering, byte for byte");
    let (text, format) = kept(&app, &id).await;
    assert_eq!(text.map(String::into_bytes), Some(want.clone()));
    assert_eq!(format.as_deref(), Some(render_format()));

    // What is served is what is kept (a marker put in its place comes back)...
    let marker = json!({"name": name, "marker": true}).to_string();
    plant(&app, &id, &marker, render_format()).await;
    assert_eq!(get_raw(&app, VIEWER, &name).await.2, marker.as_bytes());
    // ... but never to a caller outside the team.
    let (status, _, body) = get_raw(&app, OUTSIDER, &name).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(!String::from_utf8_lossy(&body).contains("marker"));

    // A rendering in another format (another kineticd version) is rendered again, and
    // the new one kept in its place.
    plant(&app, &id, &marker, "r0-0000000000000000").await;
    assert_eq!(get_raw(&app, VIEWER, &name).await.2, want);
    let (text, format) = kept(&app, &id).await;
    assert_eq!(text.map(String::into_bytes), Some(want));
    assert_eq!(format.as_deref(), Some(render_format()));
}

#[tokio::test]
async fn an_unfinished_operation_is_rendered_live_and_cancel_still_works() {
    let app = app_with_team().await; // no workers: it stays queued
    let op = app.noop(USER, noop(2, json!({}))).await;
    let name = op["name"].as_str().unwrap().to_owned();
    let id = op_id(&op);
    // A stale rendering in the current format on an unfinished row is never served.
    plant(&app, &id, r#"{"stale":true}"#, render_format()).await;
    let (status, _, body) = get_raw(&app, USER, &name).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, live(&app, &id).await);
    let seen: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(seen["metadata"]["state"], "QUEUED");

    // Cancelled while queued: it ends at once, and its read is the CANCELLED operation,
    // rendered anew (the planted text is replaced) and then kept.
    let r = app.op_action(USER, &name, "cancel").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let first = get_raw(&app, USER, &name).await;
    let done: serde_json::Value = serde_json::from_slice(&first.2).unwrap();
    assert_eq!(
        (&done["done"], &done["metadata"]["state"]),
        (&json!(true), &json!("CANCELLED"))
    );
    assert_eq!(first.2, live(&app, &id).await);
    assert_eq!(get_raw(&app, USER, &name).await, first);
    assert_eq!(
        kept(&app, &id).await.0.map(String::into_bytes),
        Some(first.2.clone())
    );
    // Cancel and wait on the finished operation answer with the same operation.
    let again = app.op_action(USER, &name, "cancel").await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(again.body, done);
    let waited = app.op_action(USER, &name, "wait?timeout=1s").await;
    assert_eq!(waited.body, done);
}

#[tokio::test]
async fn retention_and_team_deletion_outrank_a_kept_rendering() {
    let (app, pool) = app_with_worker().await;
    app.member(USER, TEAM, VIEWER, "VIEWER").await;
    let purged = app.noop(USER, noop(1, json!({}))).await;
    let orphan = app.noop(USER, noop(1, json!({}))).await;
    for op in [&purged, &orphan] {
        let name = op["name"].as_str().unwrap();
        app.wait_done(USER, name).await;
        assert_eq!(get_raw(&app, VIEWER, name).await.0, StatusCode::OK);
        assert!(kept(&app, &op_id(op)).await.0.is_some(), "kept");
    }
    pool.shutdown(Duration::from_secs(5)).await;

    // Past retention, it is gone, kept rendering and all.
    sqlx::query("UPDATE operations SET end_time = now() - interval '31 days' WHERE id = $1::uuid")
        .bind(op_id(&purged))
        .execute(&app.db)
        .await
        .unwrap();
    let removed = kineticd::ops::retention::purge_once(&app.db, Duration::from_secs(30 * 86_400))
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let name = purged["name"].as_str().unwrap();
    assert_eq!(get_raw(&app, VIEWER, name).await.0, StatusCode::NOT_FOUND);

    // Its team deleted, the operation has no team: its creator reads it rendered anew
    // (no `team`), a former member no longer sees it.
    let r = app.delete(USER, &format!("/v1/teams/{TEAM}")).await;
    assert!(r.status.is_success(), "{:?}", r.body);
    let name = orphan["name"].as_str().unwrap();
    let (status, _, body) = get_raw(&app, USER, name).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, live(&app, &op_id(&orphan)).await);
    let seen: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(seen["metadata"]["team"].is_null(), "{seen}");
    assert_eq!(get_raw(&app, VIEWER, name).await.0, StatusCode::NOT_FOUND);
}
