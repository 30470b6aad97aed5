//! The serve loop: HTTP/1.1 connections (hyper) with the two bounds `axum::serve` cannot
//! set, how long a request's head may take to arrive and how long a keep-alive
//! connection may wait for its next request.
//!
//! Invariants:
//! * a connection with no request in flight is closed once it has spent
//!   [`ConnectionLimits::header_read`] on a request's head (counted from the head's first
//!   byte; for a new connection, from accept), or [`ConnectionLimits::idle`] waiting for
//!   the next request to start (bytes of a pipelined request that arrive while another
//!   is in flight are not seen as a head starting: that one is held to the idle bound);
//! * a connection with a request in flight (its handler running, or its response body
//!   still being sent: `:wait`, `:watch`, the console's event streams) is never closed by
//!   these bounds (the request deadline of `api::limits` is the handler's bound);
//! * the bounds cost a request nothing: the phase is a few timestamps under an
//!   uncontended lock, and one timer per connection looks at it at least every shorter
//!   bound (an idle connection wakes that often); no phase change wakes the connection;
//! * the router is built once: each connection gets a clone of it (a few pointers).
//!   Serving the `Router` itself made axum rebuild every route per connection (about
//!   0.8 MiB each, tests/idle_connections.rs);
//! * shutdown stops accepting, lets each connection finish the request it is serving,
//!   and returns when every connection is closed.
//!
//! Why not hyper's own `header_read_timeout`: its clock also runs while a keep-alive
//! connection waits for the next request, so it cannot give a short bound on a slow head
//! and the long idle bound a load balancer needs (Google's keeps backend connections
//! 600 s, and a backend that closes them sooner makes it answer 502).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::response::Response;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;
use tower::ServiceExt as _;

/// The bounds on a connection between requests (`None`: no bound).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// From a request head's first byte to its end.
    pub header_read: Option<Duration>,
    /// From the end of a response to the next request's first byte.
    pub idle: Option<Duration>,
}

/// Where a connection is: serving requests, reading a head, or waiting for one.
#[derive(Debug, Clone, Copy)]
struct Phase {
    in_flight: u32,
    head_since: Option<Instant>,
    idle_since: Instant,
}

impl Phase {
    /// When the connection is to be closed if nothing changes.
    fn deadline(&self, l: ConnectionLimits) -> Option<Instant> {
        if self.in_flight > 0 {
            return None;
        }
        match self.head_since {
            Some(since) => l.header_read.map(|d| since + d),
            None => l.idle.map(|d| self.idle_since + d),
        }
    }
}

type Tracker = Arc<Mutex<Phase>>;

/// Serve `router` on `listener` until `shutdown` resolves, then drain in-flight requests.
pub async fn serve(
    mut listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // axum's accept: waits out errors such as too many open files.
        let (stream, _) = tokio::select! {
            conn = axum::serve::Listener::accept(&mut listener) => conn,
            () = &mut shutdown => break,
        };
        tokio::spawn(connection(
            stream,
            router.clone(),
            limits,
            graceful.watcher(),
        ));
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

async fn connection(stream: TcpStream, router: Router, limits: ConnectionLimits, w: Watcher) {
    let now = Instant::now();
    let tracker: Tracker = Arc::new(Mutex::new(Phase {
        in_flight: 0,
        head_since: Some(now),
        idle_since: now,
    }));
    let io = TokioIo::new(Watched {
        inner: stream,
        tracker: tracker.clone(),
    });
    let conn = hyper::server::conn::http1::Builder::new().serve_connection(
        io,
        Tracked {
            router,
            tracker: tracker.clone(),
        },
    );
    let mut conn = pin!(w.watch(conn));
    // Nothing wakes this loop when the phase changes (that would cost every request
    // three wake-ups and timer moves): it looks at the phase at least every `tick`, the
    // shorter bound, so a deadline that starts between two looks (a head's, an idle
    // wait's after a response) is never earlier than the next look, and is met exactly.
    let Some(tick) = [limits.header_read, limits.idle]
        .into_iter()
        .flatten()
        .min()
    else {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "connection ended with an error");
        }
        return;
    };
    let sleep = tokio::time::sleep(tick);
    let mut sleep = pin!(sleep);
    loop {
        tokio::select! {
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            () = sleep.as_mut() => {
                let now = Instant::now();
                let deadline = phase(&tracker).deadline(limits);
                if deadline.is_some_and(|d| d <= now) {
                    tracing::debug!("closing a connection past its header-read or idle bound");
                    return;
                }
                let next = deadline.map_or(now + tick, |d| d.min(now + tick));
                sleep.as_mut().reset(next);
            }
        }
    }
}

/// The connection's phase now (a poisoned lock still holds a whole `Phase`).
fn phase(tracker: &Tracker) -> Phase {
    *tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Change the connection's phase.
fn update(tracker: &Tracker, f: impl FnOnce(&mut Phase)) {
    f(&mut tracker.lock().unwrap_or_else(PoisonError::into_inner));
}

/// The socket, noting when a request's head starts to arrive.
struct Watched {
    inner: TcpStream,
    tracker: Tracker,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            update(&self.tracker, |p| {
                if p.in_flight == 0 && p.head_since.is_none() {
                    p.head_since = Some(Instant::now());
                }
            });
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One request in flight, from its dispatch until its response body is dropped.
struct InFlight(Tracker);

impl InFlight {
    fn start(tracker: &Tracker) -> InFlight {
        update(tracker, |p| {
            p.in_flight += 1;
            p.head_since = None;
        });
        InFlight(tracker.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        update(&self.0, |p| {
            p.in_flight = p.in_flight.saturating_sub(1);
            if p.in_flight == 0 {
                p.idle_since = Instant::now();
            }
        });
    }
}

/// The router, counting the requests in flight on its connection.
#[derive(Clone)]
struct Tracked {
    router: Router,
    tracker: Tracker,
}

type Served = Pin<Box<dyn Future<Output = Result<hyper::Response<Guarded>, Infallible>> + Send>>;

impl hyper::service::Service<hyper::Request<Incoming>> for Tracked {
    type Response = hyper::Response<Guarded>;
    type Error = Infallible;
    type Future = Served;

    fn call(&self, req: hyper::Request<Incoming>) -> Served {
        let guard = InFlight::start(&self.tracker);
        let router = self.router.clone();
        Box::pin(async move {
            let resp: Response = router.oneshot(req.map(Body::new)).await?;
            Ok(resp.map(|body| Guarded {
                body,
                _guard: guard,
            }))
        })
    }
}

/// A response body that holds its request's [`InFlight`] until it is dropped.
struct Guarded {
    body: Body,
    _guard: InFlight,
}

impl HttpBody for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_follows_the_phase() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let l = ConnectionLimits {
            header_read: Some(s(10)),
            idle: Some(s(600)),
        };
        let mut p = Phase {
            in_flight: 0,
            head_since: Some(t0),
            idle_since: t0,
        };
        assert_eq!(p.deadline(l), Some(t0 + s(10)));
        p.in_flight = 1;
        assert_eq!(p.deadline(l), None, "a request in flight is never cut");
        p.in_flight = 0;
        p.head_since = None;
        assert_eq!(p.deadline(l), Some(t0 + s(600)));
        assert_eq!(p.deadline(ConnectionLimits::default()), None);
    }
}
