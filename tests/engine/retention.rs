//! Finished operations are kept for the retention period, then removed.

use std::time::Duration;

use serde_json::json;

use kineticd::ops::retention;

use crate::{USER, app_with_team, app_with_worker, noop, op_id};

#[tokio::test]
async fn old_finished_operations_are_purged() {
    let (app, pool) = app_with_worker().await;
    let old = app.noop(USER, noop(1, json!({}))).await;
    let recent = app.noop(USER, noop(1, json!({}))).await;
    app.wait_done(USER, old["name"].as_str().unwrap()).await;
    app.wait_done(USER, recent["name"].as_str().unwrap()).await;
    pool.shutdown(Duration::from_secs(5)).await;
    let unfinished = app.noop(USER, noop(1, json!({}))).await;
    // Age one finished operation past 30 days (and an unfinished one, which must stay).
    for id in [op_id(&old), op_id(&unfinished)] {
        sqlx::query("UPDATE operations SET create_time = now() - interval '40 days', end_time = CASE WHEN end_time IS NULL THEN NULL ELSE now() - interval '31 days' END WHERE id = $1::uuid")
            .bind(id)
            .execute(&app.db)
            .await
            .unwrap();
    }
    let removed = retention::purge_once(&app.db, Duration::from_secs(30 * 86_400))
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let r = app
        .get(USER, &format!("/v1/{}", old["name"].as_str().unwrap()))
        .await;
    assert_eq!(r.status, reqwest::StatusCode::NOT_FOUND);
    for kept in [&recent, &unfinished] {
        let r = app
            .get(USER, &format!("/v1/{}", kept["name"].as_str().unwrap()))
            .await;
        assert_eq!(r.status, reqwest::StatusCode::OK);
    }
}

#[tokio::test]
async fn list_filters_and_pages_newest_first() {
    let app = app_with_team().await;
    for i in 0..5 {
        app.noop(USER, noop(1, json!({"target": format!("t{}", i % 2)})))
            .await;
    }
    let r = app.get(USER, "/v1/operations?pageSize=2").await;
    assert_eq!(r.body["operations"].as_array().unwrap().len(), 2);
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let r = app
            .get(
                USER,
                &format!("/v1/operations?pageSize=2&filter=done%3Dfalse&pageToken={token}"),
            )
            .await;
        assert_eq!(r.status, reqwest::StatusCode::OK, "{:?}", r.body);
        for op in r.body["operations"].as_array().unwrap() {
            seen.push(op["metadata"]["createTime"].as_str().unwrap().to_owned());
        }
        match r.body["nextPageToken"].as_str() {
            Some(t) => token = t.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
    let mut sorted = seen.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(seen, sorted, "not newest first");
    let r = app
        .get(
            USER,
            "/v1/operations?filter=target%3D%22t1%22%20AND%20type%3DNOOP",
        )
        .await;
    assert_eq!(r.body["operations"].as_array().unwrap().len(), 2);
    let r = app
        .get(USER, "/v1/operations?filter=state%3DSUCCEEDED")
        .await;
    assert_eq!(r.body["operations"].as_array().map(|a| a.len()), Some(0));
    let r = app.get(USER, "/v1/operations?filter=colour%3Dred").await;
    assert_eq!(r.status, reqwest::StatusCode::BAD_REQUEST);
    assert_eq!(r.reason(), "INVALID_FILTER");
    // Other teams' operations are invisible.
    let r = app.get("stranger@example.com", "/v1/operations").await;
    assert_eq!(r.body["operations"].as_array().unwrap().len(), 0);
}
