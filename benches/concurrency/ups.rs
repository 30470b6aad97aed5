//! A wave of `up`s sent at once: N gpu-l4 clusters, each in a fresh project of its own
//! (ten projects per team, one caller per team, so neither the per-caller rate limit nor
//! the per-team cap of `serve`'s defaults is what is measured), spread round-robin over
//! the replicas; every client then long-polls its operation with `:wait` on the replica
//! that accepted it. Meanwhile a sampler reads every 100 ms the replicas' RSS and the
//! database sessions of the benchmark's database.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::procs::{cpu_seconds, rss_mib};
use crate::{ZONE, app_support, call};

/// Projects (one `up` each) per team.
const PER_TEAM: usize = 10;

/// The replicas a wave runs on.
pub struct Fleet {
    /// Base URLs of the replicas' APIs.
    pub apis: Vec<String>,
    /// Their process ids (RSS and CPU are read from `/proc`).
    pub pids: Vec<u32>,
    /// The simulator's process, when it runs apart (its CPU is reported).
    pub sim_pid: Option<u32>,
}

/// What a wave measured.
pub struct Wave {
    pub n: usize,
    /// First `createTime` to last `endTime`, from the operations.
    pub wall_s: f64,
    /// Each operation's `createTime` -> `endTime`: median and maximum.
    pub op_median_s: f64,
    pub op_max_s: f64,
    /// The accepting `PUT`: median and maximum (ms).
    pub accept_median_ms: f64,
    pub accept_max_ms: f64,
    /// Largest RSS seen of any replica, and of all replicas together (MiB).
    pub peak_rss_mib: f64,
    pub peak_rss_total_mib: f64,
    /// RSS of the replicas before the wave (MiB, summed).
    pub idle_rss_total_mib: f64,
    /// Most database sessions on the bench's database at once (all replicas), and most
    /// of them running a statement or idle inside a transaction.
    pub peak_db_sessions: i64,
    pub peak_db_busy: i64,
    /// CPU seconds the replicas (and the simulator) used during the wave.
    pub replicas_cpu_s: f64,
    pub sim_cpu_s: f64,
    /// `:wait` calls answered 503 DATABASE_UNAVAILABLE (retried after 1 s).
    pub unavailable: usize,
}

pub async fn wave(
    fleet: &Fleet,
    http: &reqwest::Client,
    db_url: &str,
    n: usize,
    tag: &str,
) -> Result<Wave> {
    let teams = n.div_ceil(PER_TEAM);
    let caller = |t: usize| format!("owner-{tag}-{t}@example.com");
    for t in 0..teams {
        let projects: Vec<String> = (0..PER_TEAM)
            .map(|j| t * PER_TEAM + j)
            .filter(|&i| i < n)
            .map(|i| format!("p-{tag}-{i}"))
            .collect();
        let api = &fleet.apis[t % fleet.apis.len()];
        call(
            http,
            api,
            &caller(t),
            "/v1/teams",
            json!({"teamId": format!("t-{tag}-{t}"), "projects": projects}),
        )
        .await?;
    }
    let idle_rss_total_mib = fleet.pids.iter().map(|&p| rss_mib(p)).sum();
    let cpu0: f64 = fleet.pids.iter().map(|&p| cpu_seconds(p)).sum();
    let sim0 = fleet.sim_pid.map_or(0.0, cpu_seconds);
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample(fleet.pids.clone(), db_url.to_owned(), stop.clone()));

    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        let api = fleet.apis[i % fleet.apis.len()].clone();
        let user = caller(i / PER_TEAM);
        let http = http.clone();
        let path = format!("/v1/projects/p-{tag}-{i}/zones/{ZONE}/clusters/kc");
        tasks.spawn(async move { one_up(&http, &api, &user, &path).await });
    }
    let mut ops = Vec::with_capacity(n);
    while let Some(r) = tasks.join_next().await {
        ops.push(r??);
    }
    stop.store(true, Ordering::SeqCst);
    let (peak_rss_mib, peak_rss_total_mib, (peak_db_sessions, peak_db_busy)) = sampler.await??;
    let replicas_cpu_s = fleet.pids.iter().map(|&p| cpu_seconds(p)).sum::<f64>() - cpu0;
    let sim_cpu_s = fleet.sim_pid.map_or(0.0, cpu_seconds) - sim0;

    let first = ops.iter().map(|o| o.create).min().context("no operation")?;
    let last = ops.iter().map(|o| o.end).max().context("no operation")?;
    let mut durations: Vec<f64> = ops.iter().map(|o| secs(o.create, o.end)).collect();
    durations.sort_by(f64::total_cmp);
    let mut accepts: Vec<f64> = ops.iter().map(|o| o.accept_ms).collect();
    accepts.sort_by(f64::total_cmp);
    Ok(Wave {
        n,
        wall_s: secs(first, last),
        op_median_s: durations[durations.len() / 2],
        op_max_s: durations[durations.len() - 1],
        accept_median_ms: accepts[accepts.len() / 2],
        accept_max_ms: accepts[accepts.len() - 1],
        peak_rss_mib,
        peak_rss_total_mib,
        idle_rss_total_mib,
        peak_db_sessions,
        peak_db_busy,
        replicas_cpu_s,
        sim_cpu_s,
        unavailable: ops.iter().map(|o| o.unavailable).sum(),
    })
}

/// One finished `up`.
struct Done {
    create: DateTime<Utc>,
    end: DateTime<Utc>,
    accept_ms: f64,
    /// `:wait` answers 503 on the way.
    unavailable: usize,
}

async fn one_up(http: &reqwest::Client, api: &str, user: &str, path: &str) -> Result<Done> {
    let t0 = Instant::now();
    let body = json!({"accelerator": "gpu-l4"});
    let op = app_support::call_api(http, api, user, reqwest::Method::PUT, path, body).await?;
    let accept_ms = t0.elapsed().as_secs_f64() * 1e3;
    let name = op["name"].as_str().context("operation name")?.to_owned();
    let mut unavailable = 0;
    let done = loop {
        let r = call(
            http,
            api,
            user,
            &format!("/v1/{name}:wait?timeout=30s"),
            Value::Null,
        )
        .await;
        // A 503 (every pooled connection busy past the acquire wait) says retry after 1 s,
        // as a client would; counted.
        let v = match r {
            Err(e) if e.to_string().contains("503 Service Unavailable") => {
                unavailable += 1;
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
            r => r?,
        };
        if v["done"] == true {
            break v;
        }
        if t0.elapsed() > Duration::from_secs(900) {
            bail!("{name} not done after 15 minutes");
        }
    };
    if done["metadata"]["state"] != "SUCCEEDED" {
        bail!(
            "{path}: up ended {}: {}",
            done["metadata"]["state"],
            done["error"]
        );
    }
    Ok(Done {
        create: time(&done["metadata"]["createTime"])?,
        end: time(&done["metadata"]["endTime"])?,
        accept_ms,
        unavailable,
    })
}

/// Every 100 ms until `stop`: the largest RSS of one replica and of all together, and
/// the most sessions on the database of `url` (all, and busy: active or in a transaction).
async fn sample(
    pids: Vec<u32>,
    url: String,
    stop: Arc<AtomicBool>,
) -> Result<(f64, f64, (i64, i64))> {
    let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&url).await?;
    let (mut one, mut all, mut sessions, mut busy) = (0f64, 0f64, 0i64, 0i64);
    while !stop.load(Ordering::SeqCst) {
        let rss: Vec<f64> = pids.iter().map(|&p| rss_mib(p)).collect();
        one = rss.iter().copied().fold(one, f64::max);
        all = all.max(rss.iter().sum());
        let (s, b): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE state <> 'idle') FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&mut c)
        .await?;
        sessions = sessions.max(s);
        if b > busy && std::env::var_os("KBENCH_SHOW_SESSIONS").is_some() {
            let rows: Vec<(String, String, String, f64)> = sqlx::query_as(
                "SELECT coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''), \
                   left(query, 100), \
                   coalesce(extract(epoch FROM now() - xact_start), 0)::float8 \
                 FROM pg_stat_activity WHERE datname = current_database() \
                   AND pid <> pg_backend_pid() AND state <> 'idle'",
            )
            .fetch_all(&mut c)
            .await?;
            eprintln!("busy sessions: {rows:#?}");
        }
        busy = busy.max(b);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((one, all, (sessions, busy)))
}

pub fn time(v: &Value) -> Result<DateTime<Utc>> {
    let s = v.as_str().context("timestamp missing")?;
    Ok(DateTime::parse_from_rfc3339(s)?.with_timezone(&Utc))
}

pub fn secs(a: DateTime<Utc>, b: DateTime<Utc>) -> f64 {
    (b - a).num_microseconds().unwrap_or(0) as f64 / 1e6
}
