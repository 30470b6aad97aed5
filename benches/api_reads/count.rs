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
static MARKED: AtomicU64 = AtomicU64::new(0);
static MARKER: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());

struct Counter;

/// Whether a statement's logged text holds the marker.
struct Marked<'a>(&'a str, bool);

impl tracing::field::Visit for Marked<'_> {
    fn record_debug(&mut self, _: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.1 |= !self.0.is_empty() && format!("{value:?}").contains(self.0);
    }
}

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
            let marker = MARKER.lock().map(|m| m.clone()).unwrap_or_default();
            let mut m = Marked(&marker, false);
            event.record(&mut m);
            if m.1 {
                MARKED.fetch_add(1, Ordering::Relaxed);
            }
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

/// [`counting`], also counting the statements whose logged SQL contains `marker`:
/// returns the output, all statements and the marked ones (the policy bench's).
#[allow(dead_code)]
pub async fn counting_marked<T>(marker: &str, f: impl Future<Output = T>) -> (T, u64, u64) {
    if let Ok(mut m) = MARKER.lock() {
        *m = marker.to_owned();
    }
    MARKED.store(0, Ordering::Relaxed);
    let (out, all) = counting(f).await;
    (out, all, MARKED.load(Ordering::Relaxed))
}
