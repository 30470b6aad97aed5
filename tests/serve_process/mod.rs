//! The real `kineticd` binary as a child process of a test: `kineticd serve` in
//! production mode (environment cleared, then only what the test passes) and
//! `kineticd sim`, both killed when dropped and when the test process dies.
#![allow(dead_code)]

use std::fs::File;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub mod chaos;
pub mod journal;
pub mod lines;

/// A log file in the temporary folder, named after the test and this process.
pub struct LogPath(pub PathBuf);

impl LogPath {
    pub fn temp(name: &str) -> (LogPath, File) {
        let path = std::env::temp_dir().join(format!(
            "kineticd-{name}-{}-{}.log",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let file = File::create(&path).expect("create log file");
        (LogPath(path), file)
    }

    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl std::fmt::Display for LogPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.display())
    }
}

pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// `kineticd ARGS` with an empty environment (PATH only): SIGKILLed if this test
/// process dies without unwinding. (The signal follows the spawning thread: a runtime
/// worker, alive as long as the test.)
pub fn kineticd(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kineticd"));
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null());
    cmd
}

/// A child process, SIGKILLed and reaped when dropped (also on panic).
pub struct Killed(pub Child);

impl Killed {
    /// SIGKILL: no graceful shutdown, nothing handed back.
    pub fn kill(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let pid = self.0.id() as libc::pid_t;
            // SAFETY: kill(2) on our own, not yet reaped child: the pid cannot be reused.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        let _ = self.0.wait();
    }

    pub fn exited(&mut self) -> bool {
        self.0.try_wait().expect("try_wait").is_some()
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A running `kineticd serve` on a free port, its output in `log`.
pub struct Server {
    pub child: Killed,
    pub port: u16,
}

impl Server {
    /// `kineticd serve` with DATABASE_URL, `KINETIC_AUTH=dev` (loopback) and `env`.
    pub fn start(db_url: &str, log: &File, env: &[(&str, String)]) -> Server {
        let port = free_port();
        let child = kineticd(&["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env("DATABASE_URL", db_url)
            .env("KINETIC_AUTH", "dev")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .stdout(log.try_clone().expect("log file"))
            .stderr(log.try_clone().expect("log file"))
            .spawn()
            .expect("start kineticd serve");
        Server {
            child: Killed(child),
            port,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The Prometheus text of `/metrics`.
    pub async fn scrape(&self, http: &reqwest::Client) -> String {
        let resp = http.get(self.url("/metrics")).send().await.expect("scrape");
        resp.text().await.expect("metrics text")
    }

    /// Start and wait until `/healthz` answers 200 (the API and the worker pool are up).
    /// A process that exits first (e.g. its port was taken between our probe and its
    /// bind) is retried on another port.
    pub async fn start_healthy(
        db_url: &str,
        log: &File,
        log_path: &LogPath,
        http: &reqwest::Client,
        env: &[(&str, String)],
    ) -> Server {
        for _ in 0..3 {
            let mut s = Server::start(db_url, log, env);
            if s.wait_healthy(http, log_path).await {
                return s;
            }
        }
        panic!("kineticd exited before it was healthy, 3 times; log: {log_path}");
    }

    /// True once healthy; false if the process exited first.
    async fn wait_healthy(&mut self, http: &reqwest::Client, log: &LogPath) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.child.exited() {
                return false;
            }
            if let Ok(r) = http.get(self.url("/healthz")).send().await
                && r.status().is_success()
            {
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "kineticd not healthy within 60 s; log: {log}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn kill(&mut self) {
        self.child.kill();
    }

    /// The process id (part of every lease it takes: `host:PID:uuid/worker`).
    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// SIGTERM: the graceful shutdown a rolling upgrade starts with.
    pub fn terminate(&mut self) {
        if !self.child.exited() {
            let pid = self.pid() as libc::pid_t;
            // SAFETY: kill(2) on our own, not yet reaped child: the pid cannot be reused.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
    }

    /// Its exit status, once it has exited.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.0.try_wait().expect("try_wait")
    }
}

/// A running `kineticd sim` and everything it printed before it was ready.
pub struct SimProcess {
    pub child: Killed,
    /// Every line of its standard output up to its "listening" line.
    pub printed: Vec<String>,
    /// The rest of its output, as it comes.
    pub rest: std::sync::mpsc::Receiver<String>,
}

impl SimProcess {
    /// `kineticd sim --listen 127.0.0.1:0 ARGS`; returns once it printed where it listens
    /// (deadline 60 s).
    pub fn start(args: &[&str]) -> SimProcess {
        let mut all = vec!["sim", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = kineticd(&all)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kineticd sim");
        let rx = lines::line_channel(child.stdout.take().expect("stdout"));
        let child = Killed(child);
        let printed = lines::lines_until(&rx, lines::SIM_LISTENING, Duration::from_secs(60))
            .unwrap_or_else(|printed| {
                panic!("kineticd sim did not say it listens within 60 s: {printed:#?}")
            });
        SimProcess {
            child,
            printed,
            rest: rx,
        }
    }

    /// The `export KEY=value` lines it printed, as (KEY, value).
    fn export_lines(&self) -> impl Iterator<Item = (&str, &str)> {
        self.printed
            .iter()
            .filter_map(|l| l.strip_prefix("export "))
            .filter_map(|kv| kv.split_once('='))
    }

    /// The `export KEY=value` lines it printed, as (KEY, value).
    pub fn exports(&self) -> Vec<(String, String)> {
        self.export_lines()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// What it printed, as the environment of [`Server::start`].
    pub fn serve_env(&self) -> Vec<(&str, String)> {
        self.export_lines()
            .map(|(k, v)| (k, v.to_owned()))
            .collect()
    }

    /// Its base URL (`KINETIC_GCP_URL`), where `/sim/v1/journal` is.
    pub fn url(&self) -> String {
        self.export_lines()
            .find_map(|(k, v)| (k == "KINETIC_GCP_URL").then(|| v.to_owned()))
            .unwrap_or_else(|| {
                panic!(
                    "kineticd sim printed no KINETIC_GCP_URL: {:#?}",
                    self.printed
                )
            })
    }
}
