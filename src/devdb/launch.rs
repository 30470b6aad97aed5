//! Running `initdb` and launching `postgres` until it accepts connections.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{Connection, PgConnection};

use super::account::RunAs;
use super::process::{self, Supervised, live_server_pid};
use super::{DevDbError, PgBinaries, SUPERUSER};

/// How to run the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StartOptions {
    /// Throw-away data (tests): `initdb --no-sync`, `fsync=off`, `synchronous_commit=off`,
    /// `full_page_writes=off`. Never for data you want to keep across a crash.
    pub ephemeral: bool,
}

const READY_TIMEOUT: Duration = Duration::from_secs(30);

pub(super) async fn initdb(
    bins: &PgBinaries,
    data_dir: &Path,
    user: Option<&RunAs>,
    options: StartOptions,
) -> Result<(), DevDbError> {
    let not_empty = std::fs::read_dir(data_dir)
        .map_err(|e| DevDbError::io("read", data_dir, e))?
        .next()
        .is_some();
    if not_empty {
        return Err(DevDbError::NotADataDir {
            data_dir: data_dir.to_path_buf(),
        });
    }
    let mut cmd = process::command(&bins.initdb(), user, data_dir);
    cmd.arg("-D").arg(data_dir).args([
        "-U",
        SUPERUSER,
        "--auth=trust",
        "--encoding=UTF8",
        "--no-locale",
    ]);
    if options.ephemeral {
        cmd.arg("--no-sync");
    }
    tracing::info!(data_dir = %data_dir.display(), "running initdb");
    let out = tokio::process::Command::from(cmd)
        .output()
        .await
        .map_err(|e| DevDbError::io("run", bins.initdb(), e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(DevDbError::Initdb {
        data_dir: data_dir.to_path_buf(),
        status: out.status.to_string(),
        output: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

pub(super) enum Launch {
    /// The port was taken between picking and binding it: try another one.
    PortClash(DevDbError),
    Failed(DevDbError),
}

pub(super) async fn launch(
    bins: &PgBinaries,
    data_dir: &Path,
    log_path: &Path,
    port: u16,
    user: Option<&RunAs>,
    options: StartOptions,
) -> Result<Supervised, Launch> {
    let failed = Launch::Failed;
    let offset = std::fs::metadata(log_path).map_or(0, |m| m.len());
    append_log(
        log_path,
        user,
        &format!("kineticd: starting postgres on 127.0.0.1:{port}"),
    )
    .map_err(failed)?;
    let log = open_log(log_path, user).map_err(failed)?;
    let log_err = log
        .try_clone()
        .map_err(|e| failed(DevDbError::io("open", log_path, e)))?;
    let mut cmd = process::command(&bins.postgres(), user, data_dir);
    cmd.arg("-D").arg(data_dir).arg("-p").arg(port.to_string());
    let mut settings = vec![
        "listen_addresses=127.0.0.1",
        "unix_socket_directories=",
        "max_connections=300",
        "shared_buffers=128MB",
    ];
    if options.ephemeral {
        settings.extend([
            "fsync=off",
            "synchronous_commit=off",
            "full_page_writes=off",
        ]);
    }
    for setting in settings {
        cmd.arg("-c").arg(setting);
    }
    cmd.stdout(log).stderr(log_err);
    let child =
        Supervised::spawn(cmd).map_err(|e| failed(DevDbError::io("run", bins.postgres(), e)))?;
    let Err(reason) = wait_ready(&child, port, data_dir).await else {
        return Ok(child);
    };
    // Not ready: make sure it is gone before reporting (or retrying).
    for sig in [libc::SIGQUIT, libc::SIGKILL] {
        child.signal(sig);
        if child.wait(Duration::from_secs(5)).await {
            break;
        }
    }
    let log_tail = log_tail(log_path, offset);
    if let Some(pid) = live_server_pid(data_dir) {
        return Err(failed(DevDbError::InUse {
            data_dir: data_dir.to_path_buf(),
            pid,
        }));
    }
    let clash = log_tail.contains("could not bind") || log_tail.contains("Address already in use");
    let err = DevDbError::StartFailed {
        reason,
        log: log_path.to_path_buf(),
        log_tail,
    };
    Err(if clash {
        Launch::PortClash(err)
    } else {
        failed(err)
    })
}

/// Polls until the server on `port` answers and is ours (same data folder).
async fn wait_ready(child: &Supervised, port: u16, data_dir: &Path) -> Result<(), String> {
    let deadline = Instant::now() + READY_TIMEOUT;
    let options = connect_options(port, "postgres");
    loop {
        if let Some(status) = child.exit_status() {
            return Err(format!("postgres exited ({status})"));
        }
        let attempt =
            tokio::time::timeout(Duration::from_secs(5), PgConnection::connect_with(&options))
                .await;
        let last_error = match attempt {
            Ok(Ok(mut conn)) => {
                let dir: Result<String, _> =
                    sqlx::query_scalar("SELECT current_setting('data_directory')")
                        .fetch_one(&mut conn)
                        .await;
                let _ = conn.close().await;
                match dir {
                    Ok(dir) if same_file(Path::new(&dir), data_dir) => return Ok(()),
                    Ok(dir) => {
                        return Err(format!(
                            "port {port} is served by another PostgreSQL server (data folder {dir})"
                        ));
                    }
                    Err(e) => e.to_string(),
                }
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => "connection attempt timed out".into(),
        };
        if Instant::now() >= deadline {
            return Err(format!(
                "it did not accept connections on 127.0.0.1:{port} within {} s (last error: \
                 {last_error})",
                READY_TIMEOUT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) fn connect_options(port: u16, database: &str) -> PgConnectOptions {
    PgConnectOptions::new_without_pgpass()
        .host("127.0.0.1")
        .port(port)
        .username(SUPERUSER)
        .database(database)
        .ssl_mode(PgSslMode::Disable)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// A port the kernel just handed out on 127.0.0.1 (free now; `launch` retries on a race).
pub(super) fn free_port() -> Result<u16, DevDbError> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|e| DevDbError::io("bind a free port on", "127.0.0.1", e))
}

pub(super) fn open_log(path: &Path, user: Option<&RunAs>) -> Result<std::fs::File, DevDbError> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| DevDbError::io("open", path, e))?;
    if let Some(user) = user {
        std::os::unix::fs::fchown(&file, Some(user.uid), Some(user.gid))
            .map_err(|e| DevDbError::io("change the owner of", path, e))?;
    }
    Ok(file)
}

pub(super) fn append_log(path: &Path, user: Option<&RunAs>, line: &str) -> Result<(), DevDbError> {
    let now = chrono::Utc::now().format("%Y-%m-%d %H:%M:%S%.3f UTC");
    open_log(path, user)?
        .write_all(format!("{now} {line}\n").as_bytes())
        .map_err(|e| DevDbError::io("write", path, e))
}

/// The last 30 lines written to the log since byte `offset`.
fn log_tail(path: &Path, offset: u64) -> String {
    let Ok(bytes) = std::fs::read(path) else {
        return String::from("(log unreadable)");
    };
    let start = usize::try_from(offset).unwrap_or(0).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..]);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
