//! Logging set-up: JSON lines in production, human-readable in development; `RUST_LOG`
//! (default `info`) filters.
//!
//! `serve` writes JSON unless `--dev` or `KINETIC_LOG_FORMAT=pretty` says otherwise
//! (`config::ServeArgs::log_format`); each JSON line carries its span's fields, so a
//! line written inside an operation step names `operation.id`, `operation.type`,
//! `step.id` and `attempt`.
//!
//! Invariants: ANSI colour codes are written only when standard output (where logs go)
//! is a terminal, so log files and pipes get plain text; no log field holds an email
//! address: people are logged as [`crate::domain::Email::log_id`] (logs are often shipped off-cluster).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stdout)
        .with_ansi(std::io::stdout().is_terminal());
    // try_init: a second initialisation (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
        LogFormat::Pretty => builder.compact().try_init(),
    };
}
