//! The plans the server really runs: a second router on the big database whose one
//! database connection loads `auto_explain` (every statement's `EXPLAIN (ANALYZE,
//! BUFFERS)` sent back as a NOTICE), and a tracing layer that keeps those notices while
//! capturing is on. Each list's first and deep page is requested 6 times before the
//! captured one, so PostgreSQL has had its chance to switch the prepared statement to a
//! generic plan, as it does in a long-running server.
//!
//! Invariant: capturing changes nothing the app does but the plans' instrumentation;
//! the claim is run in a transaction that is rolled back.

use std::str::FromStr;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;
use kineticd::app::AppState;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::lists::{self, Case};

static ON: AtomicBool = AtomicBool::new(false);
static NOTICES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_owned();
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" && self.0.is_empty() {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if !ON.load(Ordering::Relaxed) {
            return;
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        if let Ok(mut v) = NOTICES.lock() {
            v.push(m.0);
        }
    }
}

/// Logs at `warn` (or `RUST_LOG`; the seed's slow-statement warnings, which print the whole
/// seed, at `error` only) to stderr, and the notice capture.
pub fn init_tracing() {
    let fmt = crate::support::stderr_log_layer("warn,sqlx::query=error");
    let capture = Capture.with_filter(filter_fn(|m| m.target() == "sqlx::postgres::notice"));
    tracing_subscriber::registry()
        .with(fmt)
        .with(capture)
        .init();
}

/// Run `f` with capture on; its output and the notices it caused.
async fn capturing<T>(f: impl Future<Output = T>) -> (T, Vec<String>) {
    if let Ok(mut v) = NOTICES.lock() {
        v.clear();
    }
    ON.store(true, Ordering::Relaxed);
    let out = f.await;
    ON.store(false, Ordering::Relaxed);
    let got = NOTICES
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    (out, got)
}

/// A plan as printed: `Query Text` cut to its first 300 characters.
fn print_plan(notice: &str) {
    for line in notice.lines() {
        if let Some(q) = line.strip_prefix("Query Text: ") {
            let q: String = q.split_whitespace().collect::<Vec<_>>().join(" ");
            let short: String = q.chars().take(300).collect();
            let more = if q.chars().count() > 300 { " ..." } else { "" };
            println!("    Query Text: {short}{more}");
        } else {
            println!("    {line}");
        }
    }
}

/// The app state on the big database with one `auto_explain` connection.
async fn explaining(url: &str, state: &AppState) -> Result<AppState> {
    let opts = PgConnectOptions::from_str(url)?
        .application_name("kscale-explain")
        .options([
            ("session_preload_libraries", "auto_explain"),
            ("auto_explain.log_min_duration", "0"),
            ("auto_explain.log_analyze", "on"),
            ("auto_explain.log_buffers", "on"),
            ("auto_explain.log_level", "notice"),
        ]);
    let db = PgPoolOptions::new()
        .max_connections(1)
        .connect_with(opts)
        .await?;
    let mut s = state.parts();
    s.services.db = db;
    Ok(AppState::new(s))
}

async fn request(http: &reqwest::Client, url: &str, user: &str) -> Result<()> {
    let r = http.get(url).header("x-kinetic-user", user).send().await?;
    let status = r.status();
    r.bytes().await?;
    anyhow::ensure!(status.is_success(), "GET {url}: {status}");
    Ok(())
}

/// Plans of every list (first and deep page; `walked` from [`lists::run`]) and of the
/// claim, on the big database.
pub async fn run(url: &str, state: &AppState, walked: &[(Case, usize, String)]) -> Result<()> {
    let s = explaining(url, state).await?;
    let api = lists::admin_server(&s).await?;
    let http = reqwest::Client::new();
    println!(
        "\nplans (auto_explain: EXPLAIN (ANALYZE, BUFFERS) of every statement a request sends, 7th execution)"
    );
    for (c, pos, token) in walked {
        for (which, tok) in [("first page", None), ("deep page", Some(token.as_str()))] {
            let u = lists::url(&api, &c.path, 50, tok);
            for _ in 0..6 {
                request(&http, &u, c.user).await?;
            }
            let (r, notices) = capturing(request(&http, &u, c.user)).await;
            r?;
            let at = if tok.is_some() { *pos } else { 0 };
            println!("\n  {} as {}, {which} (after {at} items):", c.name, c.user);
            for n in &notices {
                print_plan(n);
            }
        }
    }
    // The claim, as a worker sends it, rolled back each time: with the baseline's
    // queued operations claimable, then with none claimable (the baseline's finished
    // first, in the same transaction), when it must look at every unfinished one.
    for (what, i) in ["claimable", "none claimable"]
        .into_iter()
        .flat_map(|w| (0..7).map(move |i| (w, i)))
    {
        let mut tx = s.services.db.begin().await?;
        if what == "none claimable" {
            sqlx::query(
                "UPDATE operations SET state = 'SUCCEEDED', end_time = now() \
                 WHERE serial_key LIKE 'bench-%' AND end_time IS NULL",
            )
            .execute(&mut *tx)
            .await?;
        }
        let (r, notices) = capturing(kineticd::store::operations::claim(
            &mut *tx,
            "kscale-explain",
            30.0,
            &[],
        ))
        .await;
        let claimed = r?;
        tx.rollback().await?;
        if i == 6 {
            println!(
                "\n  claim, {what} (claimed {}):",
                claimed.map_or("nothing".to_owned(), |o| o.id.to_string())
            );
            for n in &notices {
                print_plan(n);
            }
        }
    }
    Ok(())
}
