//! `pgbench -S` (select-only: one primary-key read of `pgbench_accounts` per
//! transaction) on a pgbench-initialised database of the same server, as the yardstick:
//! a point read by primary key is what one API read costs the database at best.

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow, bail};

/// `pgbench` on `PATH`, else the newest under `/usr/lib/postgresql/*/bin`.
fn binary() -> PathBuf {
    if let Ok(path) = std::env::var("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join("pgbench");
            if p.is_file() {
                return p;
            }
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin/pgbench"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| PathBuf::from("pgbench"))
}

/// Initialise `url`'s database (scale 1) once.
pub async fn init(url: &str) -> Result<()> {
    crate::support::pgbench_init(&binary(), 1, url).await
}

/// `pgbench -S -c {clients} -j 2 -T {secs}`: transactions per second, and pgbench's own
/// `latency average` in ms (per transaction, as its clients saw it).
pub async fn select_only_latency(url: &str, clients: usize, secs: u32) -> Result<(f64, f64)> {
    let bin = binary();
    let (c, t) = (clients.to_string(), secs.to_string());
    let out = tokio::process::Command::new(&bin)
        .args(["-S", "-c", &c, "-j", "2", "-T", &t, url])
        .output()
        .await
        .with_context(|| format!("running {}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "pgbench failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let number_after = |prefix: &str| {
        stdout.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(prefix)?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
    };
    let tps = number_after("tps = ")
        .ok_or_else(|| anyhow!("no `tps = ` line in pgbench output:\n{stdout}"))?;
    let latency = number_after("latency average = ").unwrap_or(f64::NAN);
    Ok((tps, latency))
}
