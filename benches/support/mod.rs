//! What every benchmark binary does before it measures anything: it runs only under
//! `cargo bench` (`--bench` among its arguments; `cargo test --benches` runs it without,
//! and then it does nothing), and it logs warnings and worse to stderr (`RUST_LOG`
//! overrides), so stdout holds the figures alone. Also the small helpers they share
//! (knobs from the environment, medians, scratch databases).

#![allow(dead_code)]

/// The arguments after the program name when run by `cargo bench`; `None` (after saying
/// how to run it) otherwise.
pub fn bench_args(name: &str) -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--bench") {
        return Some(args);
    }
    println!("{name} benchmark: run it with `cargo bench --bench {name}`");
    None
}

/// The owner (the dev identity's email) of what the provisioning benches create, and
/// the zone they create it in.
pub const OWNER: &str = "bench@example.com";
pub const ZONE: &str = "us-central1-a";
/// The team of the benches that need one team, and its project.
pub const TEAM: &str = "bench-team";
pub const PROJECT: &str = "bench-proj";

/// The sections a run was asked for: its arguments other than options (none: all).
pub struct Sections(Vec<String>);

impl Sections {
    pub fn wants(&self, section: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|o| o == section)
    }
}

/// What a bench's `main` does first: [`bench_args`] (`None`: not run by `cargo bench`,
/// nothing to do), then [`init_tracing`]; the sections asked for.
pub fn start(name: &str) -> Option<Sections> {
    let args = bench_args(name)?;
    init_tracing();
    Some(Sections(
        args.into_iter().filter(|a| !a.starts_with('-')).collect(),
    ))
}

/// Logs at `warn` (or as `RUST_LOG` says) to stderr.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
}

/// The stderr log layer of a bench that adds layers of its own: `default` (an
/// `EnvFilter` directive) unless `RUST_LOG` says otherwise.
pub fn stderr_log_layer<S>(default: &str) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter)
}

/// `key` from the environment, parsed; `default` when unset or blank.
pub fn env_or<T: std::str::FromStr>(key: &str, default: T) -> anyhow::Result<T> {
    match std::env::var(key) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .map_err(|_| anyhow::anyhow!("{key}={v:?} is not a number")),
        _ => Ok(default),
    }
}

/// The middle value (NaN for none).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The median seconds of `runs` calls of `f`.
pub async fn median_seconds<T, F, Fut>(runs: usize, f: F) -> anyhow::Result<f64>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        let t = std::time::Instant::now();
        f().await?;
        v.push(t.elapsed().as_secs_f64());
    }
    Ok(median(v))
}

/// A multi-threaded runtime for the bench's own work.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// The PostgreSQL server of `DATABASE_URL` (default the machine's own,
/// `postgres://postgres@127.0.0.1:5432/postgres`), on which a bench makes scratch
/// databases with unique names and drops them at the end.
pub struct PgServer {
    /// The URL to connect to for `CREATE/DROP DATABASE`.
    pub admin: String,
    server: String,
}

impl PgServer {
    pub fn from_env() -> anyhow::Result<PgServer> {
        let admin = std::env::var("DATABASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let cut = admin
            .rfind('/')
            .ok_or_else(|| anyhow::anyhow!("DATABASE_URL has no database part"))?;
        let server = admin[..cut].to_owned();
        Ok(PgServer { admin, server })
    }

    /// `{prefix}_{10 random hex digits}`: a database name no other run uses.
    pub fn scratch_name(prefix: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("{prefix}_{}", &id[..10])
    }

    /// One [`PgServer::scratch_name`] for each of `prefixes`.
    pub fn scratch_names<const N: usize>(prefixes: [&str; N]) -> [String; N] {
        prefixes.map(Self::scratch_name)
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.server)
    }
}

/// `DROP DATABASE .. WITH (FORCE)` for each of `names`, warning (not failing) when one
/// cannot be dropped.
pub async fn drop_databases(admin: &mut sqlx::PgConnection, names: &[&str]) {
    use sqlx::Executor;
    for d in names {
        let sql = format!("DROP DATABASE IF EXISTS {d} WITH (FORCE)");
        if let Err(e) = admin.execute(sqlx::AssertSqlSafe(sql)).await {
            eprintln!("warning: could not drop {d}: {e}");
        }
    }
}

/// `pgbench -i -s {scale} -q {url}` with pgbench `bin`: its tables, once.
pub async fn pgbench_init(bin: &std::path::Path, scale: u32, url: &str) -> anyhow::Result<()> {
    use anyhow::Context;
    let out = tokio::process::Command::new(bin)
        .args(["-i", "-s", &scale.to_string(), "-q", url])
        .output()
        .await
        .with_context(|| format!("running {}", bin.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "pgbench -i failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The 1-, 5- and 15-minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// `f` on a private PostgreSQL (a temporary data directory from the installed server
/// binaries), on a fresh [`runtime`]; the server is stopped afterwards, whatever `f`
/// returned.
pub fn on_private_postgres<T>(
    f: impl AsyncFnOnce(&kineticd::devdb::PrivatePostgres) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    runtime()?.block_on(async {
        let pg = kineticd::devdb::PrivatePostgres::start_temporary()
            .await
            .map_err(|e| anyhow::anyhow!("starting a private PostgreSQL: {e}"))?;
        let r = f(&pg).await;
        let _ = pg.stop().await;
        r
    })
}
