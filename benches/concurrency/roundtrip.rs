//! The short round trip: a one-step NOOP operation, accepted to done, through the API of
//! `kineticd serve --dev` on the machine's PostgreSQL (durable: fsync on): `POST
//! /v1/testing/noopOperations` then `POST /v1/{name}:wait`, one at a time, the client
//! wall time of the two calls. Beside it, on the same server in the same run, pgbench's
//! latency of one single-row update per transaction (one commit): what a durable commit
//! costs on this machine at that moment.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::serve::Serve;
use crate::ups::time;
use crate::{OWNER, call};

const WARMUP: usize = 20;

/// Medians and p90s of the round trip (ms), and pgbench's commit latency (ms).
pub struct RoundTrip {
    pub median_ms: f64,
    pub p90_ms: f64,
    pub post_median_ms: f64,
    /// From the row (the server's clock): created to claimed, claimed to ended.
    pub claim_median_ms: f64,
    pub run_median_ms: f64,
    pub commit_ms: Option<f64>,
}

pub async fn run(db_url: &str, pgbench_url: &str, runs: usize) -> Result<RoundTrip> {
    let http = reqwest::Client::new();
    let env = [
        ("KINETIC_SIM_LISTEN", "127.0.0.1:0".to_owned()),
        ("RUST_LOG", "warn".to_owned()),
    ];
    let serve = Serve::start_with("roundtrip", &["--dev"], db_url, &env, None, &http).await?;
    let api = serve.url("");
    call(
        &http,
        &api,
        OWNER,
        "/v1/teams",
        json!({"teamId": "rt-team", "projects": []}),
    )
    .await?;
    let commit_before = commit_latency_ms(pgbench_url).await.ok();
    let mut total = Vec::new();
    let mut post = Vec::new();
    let mut claim = Vec::new();
    let mut ran = Vec::new();
    for i in 0..WARMUP + runs {
        let t0 = Instant::now();
        let op = call(
            &http,
            &api,
            OWNER,
            "/v1/testing/noopOperations",
            json!({"team": "rt-team", "steps": 1}),
        )
        .await?;
        let t1 = Instant::now();
        let name = op["name"].as_str().context("operation name")?;
        let done = call(
            &http,
            &api,
            OWNER,
            &format!("/v1/{name}:wait?timeout=30s"),
            Value::Null,
        )
        .await?;
        let t2 = Instant::now();
        if done["metadata"]["state"] != "SUCCEEDED" {
            bail!("{name} ended {}", done["metadata"]["state"]);
        }
        if i >= WARMUP {
            total.push((t2 - t0).as_secs_f64() * 1e3);
            post.push((t1 - t0).as_secs_f64() * 1e3);
            let m = &done["metadata"];
            let (c, s, e) = (
                time(&m["createTime"])?,
                time(&m["startTime"])?,
                time(&m["endTime"])?,
            );
            claim.push(ms(c, s));
            ran.push(ms(s, e));
        }
        // The engine idle again before the next one.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let commit_after = commit_latency_ms(pgbench_url).await.ok();
    let commit_ms = match (commit_before, commit_after) {
        (Some(a), Some(b)) => Some((a + b) / 2.0),
        (a, b) => a.or(b),
    };
    let (median_ms, p90_ms) = median_p90(total);
    Ok(RoundTrip {
        median_ms,
        p90_ms,
        post_median_ms: median_p90(post).0,
        claim_median_ms: median_p90(claim).0,
        run_median_ms: median_p90(ran).0,
        commit_ms,
    })
}

fn ms(a: chrono::DateTime<chrono::Utc>, b: chrono::DateTime<chrono::Utc>) -> f64 {
    crate::ups::secs(a, b) * 1e3
}

/// pgbench, one client, 5 s of a one-row UPDATE per transaction: latency average (ms).
async fn commit_latency_ms(url: &str) -> Result<f64> {
    let script = std::env::temp_dir().join(format!("kbench-commit-{}.sql", std::process::id()));
    std::fs::write(
        &script,
        "UPDATE kbench_commit SET v = v + 1 WHERE id = 1;\n",
    )?;
    let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(url).await?;
    sqlx::query("CREATE TABLE IF NOT EXISTS kbench_commit (id int PRIMARY KEY, v int)")
        .execute(&mut c)
        .await?;
    sqlx::query("INSERT INTO kbench_commit VALUES (1, 0) ON CONFLICT DO NOTHING")
        .execute(&mut c)
        .await?;
    let out = tokio::process::Command::new("pgbench")
        .args(["-n", "-c", "1", "-T", "5", "-f"])
        .arg(&script)
        .arg(url)
        .output()
        .await
        .context("running pgbench")?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("latency average = "))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .with_context(|| format!("no latency line in pgbench output: {text}"))
}

/// Nearest-rank (median, p90).
pub fn median_p90(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
        v.get(rank - 1).copied().unwrap_or(f64::NAN)
    };
    (at(0.5), at(0.9))
}
