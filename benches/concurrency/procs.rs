//! The processes of the concurrency bench: a standalone `kineticd sim` (the replicas'
//! shared cloud) and what `/proc` tells about a process (RSS, CPU time).
//!
//! Invariant: every child dies with the bench (killed on drop, PR_SET_PDEATHSIG).

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

#[path = "../../tests/serve_process/lines.rs"]
mod lines;

/// `kineticd sim --listen 127.0.0.1:0 --speed SPEED`, and the environment it printed for
/// `kineticd serve`.
pub struct SimProcess {
    child: Child,
    pub env: Vec<(String, String)>,
}

impl SimProcess {
    pub fn start(speed: f64) -> Result<SimProcess> {
        let mut cmd = Command::new(crate::serve::kineticd_binary());
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = cmd
            .args([
                "sim",
                "--listen",
                "127.0.0.1:0",
                "--speed",
                &speed.to_string(),
            ])
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("start kineticd sim")?;
        let rx = lines::line_channel(child.stdout.take().context("sim stdout")?);
        let printed = lines::lines_until(&rx, lines::SIM_LISTENING, Duration::from_secs(60))
            .map_err(|_| anyhow!("kineticd sim did not say where it listens within 60 s"))?;
        let env: Vec<(String, String)> = printed
            .iter()
            .filter_map(|l| l.strip_prefix("export ")?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        if env.is_empty() {
            bail!("kineticd sim printed no environment");
        }
        Ok(SimProcess { child, env })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmRSS of `pid` in MiB (0 when unreadable).
pub fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// CPU seconds (user + system) `pid` has used.
pub fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // Fields after the command's closing parenthesis; utime and stime are 14 and 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz.max(1.0)
}
