//! `:wait` (timeout and early return, 1,000 waiters on 10 connections) and `:watch`
//! (progress events in order, then done; 200 streams on 10 connections all end done).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::checks::assert_content_type;
use crate::common::{TestApp, test_worker_config};
use crate::{USER, app_with_team, app_with_worker, noop};

/// An app whose pool has 10 connections (asserted) and the name of a queued NOOP
/// operation of `steps` with `extra` (no workers yet).
async fn ten_connections_and_a_noop(steps: u32, extra: Value) -> (TestApp, String) {
    let app = app_with_team().await; // its pool has 10 connections
    assert_eq!(app.db.options().get_max_connections(), 10);
    let op = app.noop(USER, noop(steps, extra)).await;
    let name = op["name"].as_str().unwrap().to_owned();
    (app, name)
}

#[tokio::test]
async fn wait_times_out_on_an_unfinished_operation() {
    let app = app_with_team().await; // no workers: stays queued
    let op = app.noop(USER, noop(1, json!({}))).await;
    let name = op["name"].as_str().unwrap();
    let start = Instant::now();
    let r = app.op_action(USER, name, "wait?timeout=300ms").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["done"], false);
    assert!(start.elapsed() >= Duration::from_millis(300));
    let r = app.op_action(USER, name, "wait?timeout=soon").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.reason(), "INVALID_TIMEOUT");
}

#[tokio::test]
async fn wait_returns_as_soon_as_the_operation_is_done() {
    let (app, pool) = app_with_worker().await;
    let op = app.noop(USER, noop(3, json!({"stepMillis": 20}))).await;
    let name = op["name"].as_str().unwrap();
    let start = Instant::now();
    let r = app.op_action(USER, name, "wait?timeout=60s").await;
    assert_eq!(r.body["done"], true, "{}", r.body);
    assert_eq!(r.body["metadata"]["state"], "SUCCEEDED");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "wait did not return early"
    );
    pool.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_waiters_share_ten_connections() {
    let (app, name) = ten_connections_and_a_noop(2, json!({"hangAt": 0})).await;
    let pool = app.workers(test_worker_config(1));
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let mut waiters = tokio::task::JoinSet::new();
    // They connect 100 at a time (each batch parked before the next connects), so a
    // loaded machine's listen backlog never overflows into connection resets.
    let deadline = Instant::now() + Duration::from_secs(120);
    for batch in 1..=10 {
        for _ in 0..100 {
            // At most 60 s a call (the API's limit): a waiter whose call times out
            // before the cancel (a very loaded machine) waits again, as clients do.
            let url = app.url_of(&format!("/v1/{name}:wait?timeout=60s"));
            let http = http.clone();
            waiters.spawn(async move {
                loop {
                    let r = http
                        .post(url.clone())
                        .header("x-kinetic-user", USER)
                        .send()
                        .await
                        .unwrap();
                    let status = r.status();
                    let body = r.json::<Value>().await.unwrap();
                    assert_eq!(status, StatusCode::OK, "{body}");
                    if body["done"] == true {
                        break body;
                    }
                }
            });
        }
        // All of them are parked on the event hub, not on database connections.
        while app.state.events.subscriber_count() < batch * 100 {
            assert!(
                Instant::now() < deadline,
                "only {} waiters parked",
                app.state.events.subscriber_count()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The API still answers while they wait.
    let r = app.get(USER, "/v1/me").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(app.db.size() <= 10);
    let r = app.op_action(USER, &name, "cancel").await;
    assert_eq!(r.status, StatusCode::OK);
    let mut n = 0;
    while let Some(res) = waiters.join_next().await {
        let body = res.unwrap();
        assert_eq!(body["done"], true);
        assert_eq!(body["metadata"]["state"], "CANCELLED");
        n += 1;
    }
    assert_eq!(n, 1000);
    pool.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn watch_streams_progress_in_order_then_done() {
    let app = app_with_team().await;
    let op = app.noop(USER, noop(4, json!({"stepMillis": 30}))).await;
    let name = op["name"].as_str().unwrap();
    let resp = app
        .stream_as(USER, &format!("/v1/{name}:watch"))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_content_type(resp.headers(), "text/event-stream");
    let pool = app.workers(test_worker_config(1));
    let text = tokio::time::timeout(Duration::from_secs(60), resp.text())
        .await
        .unwrap()
        .unwrap();
    pool.shutdown(Duration::from_secs(5)).await;

    let mut events: Vec<(String, Value)> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut name = String::new();
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !name.is_empty() {
            events.push((name, serde_json::from_str(&data).unwrap()));
        }
    }
    let (last, rest) = events.split_last().expect("events");
    assert_eq!(last.0, "done");
    assert_eq!(last.1["metadata"]["state"], "SUCCEEDED");
    assert!(
        rest.len() >= 2,
        "expected several progress events, got {}",
        rest.len()
    );
    assert!(rest.iter().all(|(n, _)| n == "progress"));
    assert_eq!(rest[0].1["metadata"]["state"], "QUEUED");
    let done_counts: Vec<u64> = rest
        .iter()
        .map(|(_, op)| op["metadata"]["progress"]["stepsDone"].as_u64().unwrap())
        .collect();
    assert!(
        done_counts.windows(2).all(|w| w[0] <= w[1]),
        "progress went backwards: {done_counts:?}"
    );
    // Every event differs from the one before it (one event per change).
    assert!(rest.windows(2).all(|w| w[0].1 != w[1].1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_watch_streams_share_ten_connections() {
    let (app, name) = ten_connections_and_a_noop(3, json!({"stepMillis": 20})).await;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    // Each stream answers its headers once it is subscribed; all 200 stay open.
    let mut streams = Vec::new();
    for _ in 0..200 {
        let resp = http
            .get(app.url_of(&format!("/v1/{name}:watch")))
            .header("x-kinetic-user", USER)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        streams.push(resp);
    }
    assert_eq!(app.state.events.subscriber_count(), 200);
    // Parked on the event hub, not on database connections: the API still answers.
    let r = app.get(USER, "/v1/me").await;
    assert_eq!(r.status, StatusCode::OK);
    let pool = app.workers(test_worker_config(1));
    let mut readers = tokio::task::JoinSet::new();
    for resp in streams {
        readers.spawn(async move {
            tokio::time::timeout(Duration::from_secs(120), resp.text())
                .await
                .expect("stream ended within 120 s")
                .expect("stream text")
        });
    }
    let mut n = 0;
    while let Some(text) = readers.join_next().await {
        let text = text.unwrap();
        // The last event of every stream is `done` with the final operation.
        let last = text
            .split("\n\n")
            .filter(|b| b.contains("event:"))
            .last()
            .expect("events");
        assert!(last.contains("event: done"), "{last}");
        let data = last
            .lines()
            .find_map(|l| l.strip_prefix("data:"))
            .expect("data line");
        let op: Value = serde_json::from_str(data.trim_start()).unwrap();
        assert_eq!(op["metadata"]["state"], "SUCCEEDED");
        n += 1;
    }
    assert_eq!(n, 200);
    assert!(app.db.size() <= 10);
    // Every ended stream gave its subscription back.
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.state.events.subscriber_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "subscriptions left after the streams ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    pool.shutdown(Duration::from_secs(5)).await;
}
