//! `kineticd serve` as a child process of a bench (so its memory and CPU time are its own
//! and can be read from `/proc/<pid>`), optionally pinned to one CPU, killed when dropped.
//!
//! Invariant: the child gets a cleared environment (PATH, then only what the bench
//! passes), dev identity on loopback, and dies with the bench (PR_SET_PDEATHSIG).

#![allow(dead_code)]

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// A running `kineticd serve`.
pub struct Serve {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Serve {
    /// `kineticd serve --listen 127.0.0.1:PORT` on `db_url` with `env`, on CPU `cpu` only
    /// when given; returns once `/healthz` answers 200. `name` tells its log apart.
    pub async fn start(
        name: &str,
        db_url: &str,
        env: &[(&str, String)],
        cpu: Option<usize>,
        http: &reqwest::Client,
    ) -> Result<Serve> {
        Self::start_with(name, &[], db_url, env, cpu, http).await
    }

    /// [`Serve::start`] with `flags` after `serve` (e.g. `--dev`).
    pub async fn start_with(
        name: &str,
        flags: &[&str],
        db_url: &str,
        env: &[(&str, String)],
        cpu: Option<usize>,
        http: &reqwest::Client,
    ) -> Result<Serve> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log =
            std::env::temp_dir().join(format!("kineticd-bench-{name}-{}.log", std::process::id()));
        let out = File::create(&log)?;
        let mut cmd = Command::new(kineticd_binary());
        pin(&mut cmd, cpu);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .arg("serve")
            .args(flags)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATABASE_URL", db_url)
            .env("KINETIC_AUTH", "dev")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("start kineticd serve")?;
        let mut s = Serve { child, port, log };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if s.child.try_wait()?.is_some() {
                bail!("kineticd serve ({name}) exited; log: {}", s.log.display());
            }
            if let Ok(r) = http.get(s.url("/healthz")).send().await
                && r.status().is_success()
            {
                return Ok(s);
            }
            if Instant::now() > deadline {
                bail!(
                    "kineticd serve ({name}) not healthy in 60 s; log: {}",
                    s.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `(VmRSS, VmHWM)` in MiB from `/proc/<pid>/status`.
    pub fn memory_mib(&self) -> Result<(f64, f64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        let kib = |key: &str| -> Result<f64> {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                .with_context(|| format!("no {key} in /proc/{}/status", self.pid()))
        };
        Ok((kib("VmRSS:")? / 1024.0, kib("VmHWM:")? / 1024.0))
    }

    /// Open file descriptors of the process (its sockets, mostly).
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `kineticd` binary a bench runs: `KBENCH_KINETICD` when set (an older build, to
/// compare before and after in one session), else the one cargo built with the bench.
pub fn kineticd_binary() -> std::ffi::OsString {
    std::env::var_os("KBENCH_KINETICD")
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_kineticd").into())
}

/// Run `cmd` only on `cpu` (sched_setaffinity in the child before exec).
pub fn pin(cmd: &mut Command, cpu: Option<usize>) {
    let Some(cpu) = cpu else { return };
    // SAFETY: sched_setaffinity on the calling (child) process touches only its mask.
    unsafe {
        cmd.pre_exec(move || {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
