//! The in-repo load generator: `CONNECTIONS` keep-alive HTTP/1.1 connections, each a
//! task that sends one request, reads the whole body, and sends the next, until the
//! fixed duration is over. It runs on its own runtime (own threads, named [`THREAD`]),
//! so the server's runtime schedules only server work and the CPU time of each can be
//! told apart.
//!
//! Invariant: every counted request answered 200 with a non-empty body; anything else
//! aborts the run (a fast error must never pass for throughput).

use std::time::{Duration, Instant};

use anyhow::{Result, bail};

/// The name of the generator's threads.
pub const THREAD: &str = "kbench-load";

/// One run's figures.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Requests counted.
    #[allow(dead_code)] // read by api_reads, not by scale
    pub n: usize,
}

/// `GET url` as `user` from `conns` connections for `secs`; a short warm-up (which also
/// opens every connection) is not counted.
#[allow(dead_code)] // used by scale; api_reads samples CPU with [`run_sampled`]
pub fn run(url: &str, user: &str, conns: usize, secs: f64, threads: usize) -> Result<Run> {
    run_sampled(url, user, conns, secs, threads, || ()).map(|(r, _, _)| r)
}

/// [`run`], calling `sample` (e.g. CPU time read from `/proc`) just before and just
/// after the counted part; the run and both samples.
pub fn run_sampled<T>(
    url: &str,
    user: &str,
    conns: usize,
    secs: f64,
    threads: usize,
    sample: impl Fn() -> T,
) -> Result<(Run, T, T)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(THREAD)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(conns)
            .tcp_nodelay(true)
            .build()?;
        warm(&http, url, user, conns).await?;
        let before = sample();
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let start = Instant::now();
        let tasks: Vec<_> = (0..conns)
            .map(|_| {
                let (http, url, user) = (http.clone(), url.to_owned(), user.to_owned());
                tokio::spawn(async move { worker(http, url, user, end).await })
            })
            .collect();
        let mut us: Vec<u32> = Vec::new();
        for t in tasks {
            us.extend(t.await??);
        }
        let wall = start.elapsed().as_secs_f64();
        let after = sample();
        Ok((summarise(us, wall), before, after))
    })
}

/// Rate and percentiles of `us` (microseconds per request) completed in `wall` seconds.
pub fn summarise(mut us: Vec<u32>, wall: f64) -> Run {
    us.sort_unstable();
    let at = |q: f64| {
        let rank = ((q * us.len() as f64).ceil() as usize).clamp(1, us.len().max(1));
        us.get(rank - 1)
            .map_or(f64::NAN, |v| f64::from(*v) / 1000.0)
    };
    Run {
        rps: us.len() as f64 / wall,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        n: us.len(),
    }
}

async fn get(http: &reqwest::Client, url: &str, user: &str) -> Result<()> {
    let r = http.get(url).header("x-kinetic-user", user).send().await?;
    let status = r.status();
    let body = r.bytes().await?;
    if !status.is_success() || body.is_empty() {
        bail!("GET {url}: {status} {}", String::from_utf8_lossy(&body));
    }
    Ok(())
}

/// Open `conns` connections at once and use each a few times.
async fn warm(http: &reqwest::Client, url: &str, user: &str, conns: usize) -> Result<()> {
    for _ in 0..3 {
        let all = (0..conns).map(|_| get(http, url, user));
        for r in futures::future::join_all(all).await {
            r?;
        }
    }
    Ok(())
}

/// Latencies in microseconds of the requests this connection completed before `end`.
async fn worker(
    http: reqwest::Client,
    url: String,
    user: String,
    end: Instant,
) -> Result<Vec<u32>> {
    let mut us = Vec::with_capacity(4096);
    loop {
        let t = Instant::now();
        if t >= end {
            return Ok(us);
        }
        get(&http, &url, &user).await?;
        us.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
    }
}
