//! Critical-path benchmark of `up` (`cargo bench --bench provision`; not a test).
//!
//! The real app (HTTP API, 8 workers, the DAG runner) runs in this process against a
//! private temporary PostgreSQL and the cloud simulator at a fixed clock speed
//! (`KBENCH_SIM_SPEED`, default 100 virtual seconds per real second: GKE's 5-minute
//! cluster create takes 3 s, a bucket create nothing). Each of `KBENCH_RUNS` runs
//! (default 7) creates a team owning a fresh project and `up`s a gpu-l4 cluster in it
//! (21 actions), then divides the operation's wall time (`createTime` -> `endTime`) by
//! the plan's critical path, the longest chain of dependent actions, weighted three ways:
//!
//! - **measured**: each action weighted with its own step's duration (`startTime` ->
//!   `endTime` in `metadata.progress.steps`). The ratio is then exactly the DAG runner's
//!   cost: claim delay, late launches, serialised commits, the final commit. 1.00 means
//!   every independent step ran in parallel and every step started the moment its last
//!   dependency finished. The 1.10 target applies to it and to the next one.
//! - **modelled**: each action weighted with the duration the simulator models for it at
//!   that speed ([`model`]). The ratio adds what the cloud clients add on top of the
//!   cloud's own time, mainly their poll schedule: the long-running-operation waiter
//!   polls 0.5 s after the call, then doubling up to every 5 s of *virtual* time (the
//!   simulated cloud scales the schedule by its speed, `PollSchedule::for_speed`, so
//!   polling costs the same small share of an operation as against Google).
//! - **modelled + polls**: each modelled duration rounded up to the next poll of the
//!   schedule the step's client uses ([`model::observed_seconds`]): what a perfect runner
//!   would take with today's clients. Its ratio near 1.00 shows the poll schedule is the
//!   whole difference between the two above. The same computation at speed 1 projects
//!   the poll schedule's share against Google's own durations.
//!
//! It also reports the sum of all step durations (what a serial runner would take) and
//! the largest launch gap (a step's start minus the end of its last dependency).

#[path = "../support/app.rs"]
mod app_support;
mod model;
#[path = "../support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use kineticd::devdb::PrivatePostgres;
use kineticd::ops::WorkerPool;
use kineticd::plan::Plan;
use kineticd::sim::Sim;
use serde_json::{Value, json};
use support::{OWNER, ZONE, env_or};

const DEFAULT_SPEED: f64 = 100.0;
const DEFAULT_RUNS: usize = 7;
const TARGET_RATIO: f64 = 1.10;

fn main() -> Result<()> {
    if support::start("provision").is_none() {
        return Ok(());
    }
    kineticd::auth::install_tls_provider();
    let speed: f64 = env_or("KBENCH_SIM_SPEED", DEFAULT_SPEED)?;
    let runs: usize = env_or("KBENCH_RUNS", DEFAULT_RUNS)?;
    if speed <= 0.0 || runs == 0 {
        bail!("KBENCH_SIM_SPEED must be > 0 and KBENCH_RUNS >= 1");
    }
    support::on_private_postgres(async |pg| run(pg, speed, runs).await)
}

/// The app, its workers and the simulator, all in this process.
struct Bench {
    api: String,
    http: reqwest::Client,
    _sim: Sim,
    _workers: WorkerPool,
}

async fn start(pg: &PrivatePostgres, speed: f64) -> Result<Bench> {
    let app = app_support::start(pg, "kbench_provision", speed, |_| {}).await?;
    let workers = app.start_workers();
    Ok(Bench {
        api: app.api,
        http: app.http,
        _sim: app._sim,
        _workers: workers,
    })
}

impl Bench {
    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Result<Value> {
        app_support::call_api(&self.http, &self.api, OWNER, method, path, body).await
    }

    /// A new team and project, then `up` of a gpu-l4 cluster to its end.
    async fn up(&self, i: usize) -> Result<(Value, f64)> {
        let project = format!("bench-proj-{i}");
        self.call(
            reqwest::Method::POST,
            "/v1/teams",
            json!({"teamId": format!("bench-team-{i}"), "projects": [project]}),
        )
        .await?;
        let path = format!("/v1/projects/{project}/zones/{ZONE}/clusters/kc");
        let t0 = Instant::now();
        let op = self
            .call(
                reqwest::Method::PUT,
                &path,
                json!({"accelerator": "gpu-l4"}),
            )
            .await?;
        let name = op["name"].as_str().context("operation name")?.to_owned();
        let done = loop {
            let v = self
                .call(
                    reqwest::Method::POST,
                    &format!("/v1/{name}:wait?timeout=30s"),
                    Value::Null,
                )
                .await?;
            if v["done"] == true {
                break v;
            }
            if t0.elapsed() > Duration::from_secs(600) {
                bail!("{name} not done after 10 minutes");
            }
        };
        let client_s = t0.elapsed().as_secs_f64();
        if done["metadata"]["state"] != "SUCCEEDED" {
            bail!("up failed: {}", done["error"]);
        }
        Ok((done, client_s))
    }
}

fn time(v: &Value) -> Result<DateTime<Utc>> {
    let s = v.as_str().context("timestamp missing")?;
    Ok(DateTime::parse_from_rfc3339(s)?.with_timezone(&Utc))
}

fn secs(a: DateTime<Utc>, b: DateTime<Utc>) -> f64 {
    (b - a).num_microseconds().unwrap_or(0) as f64 / 1e6
}

/// One step of the chain that sets the critical path.
struct Link {
    id: String,
    measured: f64,
    modelled: f64,
    polled: f64,
}

/// The figures of one `up`.
struct Figures {
    wall: f64,
    client: f64,
    claim: f64,
    cp_measured: f64,
    cp_modelled: f64,
    cp_polled: f64,
    serial: f64,
    max_gap: (f64, String),
    chain: Vec<Link>,
    steps: usize,
    plan: Plan,
}

impl Figures {
    fn ratio_measured(&self) -> f64 {
        self.wall / self.cp_measured
    }
    fn ratio_modelled(&self) -> f64 {
        self.wall / self.cp_modelled
    }
    fn ratio_polled(&self) -> f64 {
        self.wall / self.cp_polled
    }
    /// The modelled + polls critical path of the same plan at another speed.
    fn cp_polled_at(&self, speed: f64) -> f64 {
        self.plan
            .critical_path(|a| model::observed_seconds(a, speed))
            .unwrap_or(f64::NAN)
    }
}

fn analyse(op: &Value, client: f64, speed: f64) -> Result<Figures> {
    let meta = &op["metadata"];
    let created = time(&meta["createTime"])?;
    let started = time(&meta["startTime"])?;
    let ended = time(&meta["endTime"])?;
    let plan: Plan = serde_json::from_value(meta["plan"].clone()).context("metadata.plan")?;
    let mut span: HashMap<String, (DateTime<Utc>, DateTime<Utc>)> = HashMap::new();
    for s in meta["progress"]["steps"].as_array().context("steps")? {
        let id = s["id"].as_str().context("step id")?.to_owned();
        span.insert(id, (time(&s["startTime"])?, time(&s["endTime"])?));
    }
    let measured = |id: &str| span.get(id).map(|(a, b)| secs(*a, *b)).unwrap_or(0.0);
    let cp_measured = plan.critical_path(|a| measured(&a.id.to_string()))?;
    let cp_modelled = plan.critical_path(|a| model::real_seconds(a, speed))?;
    let cp_polled = plan.critical_path(|a| model::observed_seconds(a, speed))?;
    let serial: f64 = plan
        .actions
        .iter()
        .map(|a| measured(&a.id.to_string()))
        .sum();

    // Launch gaps: a step's start minus the end of its last dependency (or the
    // operation's start for the first steps).
    let mut max_gap = (0.0f64, String::new());
    for a in &plan.actions {
        let Some((start, _)) = span.get(&a.id.to_string()) else {
            continue;
        };
        let ready = a
            .depends_on
            .iter()
            .filter_map(|d| span.get(&d.to_string()).map(|(_, e)| *e))
            .max()
            .unwrap_or(started);
        let gap = secs(ready, *start);
        if gap > max_gap.0 {
            max_gap = (gap, a.id.to_string());
        }
    }

    // The chain itself (measured weights): finish times, then back from the last one.
    let by_id: HashMap<String, &kineticd::plan::Action> =
        plan.actions.iter().map(|a| (a.id.to_string(), a)).collect();
    let mut finish: HashMap<String, f64> = HashMap::new();
    fn finish_of(
        id: &str,
        by_id: &HashMap<String, &kineticd::plan::Action>,
        measured: &dyn Fn(&str) -> f64,
        memo: &mut HashMap<String, f64>,
    ) -> f64 {
        if let Some(f) = memo.get(id) {
            return *f;
        }
        let a = by_id[id];
        let start = a
            .depends_on
            .iter()
            .map(|d| finish_of(&d.to_string(), by_id, measured, memo))
            .fold(0.0f64, f64::max);
        let f = start + measured(id);
        memo.insert(id.to_owned(), f);
        f
    }
    for a in &plan.actions {
        finish_of(&a.id.to_string(), &by_id, &measured, &mut finish);
    }
    let mut chain = Vec::new();
    let mut at = plan
        .actions
        .iter()
        .map(|a| a.id.to_string())
        .max_by(|a, b| finish[a].total_cmp(&finish[b]));
    while let Some(id) = at {
        let a = by_id[&id];
        chain.push(Link {
            measured: measured(&id),
            modelled: model::real_seconds(a, speed),
            polled: model::observed_seconds(a, speed),
            id,
        });
        at = a
            .depends_on
            .iter()
            .map(ToString::to_string)
            .max_by(|x, y| finish[x].total_cmp(&finish[y]));
    }
    chain.reverse();

    Ok(Figures {
        wall: secs(created, ended),
        client,
        claim: secs(created, started),
        cp_measured,
        cp_modelled,
        cp_polled,
        serial,
        max_gap,
        chain,
        steps: plan.actions.len(),
        plan,
    })
}

/// Median, min and max.
fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

async fn run(pg: &PrivatePostgres, speed: f64, runs: usize) -> Result<()> {
    let cpus = std::thread::available_parallelism()?.get();
    println!(
        "== provision: up gpu-l4, simulator speed {speed} (virtual s per real s), {runs} runs, {cpus} CPUs, load {}",
        support::loadavg()
    );
    let bench = start(pg, speed).await?;
    // One warm-up `up` (connections, manifest cache, first-request costs), not counted.
    let (warm, _) = bench.up(runs).await.context("warm-up up")?;
    let warm = analyse(&warm, 0.0, speed)?;
    println!(
        "warm-up: wall {:.3} s, {} steps, modelled critical path {:.3} s",
        warm.wall, warm.steps, warm.cp_modelled
    );

    let mut all = Vec::new();
    for i in 0..runs {
        let (op, client) = bench
            .up(i)
            .await
            .with_context(|| format!("run {}", i + 1))?;
        let f = analyse(&op, client, speed)?;
        println!(
            "run {}: wall {:.3} s (client {:.3} s, claim {:.1} ms) | / measured critical path {:.3} s = {:.3} | / modelled {:.3} s = {:.3} | / modelled + polls {:.3} s = {:.3} | serial sum {:.3} s | max launch gap {:.1} ms{}",
            i + 1,
            f.wall,
            f.client,
            f.claim * 1e3,
            f.cp_measured,
            f.ratio_measured(),
            f.cp_modelled,
            f.ratio_modelled(),
            f.cp_polled,
            f.ratio_polled(),
            f.serial,
            f.max_gap.0 * 1e3,
            if f.max_gap.1.is_empty() {
                String::new()
            } else {
                format!(" ({})", f.max_gap.1)
            },
        );
        all.push(f);
    }

    let first = &all[0];
    println!("critical chain of run 1 (seconds at speed {speed}):");
    for l in &first.chain {
        println!(
            "  {:<22} measured {:>7.3}  modelled {:>7.3}  modelled + polls {:>7.3}",
            l.id, l.measured, l.modelled, l.polled
        );
    }

    let (rm, rm_min, rm_max) = spread(all.iter().map(Figures::ratio_measured).collect());
    let (rd, rd_min, rd_max) = spread(all.iter().map(Figures::ratio_modelled).collect());
    let (rp, rp_min, rp_max) = spread(all.iter().map(Figures::ratio_polled).collect());
    let (wall, wall_min, wall_max) = spread(all.iter().map(|f| f.wall).collect());
    let (cpm, _, _) = spread(all.iter().map(|f| f.cp_measured).collect());
    let (overhead, oh_min, oh_max) =
        spread(all.iter().map(|f| (f.wall - f.cp_measured) * 1e3).collect());
    let (serial, _, _) = spread(all.iter().map(|f| f.serial).collect());
    let (gap, _, gap_max) = spread(all.iter().map(|f| f.max_gap.0 * 1e3).collect());
    // The same plan's model at speed 1 (Google's own durations, the same clients).
    let plan_at_1 = (first.cp_modelled * speed, first.cp_polled_at(1.0));

    println!();
    println!("==================== kineticd provision benchmark ====================");
    println!("provision.sim_speed={speed}");
    println!("provision.runs={runs}");
    println!("provision.cpus={cpus}");
    println!("provision.steps={}", first.steps);
    println!("provision.wall_s median={wall:.3} min={wall_min:.3} max={wall_max:.3}");
    println!("provision.critical_path_measured_median_s={cpm:.3}");
    println!(
        "provision.critical_path_modelled_s={:.3}",
        first.cp_modelled
    );
    println!(
        "provision.critical_path_modelled_plus_polls_s={:.3}",
        first.cp_polled
    );
    println!(
        "provision.ratio_wall_to_measured_critical_path median={rm:.3} min={rm_min:.3} max={rm_max:.3}"
    );
    println!(
        "provision.ratio_wall_to_modelled_critical_path median={rd:.3} min={rd_min:.3} max={rd_max:.3}"
    );
    println!(
        "provision.ratio_wall_to_modelled_plus_polls_critical_path median={rp:.3} min={rp_min:.3} max={rp_max:.3}"
    );
    println!(
        "provision.runner_overhead_ms median={overhead:.1} min={oh_min:.1} max={oh_max:.1} (wall - measured critical path: claim, launches, commits, finish)"
    );
    println!("provision.max_launch_gap_ms median={gap:.1} max={gap_max:.1}");
    println!("provision.serial_sum_median_s={serial:.3} (what one step at a time would take)");
    println!(
        "provision.at_speed_1: critical path modelled {:.1} s, modelled + polls {:.1} s (poll share {:.1}%)",
        plan_at_1.0,
        plan_at_1.1,
        100.0 * (plan_at_1.1 / plan_at_1.0 - 1.0)
    );
    println!(
        "target wall / measured critical path {rm:.3} <= {TARGET_RATIO}: {}",
        if rm <= TARGET_RATIO { "PASS" } else { "MISS" }
    );
    println!(
        "target wall / modelled critical path {rd:.3} <= {TARGET_RATIO}: {} (what is left is the clients' poll schedule: wall / modelled + polls = {rp:.3})",
        if rd <= TARGET_RATIO { "PASS" } else { "MISS" }
    );
    println!("=======================================================================");
    Ok(())
}
