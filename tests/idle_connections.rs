//! An open connection costs the real `kineticd serve` process a few kilobytes, not a
//! copy of its router: parked `:wait`/`:watch` callers (benches/waiters) hold one each.
//! Serving the `Router` itself made axum rebuild every route per accepted connection
//! (about 0.8 MiB each: 500 idle connections were about 400 MiB).

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serve_process::{LogPath, Server};

const CONNECTIONS: usize = 500;
/// Far above what 500 connections cost now (about 3 KiB each), far below the 400 MiB
/// of a router copy per connection.
const MAX_GROWTH_KIB: u64 = 64 * 1024;

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_copy_the_router() {
    let (_db, url) = common::fresh_db().await;
    let http = kineticd::app::http_client().expect("http client");
    let (log_path, log) = LogPath::temp("idle-connections");
    let server = Server::start_healthy(
        &url,
        &log,
        &log_path,
        &http,
        &[
            ("KINETIC_WORKERS", "0".to_owned()),
            // Parked, not closed by the head's bound (tests/api/connections.rs tests it)
            // however slowly a loaded machine opens the 500.
            ("KINETIC_HEADER_READ_TIMEOUT_SECONDS", "600".to_owned()),
        ],
    )
    .await;
    let pid = server.pid();
    let before = rss_kib(pid);
    let fds = open_fds(pid);
    let mut conns = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let mut c = TcpStream::connect(("127.0.0.1", server.port)).expect("connect");
        // A request's first bytes, so the connection is past accept and being served.
        c.write_all(b"GET /healthz HTTP/1.1\r\n").expect("write");
        conns.push(c);
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while open_fds(pid) < fds + CONNECTIONS {
        assert!(
            Instant::now() < deadline,
            "connections not accepted in 60 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let grew = rss_kib(pid).saturating_sub(before);
    assert!(
        grew < MAX_GROWTH_KIB,
        "{CONNECTIONS} idle connections grew the server's RSS by {grew} KiB"
    );
    drop(conns);
    log_path.remove();
}
