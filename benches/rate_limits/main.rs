//! Riding out Google's rate limits (`cargo bench --bench rate_limits`; not a test):
//! issue 27's proof. The real app (HTTP API, the production worker configuration) runs
//! in this process against a private temporary PostgreSQL and the cloud simulator at a
//! fixed clock speed (`KBENCH_SIM_SPEED`, default 100 virtual seconds per real second).
//!
//! First one `up` of a gpu-l4 cluster with no fault (the baseline), then the simulator
//! answers `KBENCH_429` (default 30%) of Compute's and GKE's calls with 429 in Google's
//! shapes, and `KBENCH_UPS` (default 40) `up`s are sent at once, spread over
//! `KBENCH_PROJECTS` (default 1) projects of one team. Reported: how many were accepted
//! (202; a 503 at accept is what issue 27 saw), how many SUCCEEDED, the wall time from
//! the first PUT to the last operation's end and its ratio to the baseline, the 429s
//! Google sent and the calls kineticd made (from the simulator's journal), the retries
//! kineticd counted, and the adaptive rate of each project's APIs at the end.

#[path = "../support/app.rs"]
mod app_support;
#[path = "../support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kineticd::devdb::PrivatePostgres;
use kineticd::sim::faults::{FaultKind, FaultSpec};
use serde_json::{Value, json};
use support::{OWNER, ZONE, env_or};

fn main() -> Result<()> {
    if support::start("rate_limits").is_none() {
        return Ok(());
    }
    kineticd::auth::install_tls_provider();
    let speed: f64 = env_or("KBENCH_SIM_SPEED", 100.0)?;
    let ups: usize = env_or("KBENCH_UPS", 40)?;
    let projects: usize = env_or("KBENCH_PROJECTS", 1)?;
    let p429: f64 = env_or("KBENCH_429", 0.3)?;
    if speed <= 0.0 || ups == 0 || projects == 0 || !(0.0..1.0).contains(&p429) {
        bail!("KBENCH_SIM_SPEED > 0, KBENCH_UPS >= 1, KBENCH_PROJECTS >= 1, 0 <= KBENCH_429 < 1");
    }
    support::on_private_postgres(async |pg| run(pg, speed, ups, projects, p429).await)
}

async fn run(
    pg: &PrivatePostgres,
    speed: f64,
    ups: usize,
    projects: usize,
    p429: f64,
) -> Result<()> {
    let app = app_support::start(pg, "kbench_rate_limits", speed, |_| {}).await?;
    let _workers = app.start_workers();
    let call = async |method: reqwest::Method, path: &str, body: Value| {
        app_support::call_api(&app.http, &app.api, OWNER, method, path, body).await
    };
    let names: Vec<String> = (0..projects).map(|i| format!("busy-proj-{i}")).collect();
    let mut all = names.clone();
    all.push("calm-proj".into());
    call(
        reqwest::Method::POST,
        "/v1/teams",
        json!({"teamId": "busy", "projects": all}),
    )
    .await?;

    // The baseline: one up, nothing refused.
    let t0 = Instant::now();
    let (status, op) = put(&app, "calm-proj", "kc").await?;
    if status != 202 {
        bail!("baseline up refused: {status} {op}");
    }
    let done = wait(&app, &op).await?;
    if done["metadata"]["state"] != "SUCCEEDED" {
        bail!("baseline up failed: {}", done["error"]);
    }
    let one = t0.elapsed().as_secs_f64();

    let journal_before = app._sim.journal().entries().len();
    for service in ["compute", "container"] {
        app._sim.faults().arm(FaultSpec {
            service: service.into(),
            method: "*".into(),
            kind: FaultKind::Http429,
            count: None,
            probability: Some(p429),
        });
    }
    let t0 = Instant::now();
    let sent = (0..ups).map(|i| {
        let project = names[i % projects].clone();
        let app = &app;
        async move { put(app, &project, &format!("kc{i}")).await }
    });
    let answers = futures::future::join_all(sent).await;
    let accept_s = t0.elapsed().as_secs_f64();
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut accepted = Vec::new();
    for a in answers {
        let (status, body) = a?;
        if status == 202 {
            accepted.push(body);
        } else {
            let reason = body["error"]["details"][0]["reason"]
                .as_str()
                .unwrap_or("?");
            *refused.entry(format!("{status} {reason}")).or_default() += 1;
        }
    }
    let finished = futures::future::join_all(accepted.iter().map(|op| wait(&app, op))).await;
    let wall = t0.elapsed().as_secs_f64();
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    for f in finished {
        let f = f?;
        *states
            .entry(f["metadata"]["state"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
    }
    let journal = app._sim.journal().entries();
    let during = &journal[journal_before..];
    let google = |s: &str| during.iter().filter(|e| e.service == s).count();
    let refused_429 = |s: &str| {
        during
            .iter()
            .filter(|e| e.service == s && e.status == 429)
            .count()
    };
    let metrics = app.state.metrics.render();
    let retries: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("kineticd_cloud_call_retries_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>()
        .max(0.0);

    println!(
        "rate_limits: {ups} concurrent ups over {projects} project(s), {:.0}% of compute and container calls answered 429, sim speed {speed}",
        p429 * 100.0
    );
    println!("  baseline: one up without faults            {one:>8.2} s");
    println!(
        "  accepted (202)                              {:>5} of {ups}  (accept phase {accept_s:.2} s)",
        accepted.len()
    );
    for (what, n) in &refused {
        println!("  refused {what:<36} {n:>5}");
    }
    for (state, n) in &states {
        println!("  ended {state:<38} {n:>5}");
    }
    println!(
        "  wall, first PUT to last end                 {wall:>8.2} s  ({:.2}x one up)",
        wall / one
    );
    for s in ["compute", "container"] {
        println!(
            "  {s:<9} calls received / answered 429     {:>5} / {}",
            google(s),
            refused_429(s)
        );
    }
    println!("  retries counted (kineticd_cloud_call_retries_total) {retries:.0}");
    for p in &names {
        for r in app.state.cloud.gcp.http.rates().of_project(p) {
            println!(
                "  rate at the end: {p} {:<12} {:>6.1} req/s (ceiling {})",
                r.api, r.rate, r.ceiling
            );
        }
    }
    println!("  load average {}", support::loadavg());
    Ok(())
}

/// PUT a gpu-l4 cluster: the status and the answer.
async fn put(app: &app_support::App, project: &str, cluster: &str) -> Result<(u16, Value)> {
    let r = app
        .http
        .put(format!(
            "{}/v1/projects/{project}/zones/{ZONE}/clusters/{cluster}",
            app.api
        ))
        .header("x-kinetic-user", OWNER)
        .json(&json!({"accelerator": "gpu-l4"}))
        .send()
        .await?;
    let status = r.status().as_u16();
    Ok((status, r.json().await.unwrap_or(Value::Null)))
}

/// `:wait` on the operation `op` until done (10 minutes at most).
async fn wait(app: &app_support::App, op: &Value) -> Result<Value> {
    let name = op["name"].as_str().context("operation name")?;
    let t0 = Instant::now();
    loop {
        let v = app_support::call_api(
            &app.http,
            &app.api,
            OWNER,
            reqwest::Method::POST,
            // Under the HTTP client's own 30 s timeout.
            &format!("/v1/{name}:wait?timeout=20s"),
            Value::Null,
        )
        .await?;
        if v["done"] == true {
            return Ok(v);
        }
        if t0.elapsed() > Duration::from_secs(600) {
            bail!("{name} not done after 10 minutes");
        }
    }
}
