//! pgbench TPC-B on the same server, as the yardstick for the engine's step commits:
//! each is one small write transaction, so the ratio step commits/s ÷ tps shows what the
//! engine adds on top of the database.

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use kineticd::devdb::PgBinaries;

use crate::cpu::Sample;
use crate::server::Server;

pub const SECONDS: u32 = 15;

pub struct PgBench {
    pub tps: f64,
    /// CPU microseconds per transaction: pgbench itself, and the server.
    pub client_us: f64,
    pub pg_us: Option<f64>,
    /// CPUs kept busy by other processes meanwhile.
    pub others_cpus: Option<f64>,
}

/// The pgbench of the server's own binaries, else the one on `PATH`.
fn binary() -> PathBuf {
    PgBinaries::locate()
        .map(|b| b.bin_dir.join("pgbench"))
        .ok()
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("pgbench"))
}

pub async fn run(server: &Server) -> Result<PgBench> {
    let bin = binary();
    let url = server.url(&server.create_db("pgbench").await?);
    crate::support::pgbench_init(&bin, 4, &url).await?;
    let secs = SECONDS.to_string();
    let cpu0 = Sample::now(server);
    let out = tokio::process::Command::new(&bin)
        .args(["-c", "4", "-j", "2", "-T", &secs, "-M", "prepared", &url])
        .output()
        .await?;
    let cpu = cpu0.until(&Sample::now(server));
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "pgbench failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tps = stdout
        .lines()
        .find_map(|l| {
            let rest = l.trim().strip_prefix("tps = ")?;
            rest.split_whitespace().next()?.parse::<f64>().ok()
        })
        .ok_or_else(|| anyhow!("no `tps = ` line in pgbench output:\n{stdout}"))?;
    let per_tx_us = |cpu_s: f64| cpu_s / (tps * f64::from(SECONDS)) * 1e6;
    let b = PgBench {
        tps,
        client_us: per_tx_us(cpu.children),
        pg_us: cpu.server.map(per_tx_us),
        others_cpus: cpu.others_cpus(f64::from(SECONDS)),
    };
    println!(
        "  {}: {tps:.1} tps; CPU: pgbench {:.2} s ({:.0} us/tx), PostgreSQL {}",
        bin.display(),
        cpu.children,
        b.client_us,
        cpu.server.map_or("n/a".into(), |c| format!(
            "{c:.2} s ({:.0} us/tx)",
            per_tx_us(c)
        )),
    );
    Ok(b)
}
