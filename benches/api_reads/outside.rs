//! The API server on its own: `kineticd serve` as a separate process (optionally pinned
//! to CPU 0, the load generator to CPU 1), loaded from outside by `wrk` (when on PATH)
//! or the in-repo generator in this process, with the CPU time every party spent per
//! request read from `/proc` ([`crate::cpu`]): the server, PostgreSQL (the postmaster
//! and its backends), the load generator, and everything else on the machine. The
//! records are seeded first by the app in this process ([`crate::seed`]: real
//! operations through its workers and the simulator), which then stays idle.
//!
//! Invariant: the server runs the production binary and settings (`serve`, JSON logs,
//! metrics, request ids) with the per-caller rate limit off (one caller sends all the
//! load) and no workers; a variant changes only what its label says.

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::cpu::{Watch, children_cpu, cpu_of, machine_busy, postgres_cpu, self_cpu};
use crate::report::{self, Figures, Row};
use crate::serve::{Serve, pin};
use crate::store_only;
use crate::support::loadavg;

/// `wrk` on PATH, if any.
pub fn wrk() -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("wrk"))
        .find(|p| p.is_file())
}

fn wrk_ms(v: &str) -> Option<f64> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().ok().map(|x| x * scale)
}

/// `wrk -t2 -c{conns} -d{secs}s --latency` on `url` as `user`, pinned to `cpu`:
/// (req/s, p50 ms, p99 ms).
pub fn run_wrk(
    bin: &std::path::Path,
    url: &str,
    user: &str,
    conns: usize,
    secs: u32,
    cpu: Option<usize>,
) -> Result<(f64, f64, f64)> {
    let mut cmd = Command::new(bin);
    pin(&mut cmd, cpu);
    let out = cmd
        .args([
            "-t2",
            &format!("-c{conns}"),
            &format!("-d{secs}s"),
            "--latency",
            "-H",
            &format!("x-kinetic-user: {user}"),
            url,
        ])
        .stdin(Stdio::null())
        .output()
        .context("running wrk")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!("wrk failed: {text}{}", String::from_utf8_lossy(&out.stderr));
    }
    if let Some(l) = text.lines().find(|l| l.contains("Non-2xx")) {
        bail!("wrk: {l}");
    }
    let field = |prefix: &str| -> Option<&str> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .map(str::trim)
    };
    let rps = field("Requests/sec:").and_then(|v| v.parse().ok());
    let p50 = field("50%").and_then(wrk_ms);
    let p99 = field("99%").and_then(wrk_ms);
    match (rps, p50, p99) {
        (Some(r), Some(a), Some(b)) => Ok((r, a, b)),
        _ => bail!("could not read wrk's output:\n{text}"),
    }
}

/// One variant of the server and where each side runs.
struct Variant {
    label: &'static str,
    /// `RUST_LOG` of the server (`None`: its default, `info,sqlx=warn,tower_http=info`).
    rust_log: Option<&'static str>,
    server_cpu: Option<usize>,
    loader_cpu: Option<usize>,
}

const VARIANTS: [Variant; 4] = [
    Variant {
        label: "separate process, default logs (info: a span per request)",
        rust_log: None,
        server_cpu: None,
        loader_cpu: None,
    },
    Variant {
        label: "separate process, RUST_LOG=warn (no request span)",
        rust_log: Some("warn"),
        server_cpu: None,
        loader_cpu: None,
    },
    Variant {
        label: "pinned: server CPU 0, load generator CPU 1, default logs",
        rust_log: None,
        server_cpu: Some(0),
        loader_cpu: Some(1),
    },
    Variant {
        label: "pinned, RUST_LOG=warn",
        rust_log: Some("warn"),
        server_cpu: Some(0),
        loader_cpu: Some(1),
    },
];

/// The whole out-of-process mode: seed, then per repetition every variant x read (and
/// with `KBENCH_STORE=1` each read's store function alone) and `pgbench -S`, then the
/// medians.
pub async fn bench(k: &super::Knobs, api_url: &str, pg_url: &str) -> Result<()> {
    kineticd::auth::install_tls_provider();
    let http = reqwest::Client::new();
    let app = crate::app_support::start_at(api_url, 4, 0.0, |_| {}).await?;
    let seeded = crate::seed::fill(&app).await?;
    let reads = super::reads(&seeded, k.clusters)?;
    super::pgbench::init(pg_url).await?;
    let postmaster = crate::cpu::postmaster_pid(&app.db).await?;
    let wrk = wrk();
    let loader = if wrk.is_some() {
        "wrk -t2"
    } else {
        "in-repo generator (this process)"
    };
    let variants: &[Variant] = if k.all_variants {
        &VARIANTS
    } else {
        &VARIANTS[..1]
    };
    println!(
        "api_reads (server in its own process): {} reps x {} s, {} connections, DB pool {}, \
         load generator {loader}; load average {}",
        k.reps,
        k.secs,
        k.conns,
        k.pool,
        loadavg()
    );
    let (span_us, metrics_us) = layer_costs();
    let mut runs: Vec<Vec<Vec<Figures>>> = vec![vec![Vec::new(); reads.len()]; variants.len()];
    let mut pg_runs: Vec<Figures> = Vec::new();
    let mut store_runs: Vec<Vec<Figures>> = vec![Vec::new(); reads.len()];
    let names = store_only::Names {
        project: seeded.project.clone(),
        zone: crate::baseline::ZONE.to_owned(),
        cluster: seeded.cluster.clone(),
        reader: crate::baseline::READER.to_owned(),
    };
    for rep in 1..=k.reps {
        for (vi, v) in variants.iter().enumerate() {
            let rust_log = v.rust_log.unwrap_or("info,sqlx=warn,tower_http=info");
            let env = [
                ("KINETIC_WORKERS", "0".to_owned()),
                ("KINETIC_DB_MAX_CONNECTIONS", k.pool.to_string()),
                ("KINETIC_RATE_LIMIT_PER_SECOND", "0".to_owned()),
                ("RUST_LOG", rust_log.to_owned()),
            ];
            let server = Serve::start("api-reads", api_url, &env, v.server_cpu, &http).await?;
            for (ri, r) in reads.iter().enumerate() {
                let url = server.url(&r.path);
                let f = match &wrk {
                    Some(bin) => wrk_figures(bin, &url, k, v, server.pid(), postmaster)?,
                    None => {
                        let watch = Watch {
                            postmaster,
                            server: Some(server.pid()),
                        };
                        let (conns, secs) = (k.conns, f64::from(k.secs));
                        let (run, before, after) = tokio::task::spawn_blocking(move || {
                            super::load::run_sampled(
                                &url,
                                crate::baseline::READER,
                                conns,
                                secs,
                                2,
                                || crate::cpu::Sample::take(watch),
                            )
                        })
                        .await??;
                        Figures::server_apart(&run, after.since(before))
                    }
                };
                report::progress(rep, &format!("[{}] {}", vi + 1, r.label), &f);
                runs[vi][ri].push(f);
            }
        }
        if k.store {
            for (ri, r) in reads.iter().enumerate() {
                let (p0, m0, own0) = (postgres_cpu(postmaster), machine_busy(), self_cpu());
                let run =
                    store_only::run(api_url, k.pool, k.conns, k.secs, r.store, &names).await?;
                let n = run.rps * f64::from(k.secs);
                let (pg_s, own_s) = (postgres_cpu(postmaster) - p0, self_cpu() - own0);
                let busy = machine_busy() - m0;
                let f = Figures {
                    rps: run.rps,
                    p50: run.p50_ms,
                    p99: run.p99_ms,
                    server_us: own_s / n * 1e6,
                    pg_us: pg_s / n * 1e6,
                    other_us: (busy - pg_s - own_s).max(0.0) / n * 1e6,
                    ..Figures::default()
                };
                report::progress(rep, &format!("[store] {}", r.label), &f);
                store_runs[ri].push(f);
            }
        }
        let f = report::pgbench(pg_url, k.conns, k.secs, postmaster).await?;
        report::progress_pgbench(rep, &f);
        pg_runs.push(f);
    }
    println!();
    println!("Variants:");
    for (vi, v) in variants.iter().enumerate() {
        println!("{}. {}", vi + 1, v.label);
    }
    let labels: Vec<Vec<String>> = variants
        .iter()
        .enumerate()
        .map(|(vi, _)| {
            reads
                .iter()
                .map(|r| format!("[{}] {}", vi + 1, r.label))
                .collect()
        })
        .collect();
    let store_labels: Vec<String> = reads
        .iter()
        .map(|r| {
            format!(
                "[store] {}: its store function only (kineticd = sqlx in the bench)",
                r.label
            )
        })
        .collect();
    let mut rows = Vec::new();
    for (vi, per_read) in runs.iter().enumerate() {
        for (ri, r) in reads.iter().enumerate() {
            rows.push(Row {
                label: &labels[vi][ri],
                about: &r.about,
                statements: None,
                runs: &per_read[ri],
                targeted: r.targeted && vi == 0,
            });
        }
    }
    if k.store {
        for (ri, r) in reads.iter().enumerate() {
            rows.push(Row {
                label: &store_labels[ri],
                about: &r.about,
                statements: Some(1.0),
                runs: &store_runs[ri],
                targeted: false,
            });
        }
    }
    report::table(&rows, &pg_runs, k.conns, k.secs);
    println!(
        "per-request cost of the layers, measured in this process (100,000 iterations): \
         the `http` span with the JSON log layer at info {span_us:.2} us; the metrics \
         middleware's counter and histogram {metrics_us:.2} us"
    );
    drop(app);
    Ok(())
}

/// One `wrk` run of `url` (after a 2 s warm-up), with the CPU each party spent.
fn wrk_figures(
    bin: &std::path::Path,
    url: &str,
    k: &super::Knobs,
    v: &Variant,
    server: u32,
    postmaster: u32,
) -> Result<Figures> {
    let user = crate::baseline::READER;
    run_wrk(bin, url, user, k.conns, 2, v.loader_cpu)?;
    let (s0, p0, c0, m0) = (
        cpu_of(server, false),
        postgres_cpu(postmaster),
        children_cpu(),
        machine_busy(),
    );
    let t = Instant::now();
    let (rps, p50, p99) = run_wrk(bin, url, user, k.conns, k.secs, v.loader_cpu)?;
    let n = (rps * t.elapsed().as_secs_f64()).max(1.0);
    let server_s = cpu_of(server, false) - s0;
    let pg_s = postgres_cpu(postmaster) - p0;
    let loader_s = children_cpu() - c0;
    let busy = machine_busy() - m0;
    Ok(Figures {
        rps,
        p50,
        p99,
        server_us: server_s / n * 1e6,
        pg_us: pg_s / n * 1e6,
        loader_us: loader_s / n * 1e6,
        other_us: (busy - server_s - pg_s - loader_s).max(0.0) / n * 1e6,
    })
}

/// Microseconds per request of (the request span as `serve` logs it, the metrics
/// middleware's recording), each timed over 100,000 iterations on this thread.
fn layer_costs() -> (f64, f64) {
    const N: u32 = 100_000;
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "info,sqlx=warn,tower_http=info",
        ))
        .with_writer(std::io::sink)
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .finish();
    let span_us = tracing::subscriber::with_default(subscriber, || {
        let t = Instant::now();
        for _ in 0..N {
            let id = uuid::Uuid::new_v4();
            let span = tracing::info_span!("http", method = %"GET", route = "/v1/operations/{operation}", request_id = %id);
            let _e = span.enter();
            std::hint::black_box(&span);
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(N)
    });
    let _ = kineticd::api::metrics::handle();
    let t = Instant::now();
    for _ in 0..N {
        let labels = [
            ("route", "/v1/operations/{operation}".to_owned()),
            ("method", "GET".to_owned()),
            ("status", 200u16.to_string()),
        ];
        metrics::counter!("kineticd_http_requests_total", &labels).increment(1);
        metrics::histogram!("kineticd_http_request_duration_seconds", &labels).record(0.001);
    }
    let metrics_us = t.elapsed().as_secs_f64() * 1e6 / f64::from(N);
    (span_us, metrics_us)
}
