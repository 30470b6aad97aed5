//! A private PostgreSQL server started from the locally installed server binaries.
//!
//! Used by `kineticd serve --dev` when `DATABASE_URL` is unset (persistent data folder
//! `.kineticd/pg`, reused across runs) and by the integration-test harness (a temporary,
//! `fsync=off` data folder, one server per test process).
//!
//! Invariants:
//! - **A server we start never outlives us.** The postmaster is spawned from a dedicated,
//!   long-lived thread with `PR_SET_PDEATHSIG = SIGQUIT` (Linux), so it shuts down
//!   immediately when our process dies for any reason, SIGKILL included, even if
//!   [`PrivatePostgres::stop`] is never called (e.g. a server kept in a `static OnceLock`).
//!   [`PrivatePostgres`]'s `Drop` additionally asks for a fast shutdown.
//! - **Root is handled.** `initdb` and `postgres` refuse to run as root, so when our
//!   effective uid is 0 they run as the `postgres` system user (else `nobody`), the data
//!   folder is owned by that user, and if that user cannot reach the requested folder
//!   (e.g. a checkout under `/root`, mode 0700) the folder moves to
//!   `/var/tmp/kineticd-pg/<hash of the requested path>` (logged with `tracing::warn!`).
//! - The server listens on a free loopback TCP port only (`127.0.0.1`, no unix socket),
//!   with `trust` authentication for the superuser role `kineticd`: it is a development
//!   database, reachable by local users only, never a production one.
//! - Server output goes to `server.log` inside the data folder; start-up errors quote it.

mod account;
mod binaries;
mod launch;
mod process;
mod server;

use std::path::PathBuf;

pub use account::FALLBACK_BASE;
pub use binaries::DEFAULT_SEARCH_ROOT;
pub use binaries::PgBinaries;
pub use server::{Halt, INITDB_MARKER, LOG_FILE, PrivatePostgres, StartOptions};

/// Name of the superuser role created by `initdb -U` (and used in [`PrivatePostgres::url`]).
pub const SUPERUSER: &str = "kineticd";

/// Errors from locating, initialising, starting or stopping the private server.
///
/// Every message says what went wrong and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum DevDbError {
    #[error(
        "PostgreSQL server binaries (initdb, postgres) not found on PATH or under {}/*/bin: \
         install them (Debian/Ubuntu: `apt-get install postgresql`; macOS: \
         `brew install postgresql@16`) or set DATABASE_URL to an existing server",
        search_root.display()
    )]
    NoBinaries { search_root: PathBuf },

    #[error(
        "running as root, but neither a `postgres` nor a `nobody` system user exists to run \
         the PostgreSQL server as (initdb and postgres refuse to run as root): create one \
         (e.g. `useradd --system postgres`), run kineticd as a non-root user, or set \
         DATABASE_URL to an existing server"
    )]
    NoUnprivilegedUser,

    #[error(
        "the data folder {} is already in use by a running PostgreSQL server (pid {pid}): \
         stop that process (e.g. another `kineticd serve --dev`) or use another data folder",
        data_dir.display()
    )]
    InUse { data_dir: PathBuf, pid: u32 },

    #[error(
        "{} is not empty but is not a PostgreSQL data folder (no PG_VERSION file): remove it \
         or choose another folder",
        data_dir.display()
    )]
    NotADataDir { data_dir: PathBuf },

    #[error(
        "{} must be a directory owned by uid {uid} (and not a symlink): remove it and retry",
        path.display()
    )]
    UnsafeDirectory { path: PathBuf, uid: u32 },

    #[error(
        "user `{user}` cannot reach the data folder {}: make its parent directories \
         traversable (chmod o+x) or choose a data folder elsewhere",
        data_dir.display()
    )]
    Unreachable { data_dir: PathBuf, user: String },

    #[error("could not {action} {}: {source} (check the path and its permissions)", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "initdb failed for {} ({status}); its output:\n{output}\nfix the problem above, or \
         remove the folder to start from scratch",
        data_dir.display()
    )]
    Initdb {
        data_dir: PathBuf,
        status: String,
        output: String,
    },

    #[error(
        "the PostgreSQL server failed to start: {reason}; last lines of {}:\n{log_tail}",
        log.display()
    )]
    StartFailed {
        reason: String,
        log: PathBuf,
        log_tail: String,
    },

    #[error("could not {action} on the private PostgreSQL server: {source}")]
    Sql {
        action: String,
        #[source]
        source: sqlx::Error,
    },
}

impl DevDbError {
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        DevDbError::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
