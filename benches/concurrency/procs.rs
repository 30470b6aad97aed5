//! The processes of the concurrency bench: a standalone `kineticd sim` (the replicas'
//! shared cloud) and what `/proc` tells about a process (RSS, CPU time).
//!
//! Invariant: every child dies with the bench (killed on drop, PR_SET_PDEATHSIG).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

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
        let out = child.stdout.take().context("sim stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut env = Vec::new();
        loop {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .context("kineticd sim did not say where it listens within 60 s")?;
            if let Some((k, v)) = line
                .strip_prefix("export ")
                .and_then(|kv| kv.split_once('='))
            {
                env.push((k.to_owned(), v.to_owned()));
            }
            if line.starts_with("# kineticd simulator listening on ") {
                break;
            }
        }
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
