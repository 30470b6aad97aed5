//! [`PrivatePostgres`]: the public face of the private server.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::{Connection, PgConnection};

use super::account;
pub use super::launch::StartOptions;
use super::launch::{Launch, append_log, connect_options, free_port, initdb, launch};
use super::process::{Supervised, live_server_pid, pid_running};
use super::{DevDbError, PgBinaries, SUPERUSER};

/// Server output (and our own start-up notes) inside the data folder.
pub const LOG_FILE: &str = "server.log";
/// Line appended to [`LOG_FILE`] after `initdb` created the cluster.
pub const INITDB_MARKER: &str = "kineticd: initdb created this data folder";

const STOP_TIMEOUT: Duration = Duration::from_secs(60);
const PORT_ATTEMPTS: u32 = 5;

/// A PostgreSQL server we started; it never outlives this process (see the module docs).
#[derive(Debug)]
pub struct PrivatePostgres {
    child: Supervised,
    port: u16,
    data_dir: PathBuf,
    log_path: PathBuf,
    ran_initdb: bool,
    remove_on_stop: bool,
    options: StartOptions,
}

/// How [`PrivatePostgres::halt`] stops the server (PostgreSQL's shutdown modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    /// SIGINT (`pg_ctl stop -m fast`): every client is sent FATAL 57P01 and disconnected,
    /// a checkpoint is written, the server exits.
    Fast,
    /// SIGQUIT (`pg_ctl stop -m immediate`): every process exits at once, no checkpoint
    /// (the next start recovers from the WAL, as after a crash).
    Immediate,
}

impl PrivatePostgres {
    /// Durable server on `data_dir` (created and `initdb`-ed when absent or empty), on a free
    /// loopback port; returns once it accepts connections (or fails after ~30 s, quoting
    /// the tail of the server log).
    pub async fn start(data_dir: &Path) -> Result<PrivatePostgres, DevDbError> {
        Self::start_with(data_dir, StartOptions::default()).await
    }

    /// Like [`PrivatePostgres::start`] with [`StartOptions::ephemeral`] (fast, not crash-safe).
    pub async fn start_ephemeral(data_dir: &Path) -> Result<PrivatePostgres, DevDbError> {
        Self::start_with(data_dir, StartOptions { ephemeral: true }).await
    }

    /// Ephemeral server in a fresh folder under `$TMPDIR/kineticd-pg-tmp-<euid>`, removed by
    /// [`PrivatePostgres::stop`]. Folders left by dead processes (whose servers died with
    /// them) are swept on the next call.
    pub async fn start_temporary() -> Result<PrivatePostgres, DevDbError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        // SAFETY: geteuid has no preconditions and cannot fail.
        let euid = unsafe { libc::geteuid() };
        let base = std::env::temp_dir().join(format!("kineticd-pg-tmp-{euid}"));
        account::ensure_owned_dir(&base)?;
        sweep_dead(&base);
        let name = format!(
            "{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let dir = base.join(name);
        match Self::start_ephemeral(&dir).await {
            Ok(mut pg) => {
                pg.remove_on_stop = true;
                Ok(pg)
            }
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    pub async fn start_with(
        data_dir: &Path,
        options: StartOptions,
    ) -> Result<PrivatePostgres, DevDbError> {
        let bins = PgBinaries::locate()?;
        let user = account::run_as()?;
        let user = user.as_ref();
        let data_dir = account::prepare_data_dir(data_dir, user)?;
        if let Some(pid) = live_server_pid(&data_dir) {
            return Err(DevDbError::InUse { data_dir, pid });
        }
        let log_path = data_dir.join(LOG_FILE);
        let ran_initdb = !data_dir.join("PG_VERSION").is_file();
        if ran_initdb {
            initdb(&bins, &data_dir, user, options).await?;
            append_log(&log_path, user, INITDB_MARKER)?;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let port = free_port()?;
            match launch(&bins, &data_dir, &log_path, port, user, options).await {
                Ok(child) => {
                    tracing::info!(
                        port,
                        pid = child.pid(),
                        data_dir = %data_dir.display(),
                        ran_initdb,
                        "private PostgreSQL server started"
                    );
                    return Ok(PrivatePostgres {
                        child,
                        port,
                        data_dir,
                        log_path,
                        ran_initdb,
                        remove_on_stop: false,
                        options,
                    });
                }
                Err(Launch::PortClash(e)) if attempt < PORT_ATTEMPTS => {
                    tracing::debug!(port, error = %e, "port taken meanwhile; retrying");
                }
                Err(Launch::PortClash(e) | Launch::Failed(e)) => return Err(e),
            }
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Connection URL for `database` as the trusted superuser, e.g.
    /// `postgres://kineticd@127.0.0.1:PORT/kineticd`.
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}@127.0.0.1:{}/{}",
            self.port,
            percent_encode(database)
        )
    }

    /// The data folder actually used (the requested one made absolute, or its fallback
    /// under `/var/tmp/kineticd-pg` when running as root).
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Pid of the postmaster.
    pub fn pid(&self) -> u32 {
        self.child.pid()
    }

    /// Whether this start created the cluster (false when an existing one was reused).
    pub fn ran_initdb(&self) -> bool {
        self.ran_initdb
    }

    /// Creates database `name` unless it exists (safe against concurrent callers).
    pub async fn ensure_database(&self, name: &str) -> Result<(), DevDbError> {
        let sql = |action: &str| {
            let action = format!("{action} database `{name}`");
            move |source| DevDbError::Sql { action, source }
        };
        let mut conn = PgConnection::connect_with(&connect_options(self.port, "postgres"))
            .await
            .map_err(sql("connect to create"))?;
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(name)
                .fetch_one(&mut conn)
                .await
                .map_err(sql("look up"))?;
        if !exists {
            let create = format!("CREATE DATABASE \"{}\"", name.replace('"', "\"\""));
            match sqlx::query(sqlx::AssertSqlSafe(create))
                .execute(&mut conn)
                .await
            {
                Ok(_) => tracing::info!(database = name, "created database"),
                // duplicate_database / unique_violation: someone else created it first.
                Err(e) if matches!(sql_state(&e).as_deref(), Some("42P04" | "23505")) => {}
                Err(e) => return Err(sql("create")(e)),
            }
        }
        let _ = conn.close().await;
        Ok(())
    }

    /// Stops the server as `mode` says and waits for it to exit, keeping its data folder
    /// and port for [`PrivatePostgres::restart`] (a database outage, for fault tests).
    pub async fn halt(&mut self, mode: Halt) -> Result<(), DevDbError> {
        if mode == Halt::Immediate && !self.child.has_exited() {
            self.child.signal(libc::SIGQUIT);
            self.child.wait(Duration::from_secs(5)).await;
        }
        self.shut_down().await
    }

    /// Starts the server again on the same data folder and port after
    /// [`PrivatePostgres::halt`] (or after it died); returns once it accepts connections.
    /// Fails if the port was taken meanwhile (the server cannot move: clients know it).
    pub async fn restart(&mut self) -> Result<(), DevDbError> {
        if !self.child.has_exited() {
            self.shut_down().await?;
        }
        let bins = PgBinaries::locate()?;
        let user = account::run_as()?;
        let launched = launch(
            &bins,
            &self.data_dir,
            &self.log_path,
            self.port,
            user.as_ref(),
            self.options,
        )
        .await;
        self.child = match launched {
            Ok(child) => child,
            Err(Launch::PortClash(e) | Launch::Failed(e)) => return Err(e),
        };
        tracing::info!(
            port = self.port,
            pid = self.pid(),
            "private PostgreSQL server restarted"
        );
        Ok(())
    }

    /// Fast shutdown (SIGINT: disconnect clients, checkpoint, exit) and wait for the exit;
    /// escalates to SIGQUIT then SIGKILL if it takes longer than a minute.
    pub async fn stop(mut self) -> Result<(), DevDbError> {
        self.shut_down().await?;
        if self.remove_on_stop {
            std::fs::remove_dir_all(&self.data_dir)
                .map_err(|e| DevDbError::io("remove", self.data_dir.clone(), e))?;
        }
        Ok(())
    }

    async fn shut_down(&mut self) -> Result<(), DevDbError> {
        let steps = [
            (libc::SIGINT, STOP_TIMEOUT),
            (libc::SIGQUIT, Duration::from_secs(5)),
            (libc::SIGKILL, Duration::from_secs(5)),
        ];
        for (sig, timeout) in steps {
            if self.child.has_exited() {
                break;
            }
            self.child.signal(sig);
            if self.child.wait(timeout).await {
                break;
            }
            tracing::warn!(
                pid = self.pid(),
                sig,
                "PostgreSQL server did not stop in time"
            );
        }
        if !self.child.has_exited() {
            let err = std::io::Error::from(std::io::ErrorKind::TimedOut);
            return Err(DevDbError::io(
                "stop the server of",
                self.data_dir.clone(),
                err,
            ));
        }
        tracing::info!(data_dir = %self.data_dir.display(), "private PostgreSQL server stopped");
        Ok(())
    }
}

impl Drop for PrivatePostgres {
    /// Asks for a fast shutdown and waits briefly; the parent-death signal covers the rest.
    fn drop(&mut self) {
        if !self.child.has_exited() {
            self.child.signal(libc::SIGINT);
            self.child.wait_blocking(Duration::from_secs(2));
        }
    }
}

fn sql_state(e: &sqlx::Error) -> Option<String> {
    e.as_database_error()?.code().map(|c| c.into_owned())
}

/// Removes `<base>/<pid>-<n>` folders whose process is gone (their servers died with it).
fn sweep_dead(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid_running(pid) || live_server_pid(&entry.path()).is_some() {
            continue;
        }
        if let Err(e) = std::fs::remove_dir_all(entry.path()) {
            tracing::debug!(path = %entry.path().display(), error = %e, "could not sweep");
        }
    }
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
