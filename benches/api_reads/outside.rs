//! The API server on its own: `kineticd serve` as a separate process (optionally pinned
//! to CPU 0, the load generator to CPU 1), loaded from outside by `wrk` (when on PATH)
//! or the in-repo generator in this process, with the CPU time every party spent per
//! request read from `/proc`: the server, PostgreSQL (the postmaster and its backends),
//! the load generator, and everything else on the machine.
//!
//! Invariant: the server runs the production binary and settings (`serve`, JSON logs,
//! metrics, request ids) with the per-caller rate limit off (one caller sends all the
//! load) and no workers; a variant changes only what its label says.

use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::serve::{Serve, pin};
use crate::store_only;
use crate::support::{loadavg, median};

/// CPU seconds of one process (`/proc/<pid>/stat` utime + stime, and with `children`
/// also the reaped children's cutime + cstime).
fn cpu_of(pid: u32, children: bool) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the `(comm)`, which may hold spaces.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    // rest[0] is field 3 (state): utime is field 14 -> index 11.
    let ticks = f.get(11).copied().unwrap_or(0.0)
        + f.get(12).copied().unwrap_or(0.0)
        + if children {
            f.get(13).copied().unwrap_or(0.0) + f.get(14).copied().unwrap_or(0.0)
        } else {
            0.0
        };
    // SAFETY: sysconf has no preconditions.
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

fn ppid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU seconds of the PostgreSQL server whose postmaster is `postmaster`: itself (with
/// its reaped backends) and its live children.
pub fn postgres_cpu(postmaster: u32) -> f64 {
    let mut total = cpu_of(postmaster, true);
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok())
            && ppid_of(pid) == Some(postmaster)
        {
            total += cpu_of(pid, false);
        }
    }
    total
}

/// The postmaster's pid, from `postmaster.pid` in the server's data directory.
pub async fn postmaster_pid(db: &kineticd::store::Db) -> Result<u32> {
    let dir: String = sqlx::query_scalar("SELECT current_setting('data_directory')")
        .fetch_one(db)
        .await?;
    let text = std::fs::read_to_string(format!("{dir}/postmaster.pid"))
        .with_context(|| format!("reading {dir}/postmaster.pid"))?;
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .context("postmaster.pid has no pid")
}

/// Busy CPU seconds of the whole machine (`/proc/stat`, all but idle and iowait).
pub fn machine_busy() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let busy: f64 =
        f.iter().take(8).sum::<f64>() - f.get(3).unwrap_or(&0.0) - f.get(4).unwrap_or(&0.0);
    // SAFETY: sysconf has no preconditions.
    busy / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

/// CPU seconds of this process's waited-for children.
pub fn children_cpu() -> f64 {
    // SAFETY: getrusage writes only the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// This process's own CPU seconds (all threads).
pub fn self_cpu() -> f64 {
    cpu_of(std::process::id(), false)
}

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

/// The store function behind each read of `paths`, in the same order.
const STORE_READS: [store_only::Read; 3] = [
    store_only::Read::Operation,
    store_only::Read::Cluster,
    store_only::Read::ClusterPage,
];

/// Figures of one load run.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    rps: f64,
    p50: f64,
    p99: f64,
    /// CPU microseconds per request: server, PostgreSQL, load generator, everything else.
    server_us: f64,
    pg_us: f64,
    loader_us: f64,
    other_us: f64,
}

/// The whole out-of-process mode: seed, then per repetition every variant x read and
/// `pgbench -S`, then the medians.
pub async fn bench(k: &super::Knobs, api_url: &str, pg_url: &str) -> Result<()> {
    kineticd::auth::install_tls_provider();
    let http = reqwest::Client::new();
    let db = kineticd::store::connect(api_url, 2).await?;
    kineticd::store::migrate(&db).await?;
    let t = crate::baseline::fill(&db).await?;
    let (op, project, cluster) = (t.operation, t.project, t.cluster);
    super::pgbench::init(pg_url).await?;
    let postmaster = postmaster_pid(&db).await?;
    let zone = crate::baseline::ZONE;
    let paths = [
        ("GET /v1/operations/{id}", format!("/v1/operations/{op}")),
        (
            "GET /v1/projects/{p}/zones/{z}/clusters/{c}",
            format!("/v1/projects/{project}/zones/{zone}/clusters/{cluster}"),
        ),
        (
            "GET /v1/clusters?pageSize=50",
            "/v1/clusters?pageSize=50".to_owned(),
        ),
    ];
    let wrk = wrk();
    let loader = if wrk.is_some() {
        "wrk -t2"
    } else {
        "in-repo generator (this process)"
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
    let mut runs: Vec<Vec<Vec<Figures>>> = vec![vec![Vec::new(); paths.len()]; VARIANTS.len()];
    let mut pg_runs: Vec<Figures> = Vec::new();
    let mut store_runs: Vec<Vec<Figures>> = vec![Vec::new(); paths.len()];
    let names = store_only::Names {
        operation: op.parse()?,
        project: project.clone(),
        zone: zone.to_owned(),
        cluster: cluster.clone(),
        reader: crate::baseline::READER.to_owned(),
    };
    for rep in 0..k.reps {
        for (vi, v) in VARIANTS.iter().enumerate() {
            let rust_log = v.rust_log.unwrap_or("info,sqlx=warn,tower_http=info");
            let env = [
                ("KINETIC_WORKERS", "0".to_owned()),
                ("KINETIC_DB_MAX_CONNECTIONS", k.pool.to_string()),
                ("KINETIC_RATE_LIMIT_PER_SECOND", "0".to_owned()),
                ("RUST_LOG", rust_log.to_owned()),
            ];
            let server = Serve::start("api-reads", api_url, &env, v.server_cpu, &http).await?;
            for (pi, (what, path)) in paths.iter().enumerate() {
                let url = server.url(path);
                // Warm-up (connections, statement cache), not counted.
                let warm_secs = 2;
                if let Some(bin) = &wrk {
                    run_wrk(
                        bin,
                        &url,
                        crate::baseline::READER,
                        k.conns,
                        warm_secs,
                        v.loader_cpu,
                    )?;
                }
                let (s0, p0, c0, m0, own0) = (
                    cpu_of(server.pid(), false),
                    postgres_cpu(postmaster),
                    children_cpu(),
                    machine_busy(),
                    self_cpu(),
                );
                let (rps, p50, p99, secs) = match &wrk {
                    Some(bin) => {
                        let t = Instant::now();
                        let (r, a, b) = run_wrk(
                            bin,
                            &url,
                            crate::baseline::READER,
                            k.conns,
                            k.secs,
                            v.loader_cpu,
                        )?;
                        (r, a, b, t.elapsed().as_secs_f64())
                    }
                    None => {
                        let (url, conns, secs) = (url.clone(), k.conns, f64::from(k.secs));
                        let t = Instant::now();
                        let r = tokio::task::spawn_blocking(move || {
                            super::load::run(&url, crate::baseline::READER, conns, secs, 2)
                        })
                        .await??;
                        (r.rps, r.p50_ms, r.p99_ms, t.elapsed().as_secs_f64())
                    }
                };
                let n = rps * secs;
                let server_s = cpu_of(server.pid(), false) - s0;
                let pg_s = postgres_cpu(postmaster) - p0;
                let loader_s = (children_cpu() - c0) + (self_cpu() - own0);
                let busy = machine_busy() - m0;
                let f = Figures {
                    rps,
                    p50,
                    p99,
                    server_us: server_s / n * 1e6,
                    pg_us: pg_s / n * 1e6,
                    loader_us: loader_s / n * 1e6,
                    other_us: (busy - server_s - pg_s - loader_s).max(0.0) / n * 1e6,
                };
                println!(
                    "  rep {} [{}] {what}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms; CPU us/req: \
                     server {:.0}, postgres {:.0}, loader {:.0}, other {:.0}",
                    rep + 1,
                    vi + 1,
                    f.rps,
                    f.p50,
                    f.p99,
                    f.server_us,
                    f.pg_us,
                    f.loader_us,
                    f.other_us
                );
                runs[vi][pi].push(f);
            }
        }
        for (pi, ((what, _), read)) in paths.iter().zip(STORE_READS).enumerate() {
            let (p0, m0, own0) = (postgres_cpu(postmaster), machine_busy(), self_cpu());
            let r = store_only::run(api_url, k.pool, k.conns, k.secs, read, &names).await?;
            let n = r.rps * f64::from(k.secs);
            let (pg_s, own_s) = (postgres_cpu(postmaster) - p0, self_cpu() - own0);
            let busy = machine_busy() - m0;
            let f = Figures {
                rps: r.rps,
                p50: r.p50_ms,
                p99: r.p99_ms,
                server_us: own_s / n * 1e6,
                pg_us: pg_s / n * 1e6,
                other_us: (busy - pg_s - own_s).max(0.0) / n * 1e6,
                ..Figures::default()
            };
            println!(
                "  rep {} [store] {what}: {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms; CPU us/call: \
                 bench (sqlx) {:.0}, postgres {:.0}, other {:.0}",
                rep + 1,
                f.rps,
                f.p50,
                f.p99,
                f.server_us,
                f.pg_us,
                f.other_us
            );
            store_runs[pi].push(f);
        }
        let (p0, c0, m0) = (postgres_cpu(postmaster), children_cpu(), machine_busy());
        let t = Instant::now();
        let (tps, latency) = super::pgbench::select_only_latency(pg_url, k.conns, k.secs).await?;
        let n = tps * t.elapsed().as_secs_f64();
        let pg_s = postgres_cpu(postmaster) - p0;
        let loader_s = children_cpu() - c0;
        let busy = machine_busy() - m0;
        let f = Figures {
            rps: tps,
            p50: latency,
            pg_us: pg_s / n * 1e6,
            loader_us: loader_s / n * 1e6,
            other_us: (busy - pg_s - loader_s).max(0.0) / n * 1e6,
            ..Figures::default()
        };
        println!(
            "  rep {}: pgbench -S: {tps:.0} tps, latency average {latency:.2} ms; CPU us/tx: postgres {:.0}, pgbench {:.0}, other {:.0}",
            rep + 1,
            f.pg_us,
            f.loader_us,
            f.other_us
        );
        pg_runs.push(f);
    }
    let pick = |v: &[Figures], f: fn(&Figures) -> f64| median(v.iter().map(f).collect());
    let pg_tps = pick(&pg_runs, |f| f.rps);
    println!();
    println!("Variants:");
    for (vi, v) in VARIANTS.iter().enumerate() {
        println!("{}. {}", vi + 1, v.label);
    }
    println!(
        "store. the handler's store function (same SQL, same decoding) from {} tasks in \
         this process over a pool of {}: no HTTP, identity, service checks or JSON",
        k.conns, k.pool
    );
    println!();
    println!(
        "| variant | read | req/s | p50 ms | p99 ms | ratio to pgbench -S | CPU us/req: server | postgres | load generator | other processes |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (vi, per_path) in runs.iter().enumerate() {
        for (pi, (what, _)) in paths.iter().enumerate() {
            let r = &per_path[pi];
            let rps = pick(r, |f| f.rps);
            println!(
                "| {} | `{what}` | {rps:.0} | {:.2} | {:.2} | {:.3} | {:.0} | {:.0} | {:.0} | {:.0} |",
                vi + 1,
                pick(r, |f| f.p50),
                pick(r, |f| f.p99),
                rps / pg_tps,
                pick(r, |f| f.server_us),
                pick(r, |f| f.pg_us),
                pick(r, |f| f.loader_us),
                pick(r, |f| f.other_us)
            );
        }
    }
    for (pi, (what, _)) in paths.iter().enumerate() {
        let r = &store_runs[pi];
        let rps = pick(r, |f| f.rps);
        println!(
            "| store | `{what}`: its store function only | {rps:.0} | {:.2} | {:.2} | {:.3} | {:.0} (sqlx, in the bench) | {:.0} | | {:.0} |",
            pick(r, |f| f.p50),
            pick(r, |f| f.p99),
            rps / pg_tps,
            pick(r, |f| f.server_us),
            pick(r, |f| f.pg_us),
            pick(r, |f| f.other_us)
        );
    }
    println!(
        "| | `pgbench -S -c {} -j 2 -T {}` | {pg_tps:.0} tps | {:.2} (average) | | 1 | | {:.0} | {:.0} | {:.0} |",
        k.conns,
        k.secs,
        pick(&pg_runs, |f| f.p50),
        pick(&pg_runs, |f| f.pg_us),
        pick(&pg_runs, |f| f.loader_us),
        pick(&pg_runs, |f| f.other_us)
    );
    println!();
    println!(
        "Little's law at {} connections: mean latency = connections / throughput, so a \
         mean under {:.0} ms needs at least {:.0} req/s (pgbench's own: {:.2} ms at {pg_tps:.0} tps)",
        k.conns,
        super::TARGET_P99_MS,
        k.conns as f64 / (super::TARGET_P99_MS / 1000.0),
        k.conns as f64 / pg_tps * 1000.0
    );
    println!(
        "per-request cost of the layers, measured in this process (100,000 iterations): \
         the `http` span with the JSON log layer at info {span_us:.2} us; the metrics \
         middleware's counter and histogram {metrics_us:.2} us; load average {}",
        loadavg()
    );
    Ok(())
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
