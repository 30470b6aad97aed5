//! Connection bounds (issue 24): a connection that is slow to send a request's head, or
//! that sits idle between requests, is closed (`KINETIC_HEADER_READ_TIMEOUT_SECONDS`,
//! `KINETIC_IDLE_TIMEOUT_SECONDS`); a request being served is never cut by them, however
//! long it lives (`:wait`, `:watch`). The bounds here are far below any test's length, so
//! the long-polls below outlive them without the test sleeping.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::TestApp;
use crate::support::{queued_noop, wait_runs_its_timeout};

const ALICE: &str = "alice@example.com";
const SHORT: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(600);
/// How long a test waits for the server to close a connection before it fails (a guard,
/// not a measurement: the bounds are well under a second).
const GUARD: Duration = Duration::from_secs(30);

async fn app_with(header_read: Duration, idle: Duration) -> TestApp {
    let mut app = TestApp::spawn_tweaked(|mut s| {
        s.limits.header_read_timeout = Some(header_read);
        s.limits.idle_timeout = Some(idle);
        s
    })
    .await;
    // A fresh connection per request: a pooled one may be closed by the idle bound just
    // as the client reuses it.
    app.http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    app
}

/// Read until the server closes the connection; everything it sent.
async fn until_closed(s: &mut TcpStream, what: &str) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(GUARD, read)
        .await
        .unwrap_or_else(|_| panic!("the server never closed {what}"));
    String::from_utf8_lossy(&out).into_owned()
}

/// Read one whole response (head and `Content-Length` body).
async fn one_response(s: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&out).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let len: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .expect("content-length");
            if body.len() >= len {
                return text;
            }
        }
        let n = tokio::time::timeout(GUARD, s.read(&mut buf))
            .await
            .expect("a response")
            .expect("read");
        assert!(n > 0, "closed mid-response: {text}");
        out.extend_from_slice(&buf[..n]);
    }
}

#[tokio::test]
async fn a_connection_that_stalls_in_a_request_head_is_closed() {
    let app = app_with(SHORT, LONG).await;
    // Half a request line, then nothing.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(b"GET /healthz HTT").await.unwrap();
    let got = until_closed(&mut s, "a connection stalled mid-head").await;
    assert!(!got.contains("200 OK"), "{got}");
    // A connection that sends nothing at all.
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    until_closed(&mut s, "a silent new connection").await;
    // A keep-alive connection whose second request stalls mid-head (it was idle first:
    // the head's bound counts from its first byte).
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let first = one_response(&mut s).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHo").await.unwrap();
    let got = until_closed(&mut s, "a keep-alive connection stalled mid-head").await;
    assert!(got.is_empty(), "{got}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_bound() {
    let app = app_with(LONG, SHORT).await;
    let mut s = TcpStream::connect(app.addr).await.unwrap();
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    // Keep-alive (HTTP/1.1, no `Connection: close`): the response, then the close.
    let got = until_closed(&mut s, "an idle keep-alive connection").await;
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(!got.contains("connection: close"), "{got}");
}

#[tokio::test]
async fn long_polls_outlive_the_connection_bounds() {
    let app = app_with(SHORT, SHORT).await;
    app.team(ALICE, "acme", &["acme-project"]).await;
    let name = queued_noop(&app, ALICE).await;
    // A :watch stream opens and stays quiet (no workers: the operation stays queued).
    let watch = app
        .stream_as(ALICE, &format!("/v1/{name}:watch"))
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    // A :wait lives five times the bounds and is answered by its own timeout.
    wait_runs_its_timeout(&app, ALICE, &name).await;
    // The watch outlived them too: it still delivers the end of the operation.
    let r = app.op_action(ALICE, &name, "cancel").await;
    assert_eq!(r.status, 200, "{:#}", r.body);
    let text = tokio::time::timeout(GUARD, watch.text())
        .await
        .expect("the stream ends with its operation")
        .unwrap();
    assert!(text.contains("event: done"), "{text}");
}
