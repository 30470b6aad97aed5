//! Integration tests for `kineticd::devdb` against the real PostgreSQL server binaries.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use kineticd::devdb::{DevDbError, INITDB_MARKER, LOG_FILE, PgBinaries, PrivatePostgres};
use sqlx::{Connection, PgConnection};

const CHILD_ENV: &str = "KINETICD_DEVDB_TEST_CHILD_DIR";

/// A fresh, not yet existing path under the system temp dir.
fn unique_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir().join(format!(
        "kineticd-devdb-test-{tag}-{}-{}-{nanos}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

async fn select_one(url: &str) -> i32 {
    let mut conn = PgConnection::connect(url).await.expect("connect");
    let one: i32 = sqlx::query_scalar("SELECT 1")
        .fetch_one(&mut conn)
        .await
        .expect("SELECT 1");
    conn.close().await.expect("close");
    one
}

/// Whether `pid` still runs (zombies awaiting reaping by init do not count).
fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn accepts_connections(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok()
}

#[tokio::test]
async fn start_query_ensure_database_stop_then_reuse() {
    let dir = unique_dir("reuse");
    let pg = PrivatePostgres::start(&dir).await.expect("first start");
    assert!(pg.ran_initdb());
    assert_eq!(pg.data_dir(), dir.as_path());
    assert!(pg.port() != 0 && pg.port() != 5432);
    assert_eq!(
        pg.url("kineticd"),
        format!("postgres://kineticd@127.0.0.1:{}/kineticd", pg.port())
    );
    if is_root() {
        let owner = std::fs::metadata(format!("/proc/{}", pg.pid())).expect("proc entry");
        assert_ne!(owner.uid(), 0, "postgres must not run as root");
    }
    assert_eq!(select_one(&pg.url("postgres")).await, 1);

    pg.ensure_database("kineticd").await.expect("create db");
    pg.ensure_database("kineticd")
        .await
        .expect("db exists: no-op");
    assert_eq!(select_one(&pg.url("kineticd")).await, 1);
    let odd = "odd \"name\"/x";
    pg.ensure_database(odd).await.expect("create odd db");
    let mut conn = PgConnection::connect(&pg.url(odd))
        .await
        .expect("connect odd");
    let current: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut conn)
        .await
        .expect("current_database");
    assert_eq!(current, odd);
    conn.close().await.expect("close");

    let first_port = pg.port();
    let first_pid = pg.pid();
    pg.stop().await.expect("stop");
    assert!(!process_running(first_pid), "postmaster still running");
    assert!(!accepts_connections(first_port));

    let pg = PrivatePostgres::start(&dir).await.expect("second start");
    assert!(!pg.ran_initdb(), "existing cluster must be reused");
    let log = std::fs::read_to_string(dir.join(LOG_FILE)).expect("server log");
    assert_eq!(
        log.matches(INITDB_MARKER).count(),
        1,
        "initdb ran twice:\n{log}"
    );
    assert_eq!(select_one(&pg.url("kineticd")).await, 1, "database kept");
    pg.stop().await.expect("second stop");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[tokio::test]
async fn second_server_on_same_data_dir_is_refused() {
    let dir = unique_dir("inuse");
    let pg = PrivatePostgres::start_ephemeral(&dir).await.expect("start");
    let err = PrivatePostgres::start_ephemeral(&dir)
        .await
        .expect_err("second server on the same folder");
    match &err {
        DevDbError::InUse { pid, .. } => assert_eq!(*pid, pg.pid()),
        other => panic!("expected InUse, got {other:?}"),
    }
    assert!(err.to_string().contains("already in use"), "{err}");
    pg.stop().await.expect("stop");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[tokio::test]
async fn foreign_non_empty_folder_is_not_initialised() {
    let dir = unique_dir("foreign");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("notes.txt"), "mine").expect("write");
    let err = PrivatePostgres::start_ephemeral(&dir)
        .await
        .expect_err("non-empty folder without PG_VERSION");
    assert!(matches!(err, DevDbError::NotADataDir { .. }), "{err:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt"))
            .ok()
            .as_deref(),
        Some("mine")
    );
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[tokio::test]
async fn start_failure_quotes_the_server_log() {
    let dir = unique_dir("broken");
    PrivatePostgres::start_ephemeral(&dir)
        .await
        .expect("start")
        .stop()
        .await
        .expect("stop");
    let conf = dir.join("postgresql.conf");
    let mut text = std::fs::read_to_string(&conf).expect("read conf");
    text.push_str("kineticd_bogus_setting = on\n");
    std::fs::write(&conf, text).expect("write conf");

    let err = PrivatePostgres::start_ephemeral(&dir)
        .await
        .expect_err("broken configuration");
    let DevDbError::StartFailed { log_tail, .. } = &err else {
        panic!("expected StartFailed, got {err:?}");
    };
    assert!(log_tail.contains("kineticd_bogus_setting"), "{log_tail}");
    let msg = err.to_string();
    assert!(
        msg.contains("failed to start") && msg.contains(LOG_FILE),
        "{msg}"
    );
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[tokio::test]
async fn temporary_server_folder_is_removed_on_stop() {
    let pg = PrivatePostgres::start_temporary().await.expect("start");
    assert!(pg.ran_initdb());
    assert_eq!(select_one(&pg.url("postgres")).await, 1);
    let dir = pg.data_dir().to_path_buf();
    assert!(dir.join("PG_VERSION").is_file());
    pg.stop().await.expect("stop");
    assert!(!dir.exists(), "{} left behind", dir.display());
}

/// When root, a data folder the server user cannot reach moves to /var/tmp/kineticd-pg.
#[tokio::test]
async fn unreachable_folder_falls_back_when_root() {
    if !is_root() {
        eprintln!("not root: the fallback only applies to root");
        return;
    }
    let private = unique_dir("private");
    std::fs::create_dir_all(&private).expect("mkdir");
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let requested = private.join("pg");

    let pg = PrivatePostgres::start_ephemeral(&requested)
        .await
        .expect("start");
    let used = pg.data_dir().to_path_buf();
    assert!(
        used.starts_with("/var/tmp/kineticd-pg"),
        "{}",
        used.display()
    );
    assert!(pg.ran_initdb());
    assert_eq!(select_one(&pg.url("postgres")).await, 1);
    pg.stop().await.expect("stop");

    let pg = PrivatePostgres::start_ephemeral(&requested)
        .await
        .expect("restart");
    assert_eq!(pg.data_dir(), used.as_path(), "same fallback on reuse");
    assert!(!pg.ran_initdb());
    pg.stop().await.expect("stop again");

    std::fs::remove_dir_all(&used).expect("cleanup fallback");
    let _ = std::fs::remove_file(used.with_extension("path"));
    std::fs::remove_dir_all(&private).expect("cleanup");
}

/// Runs only inside the child process of `sigkill_of_owner_leaves_no_server`.
#[tokio::test]
async fn sigkill_child_helper() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let pg = PrivatePostgres::start_ephemeral(Path::new(&dir))
        .await
        .expect("child start");
    println!("READY port={} pid={}", pg.port(), pg.pid());
    // Keep the server; the parent SIGKILLs this process.
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn sigkill_of_owner_leaves_no_server() {
    let dir = unique_dir("sigkill");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "sigkill_child_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn child test process");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // libtest prints "test sigkill_child_helper ... " before our output.
            if let Some((_, rest)) = line.split_once("READY ") {
                let _ = tx.send(rest.to_owned());
            }
        }
    });
    let ready = rx.recv_timeout(Duration::from_secs(90));
    let ready = match ready {
        Ok(ready) => ready,
        Err(e) => {
            let _ = child.kill();
            panic!("child never reported a started server: {e}");
        }
    };
    let field = |key: &str| -> u32 {
        ready
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .expect("READY line")
    };
    let port = u16::try_from(field("port=")).expect("port");
    let pid = field("pid=");
    assert!(
        accepts_connections(port),
        "server not reachable before the kill"
    );
    assert!(process_running(pid));

    child.kill().expect("SIGKILL child"); // std's kill is SIGKILL
    child.wait().expect("reap child");

    let deadline = Instant::now() + Duration::from_secs(60);
    while accepts_connections(port) || process_running(pid) {
        assert!(
            Instant::now() < deadline,
            "postgres (pid {pid}, port {port}) outlived its SIGKILLed owner"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

fn fake_binaries(dir: &Path, names: &[&str]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    for name in names {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\nexit 1\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

#[test]
fn locate_without_binaries_says_what_to_do() {
    let root = unique_dir("nobins");
    fake_binaries(&root.join("15/bin"), &["initdb"]); // incomplete: no postgres
    let err = PgBinaries::locate_with(Some(OsStr::new("/nonexistent/kineticd/bin")), &root)
        .expect_err("nothing to find");
    assert!(matches!(err, DevDbError::NoBinaries { .. }), "{err:?}");
    let msg = err.to_string();
    for needle in [
        "initdb, postgres",
        "not found on PATH",
        &format!("{}/*/bin", root.display()),
        "apt-get install postgresql",
        "brew install postgresql@16",
        "DATABASE_URL",
    ] {
        assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
    }
    let err = PgBinaries::locate_with(None, Path::new("/nonexistent/kineticd/root"))
        .expect_err("no PATH at all");
    assert!(matches!(err, DevDbError::NoBinaries { .. }));
    std::fs::remove_dir_all(&root).expect("cleanup");
}

#[test]
fn locate_prefers_path_then_newest_version() {
    let root = unique_dir("bins");
    let versions = root.join("versions");
    fake_binaries(&versions.join("9.6/bin"), &["initdb", "postgres"]);
    fake_binaries(&versions.join("15/bin"), &["initdb", "postgres"]);
    fake_binaries(&versions.join("16/bin"), &["initdb"]); // incomplete
    let path_dir = root.join("on-path");
    fake_binaries(&path_dir, &["initdb", "postgres", "pg_ctl"]);

    let found = PgBinaries::locate_with(None, &versions).expect("versioned");
    assert_eq!(found.bin_dir, versions.join("15/bin"));

    let path =
        std::env::join_paths([Path::new("/nonexistent/kineticd/bin"), &path_dir]).expect("PATH");
    let found = PgBinaries::locate_with(Some(&path), &versions).expect("on PATH");
    assert_eq!(found.bin_dir, path_dir);
    assert_eq!(found.postgres(), path_dir.join("postgres"));
    std::fs::remove_dir_all(&root).expect("cleanup");
}

#[test]
fn real_binaries_are_found() {
    let bins = PgBinaries::locate().expect("PostgreSQL binaries installed on this machine");
    assert!(bins.initdb().is_file() && bins.postgres().is_file());
}
