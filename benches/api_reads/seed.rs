//! What the reads read: real finished operations, run by the production workers against
//! the built-in simulator through the API as a user would (`up` of a gpu-l4 cluster, a
//! failover pool pair added to it, a failover drill of the pair), then the shared
//! baseline ([`crate::baseline`]: a team of 200 clusters and 1,000 queued NOOP
//! operations, one of which is read as the NOOP operation).
//!
//! Invariant: the real operations are SUCCEEDED before the baseline is written (its
//! queued NOOPs are never claimed: the workers are shut down first), and [`READER`] is a
//! VIEWER of both teams, so every read pays a member's authorisation.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

use crate::app_support::App;
use crate::baseline::{self, OWNER, READER, ZONE};

const TEAM: &str = "bench-real";
const PROJECT: &str = "bench-real-proj";
const CLUSTER: &str = "real";

/// One operation the bench reads.
#[derive(Debug, Clone)]
pub struct Op {
    /// `up`, `pool add`, `drill`, `NOOP`.
    pub label: &'static str,
    pub id: String,
    /// What it is, for the table: its state, steps and JSON size.
    pub about: String,
}

/// Everything [`fill`] wrote that the reads name.
pub struct Seeded {
    /// up, pool add, drill, NOOP (queued).
    pub ops: Vec<Op>,
    /// A cluster of the baseline (for the optional cluster reads).
    pub project: String,
    pub cluster: String,
}

/// The real operations, then the baseline, into `app`'s (migrated, empty) database.
pub async fn fill(app: &App) -> Result<Seeded> {
    let t = Instant::now();
    let workers = app.start_workers();
    let real = real_operations(app).await;
    workers.shutdown(Duration::from_secs(10)).await;
    let mut ops = real?;
    let base = baseline::fill(&app.db).await?;
    let noop = describe(app, "NOOP", &base.operation).await?;
    ops.push(noop);
    eprintln!("api_reads: seeded in {:.1} s", t.elapsed().as_secs_f64());
    Ok(Seeded {
        ops,
        project: base.project,
        cluster: base.cluster,
    })
}

async fn real_operations(app: &App) -> Result<Vec<Op>> {
    call(
        app,
        "POST",
        "/v1/teams",
        json!({"teamId": TEAM, "projects": [PROJECT]}),
    )
    .await?;
    let member = format!("/v1/teams/{TEAM}/members/{READER}");
    call(app, "PUT", &member, json!({"role": "VIEWER"})).await?;
    let cluster = format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/{CLUSTER}");
    let up = call(app, "PUT", &cluster, json!({"accelerator": "gpu-l4"})).await?;
    let up = finish(app, &up).await?;
    let pair = json!({"accelerator": "gpu-l4", "failover": true, "minNodes": 2});
    let add = call(app, "POST", &format!("{cluster}/nodePools"), pair).await?;
    let add = finish(app, &add).await?;
    let pools = call(app, "GET", &format!("{cluster}/nodePools"), Value::Null).await?;
    let spot = pools["nodePools"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["spot"] == true))
        .and_then(|p| p["poolId"].as_str())
        .with_context(|| format!("no spot pool in {pools}"))?
        .to_owned();
    let drill = format!("{cluster}/nodePools/{spot}:drill");
    let drill = call(app, "POST", &drill, json!({})).await?;
    let drill = finish(app, &drill).await?;
    let mut out = Vec::new();
    for (label, id) in [("up", up), ("pool add", add), ("drill", drill)] {
        out.push(describe(app, label, &id).await?);
    }
    Ok(out)
}

/// `method path` as [`OWNER`]; the JSON answer, failing on a non-2xx status.
async fn call(app: &App, method: &str, path: &str, body: Value) -> Result<Value> {
    let method = method.parse()?;
    crate::app_support::call_api(&app.http, &app.api, OWNER, method, path, body).await
}

/// Waits for operation `op` to end SUCCEEDED; its id.
async fn finish(app: &App, op: &Value) -> Result<String> {
    let name = op["name"].as_str().context("operation name")?;
    let until = Instant::now() + Duration::from_secs(300);
    loop {
        let path = format!("/v1/{name}:wait?timeout=30s");
        let v = call(app, "POST", &path, Value::Null).await?;
        if v["done"] == true {
            ensure!(
                v["metadata"]["state"] == "SUCCEEDED",
                "{name} ({}) ended {}: {}",
                v["metadata"]["type"],
                v["metadata"]["state"],
                v["error"]
            );
            return Ok(name.trim_start_matches("operations/").to_owned());
        }
        ensure!(Instant::now() < until, "{name} not done in 5 minutes");
    }
}

/// The operation as [`READER`] reads it: state, steps, bytes.
async fn describe(app: &App, label: &'static str, id: &str) -> Result<Op> {
    let r = app
        .http
        .get(format!("{}/v1/operations/{id}", app.api))
        .header("x-kinetic-user", READER)
        .send()
        .await?;
    ensure!(
        r.status().is_success(),
        "GET operation {id}: {}",
        r.status()
    );
    let bytes = r.bytes().await?;
    let v: Value = serde_json::from_slice(&bytes)?;
    let about = format!(
        "{} {}, {} steps, {:.1} KB",
        v["metadata"]["type"].as_str().unwrap_or("?"),
        v["metadata"]["state"].as_str().unwrap_or("?"),
        v["metadata"]["progress"]["stepsTotal"],
        bytes.len() as f64 / 1000.0
    );
    Ok(Op {
        label,
        id: id.to_owned(),
        about,
    })
}
