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
//! address: people are logged as [`user_id`] (logs are often shipped off-cluster).

use std::io::IsTerminal;

use sha2::{Digest, Sha256};
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

/// The stable id under which a person appears in logs: `u-` and the first 16 hex digits
/// of the SHA-256 of their email address, lower-cased (the same person always maps to
/// the same id; the address itself is never written).
pub fn user_id(email: &str) -> String {
    let digest = Sha256::digest(email.trim().to_ascii_lowercase().as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("u-{hex}")
}

#[cfg(test)]
mod tests {
    use super::user_id;

    #[test]
    fn user_ids_are_stable_and_hide_the_address() {
        let id = user_id("Alice@Example.com");
        assert_eq!(id, user_id("alice@example.com"));
        assert_ne!(id, user_id("bob@example.com"));
        assert!(id.starts_with("u-") && id.len() == 18, "{id}");
        assert!(!id.contains('@') && !id.contains("alice"), "{id}");
    }
}
