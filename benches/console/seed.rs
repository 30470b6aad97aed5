//! The team the console benchmark renders: one cluster made by a real `up` (through the
//! API and the workers, against the simulator at speed 0) so its page has live status
//! and nodes for the capacity bars, then clusters with pools written through the store
//! (as the API read benchmark seeds them) up to [`CLUSTERS`], and one queued operation
//! per cluster so the home page's "running now" list is full too.
//!
//! Invariant: the workers are stopped before the queued operations are written, so
//! nothing changes while the pages are rendered.

use crate::records;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::app_support::App;

pub const TEAM: &str = "bench";
pub const OWNER: &str = "owner@example.com";
pub const PROJECT: &str = "bench-console";
pub const ZONE: &str = "us-central1-a";
/// The cluster made by `up`, whose page is rendered.
pub const LIVE: &str = "live";
pub const CLUSTERS: usize = 50;
const POOLS_PER_CLUSTER: usize = 3;

/// Seeds the team (see the module documentation).
pub async fn seed(app: &App) -> Result<()> {
    let workers = app.start_workers();
    call(
        app,
        reqwest::Method::POST,
        "/v1/teams",
        json!({"teamId": TEAM, "projects": [PROJECT]}),
    )
    .await?;
    let op = call(
        app,
        reqwest::Method::PUT,
        &format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/{LIVE}"),
        json!({"accelerator": "gpu-l4x4", "minNodes": 4}),
    )
    .await?;
    let name = op["name"].as_str().context("operation name")?.to_owned();
    let done = loop {
        let r = call(
            app,
            reqwest::Method::POST,
            &format!("/v1/{name}:wait?timeout=30s"),
            json!({}),
        )
        .await?;
        if r["done"] == true {
            break r;
        }
    };
    if done["metadata"]["state"] != "SUCCEEDED" {
        bail!("up did not succeed: {done}");
    }
    workers.shutdown(Duration::from_secs(5)).await;

    let mut tx = app.db.begin().await?;
    let at = records::Place::new(PROJECT, ZONE, TEAM, OWNER);
    for c in 1..CLUSTERS {
        records::insert_cluster(&mut tx, &at, &format!("c-{c:03}"), POOLS_PER_CLUSTER, |k| {
            k == 2
        })
        .await?;
    }
    tx.commit().await?;
    for c in 0..CLUSTERS {
        let target = format!("projects/{PROJECT}/zones/{ZONE}/clusters/c-{c:03}");
        records::enqueue_noop(&app.db, TEAM, OWNER, format!("bench-{c}"), target).await?;
    }
    Ok(())
}

/// An API call as OWNER; its JSON body, an error unless 2xx.
async fn call(app: &App, method: reqwest::Method, path: &str, body: Value) -> Result<Value> {
    let r = app
        .http
        .request(method.clone(), format!("{}{path}", app.api))
        .header("x-kinetic-user", OWNER)
        .json(&body)
        .send()
        .await?;
    let status = r.status();
    let body: Value = r.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("{method} {path}: {status} {body}");
    }
    Ok(body)
}
