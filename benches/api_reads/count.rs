//! Counting SQL round trips per HTTP request: a tracing layer that, while switched on,
//! counts sqlx's per-statement events (`sqlx::query`, DEBUG) emitted inside a request's
//! `http` span. Background work (event listener, metrics) runs outside any `http` span
//! and is not counted.
//!
//! Invariant: while off, the layer enables nothing, so the load runs pay one atomic
//! load per callsite check and no statement logging.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

static ON: AtomicBool = AtomicBool::new(false);
static QUERIES: AtomicU64 = AtomicU64::new(0);

struct Counter;

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Counter {
    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() != "sqlx::query" {
            return;
        }
        let in_request = ctx
            .event_scope(event)
            .is_some_and(|mut scope| scope.any(|s| s.name() == "http"));
        if in_request {
            QUERIES.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Logs at `warn` (or `RUST_LOG`) to stderr, plus the counter.
pub fn init() {
    let fmt = crate::support::stderr_log_layer("warn");
    let counter = Counter.with_filter(filter_fn(|m| {
        ON.load(Ordering::Relaxed) && (m.target() == "sqlx::query" || m.name() == "http")
    }));
    tracing_subscriber::registry()
        .with(fmt)
        .with(counter)
        .init();
}

/// Run `f` with counting on; returns its output and the statements counted.
pub async fn counting<T>(f: impl Future<Output = T>) -> (T, u64) {
    QUERIES.store(0, Ordering::Relaxed);
    ON.store(true, Ordering::Relaxed);
    tracing::callsite::rebuild_interest_cache();
    let out = f.await;
    ON.store(false, Ordering::Relaxed);
    tracing::callsite::rebuild_interest_cache();
    (out, QUERIES.load(Ordering::Relaxed))
}
