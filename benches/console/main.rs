//! Server-side render time of the web console (`cargo bench --bench console`; not a
//! test): issue 16, "render in under 100 ms server-side for a team with 50 clusters".
//!
//! On a private PostgreSQL it starts the production app in this process (as
//! `serve --dev`, the simulator at speed 0), seeds one team with 50 clusters ([`seed`]:
//! one made by a real `up` with four 4-GPU nodes, 49 written through the store with 3
//! pools each, 50 queued operations), then renders the home page and the live
//! cluster's page `KBENCH_RUNS` times each (default 200, after 10 warm-up renders)
//! through the production router in process (`tower::ServiceExt::oneshot`: the whole
//! middleware stack, no socket), timing each from request to the last byte of the body.
//! It prints median, p99 and max per page, the page's size and the SQL statements one
//! render sends ([`count`]). The target: p99 under 100 ms.
//!
//! Invariant: nothing measured writes (the workers are stopped before the renders), so
//! every render sees the same team.

#[path = "../support/app.rs"]
#[allow(dead_code)]
mod app_support;
#[path = "../api_reads/count.rs"]
mod count;
#[path = "../support/records.rs"]
mod records;
mod seed;
#[path = "../support/mod.rs"]
mod support;

use std::time::Instant;

use anyhow::{Result, ensure};
use axum::body::Body;
use axum::http::Request;
use kineticd::devdb::PrivatePostgres;
use tower::ServiceExt;

const TARGET_P99_MS: f64 = 100.0;
const WARMUP: usize = 10;

fn main() -> Result<()> {
    if support::bench_args("console").is_none() {
        return Ok(());
    }
    count::init();
    let runs: usize = support::env_or("KBENCH_RUNS", 200)?;
    support::on_private_postgres(async |pg| run(pg, runs.max(1)).await)
}

/// One page's figures.
struct Figures {
    p50: f64,
    p99: f64,
    max: f64,
    bytes: usize,
    statements: f64,
}

async fn run(pg: &PrivatePostgres, runs: usize) -> Result<()> {
    let app = app_support::start(pg, "kbench_console", 0.0, |c| {
        c.quotas.values_mut().for_each(|q| *q = q.max(1e6));
    })
    .await?;
    seed::seed(&app).await?;
    let router = kineticd::app::router(app.state.clone());
    let cluster = format!(
        "/console/clusters/{}/{}/{}",
        seed::PROJECT,
        seed::ZONE,
        seed::LIVE
    );
    let pages = [
        ("home `/console/`", "/console/".to_owned(), "c-049"),
        (
            "cluster `/console/clusters/{p}/{z}/{c}`",
            cluster,
            "capacity-bar",
        ),
    ];
    let cpus = std::thread::available_parallelism()?.get();
    println!(
        "console: {runs} renders per page after {WARMUP} warm-up, one at a time, \
         in process; {cpus} CPUs; team with {} clusters, {} queued operations",
        seed::CLUSTERS,
        seed::CLUSTERS
    );
    let mut rows = Vec::new();
    for (what, path, must) in &pages {
        let render = || async {
            let req = Request::get(path.as_str())
                .header("x-kinetic-user", seed::OWNER)
                .body(Body::empty())?;
            let t = Instant::now();
            let resp = router.clone().oneshot(req).await?;
            let status = resp.status();
            let body = axum::body::to_bytes(resp.into_body(), usize::MAX).await?;
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let text = String::from_utf8_lossy(&body);
            ensure!(status.is_success(), "GET {path}: {status}: {text}");
            ensure!(text.contains(must), "GET {path} lacks {must:?}");
            anyhow::Ok((ms, body.len()))
        };
        for _ in 0..WARMUP {
            render().await?;
        }
        let (one, statements) = count::counting(render()).await;
        let (_, bytes) = one?;
        let mut ms = Vec::with_capacity(runs);
        for _ in 0..runs {
            ms.push(render().await?.0);
        }
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
        rows.push((
            *what,
            Figures {
                p50: at(0.5),
                p99: at(0.99),
                max: ms[ms.len() - 1],
                bytes,
                statements: statements as f64,
            },
        ));
    }
    println!();
    println!("| page | p50 ms | p99 ms | max ms | HTML bytes | SQL statements |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut pass = true;
    for (what, f) in &rows {
        pass &= f.p99 < TARGET_P99_MS;
        println!(
            "| {what} | {:.2} | {:.2} | {:.2} | {} | {} |",
            f.p50, f.p99, f.max, f.bytes, f.statements
        );
    }
    println!();
    println!(
        "target (p99 < {TARGET_P99_MS} ms per page): {}",
        if pass { "PASS" } else { "MISS" }
    );
    Ok(())
}
