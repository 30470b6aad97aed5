//! The real `kineticd serve --dev` binary as a child process, for the tests that drive it
//! from outside (a shell script, a generated client, signals): ephemeral ports for the
//! API and the simulator, a private data folder, everything it prints kept for failure
//! messages. Dropping it kills the process and removes the data folder.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the server may take to print its URLs (a private PostgreSQL may start first).
const STARTUP: Duration = Duration::from_secs(90);

pub struct DevServer {
    child: Child,
    data: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
    /// Base URL of the kineticd API.
    pub api: String,
    /// Base URL of the built-in cloud simulator.
    pub sim: String,
}

impl DevServer {
    /// Starts `serve --dev` with a data folder named after `label`; `env` adds to or
    /// removes from the environment (`DATABASE_URL`, `KINETIC_SIM_SPEED`, ...). Returns
    /// once the server has printed both URLs.
    pub fn start(label: &str, env: impl FnOnce(&mut Command)) -> DevServer {
        let data = std::env::temp_dir().join(format!("kineticd-{label}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kineticd"));
        cmd.args([
            "serve",
            "--dev",
            "--listen",
            "127.0.0.1:0",
            "--sim-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(&data)
        .env("KINETIC_LOG_FORMAT", "json")
        .env_remove("KINETIC_GCP_URL")
        .env_remove("KINETIC_LISTEN")
        .env_remove("KINETIC_AUTH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        env(&mut cmd);
        let mut child = cmd.spawn().expect("start kineticd serve --dev");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        collect(child.stdout.take().expect("stdout"), log.clone(), Some(tx));
        collect(child.stderr.take().expect("stderr"), log.clone(), None);
        let mut server = DevServer {
            child,
            data,
            log,
            api: String::new(),
            sim: String::new(),
        };
        let deadline = Instant::now() + STARTUP;
        while server.api.is_empty() || server.sim.is_empty() {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .unwrap_or_else(|_| {
                    panic!(
                        "serve --dev did not print its URLs:\n{}",
                        server.log_tail(40)
                    )
                });
            if let Some(url) = url_after(&line, "kineticd API:") {
                server.api = url;
            }
            if let Some(url) = url_after(&line, "cloud simulator:") {
                server.sim = url;
            }
        }
        server
    }

    /// The server process (to signal it or wait for it).
    pub fn child(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The data folder given with `--data-dir`.
    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The last `n` lines the server printed (stdout and stderr).
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log.lock().unwrap();
        log[log.len().saturating_sub(n)..].join("\n")
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}

/// Copies every line of `out` into `log` (and to `tx`, when given) on a thread of its own.
fn collect(
    out: impl Read + Send + 'static,
    log: Arc<Mutex<Vec<String>>>,
    tx: Option<std::sync::mpsc::Sender<String>>,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            log.lock().unwrap().push(line.clone());
            if let Some(tx) = &tx {
                let _ = tx.send(line);
            }
        }
    });
}

/// The URL printed after `label` on a line that starts with it.
fn url_after(line: &str, label: &str) -> Option<String> {
    let rest = line.strip_prefix(label)?.trim();
    Some(rest.split_whitespace().next()?.to_owned())
}
