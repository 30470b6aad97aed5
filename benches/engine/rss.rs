//! Idle resident memory of the real binary: `kineticd serve` with 8 workers and the NOOP
//! workflow, measured 3 s after `/readyz` answers.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};

use crate::server::Server;

pub struct Rss {
    pub rss_mb: f64,
    pub anon_mb: f64,
}

/// Our child `kineticd`, killed and reaped when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            // SAFETY: kill(2) on our own child, not reaped yet (its pid cannot be reused).
            unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.0.wait();
    }
}

/// A `kB` field of `/proc/<pid>/status`, e.g. `VmRSS:`.
fn status_kb(pid: u32, field: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .ok_or_else(|| anyhow!("{field} not in /proc/{pid}/status"))?;
    line.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("bad {field} line: {line}"))
}

pub async fn run(server: &Server) -> Result<Rss> {
    let url = server.url(&server.create_kineticd_db("rss").await?);
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut p = Process(
        Command::new(env!("CARGO_BIN_EXE_kineticd"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env("DATABASE_URL", &url)
            .env("KINETIC_AUTH", "dev")
            .env("KINETIC_TEST_WORKFLOWS", "true")
            .env("KINETIC_WORKERS", "8")
            .env("KINETIC_LOG_FORMAT", "json")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting kineticd")?,
    );
    let http = kineticd::app::http_client()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = p.0.try_wait()? {
            bail!("kineticd exited before ready: {status}");
        }
        if let Ok(r) = http
            .get(format!("http://127.0.0.1:{port}/readyz"))
            .send()
            .await
            && r.status().is_success()
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("kineticd not ready within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pid = p.0.id();
    let r = Rss {
        rss_mb: status_kb(pid, "VmRSS:")? / 1024.0,
        anon_mb: status_kb(pid, "RssAnon:")? / 1024.0,
    };
    println!(
        "  pid {pid}: VmRSS {:.1} MB (anonymous {:.1} MB), {} threads, binary {}",
        r.rss_mb,
        r.anon_mb,
        status_kb(pid, "Threads:")?,
        env!("CARGO_BIN_EXE_kineticd")
    );
    // SAFETY: our own live child.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    let stop = Instant::now() + Duration::from_secs(10);
    while p.0.try_wait()?.is_none() && Instant::now() < stop {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(r)
}
