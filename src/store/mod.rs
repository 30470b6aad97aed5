//! The only module that speaks SQL. Each file owns the statements for one table family;
//! functions take any executor so callers choose the transaction boundary.
//!
//! Invariants: constraint violations the API must explain (duplicate team, claimed
//! project, ...) come back as typed [`StoreError`] variants, never as raw SQL errors; a
//! stored state or spec that does not decode is [`StoreError::Corrupt`] naming its row,
//! never a default.

pub mod access;
pub mod approvals;
pub mod capacity_failures;
pub mod clusters;
pub mod db;
pub mod events;
pub mod idle;
mod keyed;
mod keyset;
pub mod manifests;
pub mod node_pools;
pub mod operations;
pub mod page_key;
pub mod persisted;
pub mod policies;
pub mod profiles;
pub mod reads;
pub mod rendered;
pub mod replies;
pub mod task_leases;
pub mod team_queue;
pub mod teams;
pub mod usage;
pub mod webhooks;

pub use db::{Db, connect, migrate};
pub use persisted::{ClusterSpecRecord, Corrupt, PoolSpecRecord, Row};

/// A store failure. Conflicts the caller can act on are typed; a row that does not
/// decode is `Corrupt`; everything else is `Db`, keeping the driver's error as its
/// source. `{e}` is one line; `{e:#}` adds the cause chain (what logs should print).
#[derive(Debug)]
pub enum StoreError {
    TeamExists,
    ProjectClaimed(String),
    Corrupt(Box<Corrupt>),
    Db(sqlx::Error),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::TeamExists => f.write_str("team already exists"),
            StoreError::ProjectClaimed(p) => write!(f, "project {p} already belongs to a team"),
            StoreError::Corrupt(c) => write!(f, "{c}"),
            StoreError::Db(e) => {
                f.write_str("database error")?;
                if f.alternate() {
                    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
                    while let Some(c) = cause {
                        write!(f, ": {c}")?;
                        cause = c.source();
                    }
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Db(e) => Some(e),
            _ => None,
        }
    }
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Db(e)
    }
}

impl From<Corrupt> for StoreError {
    fn from(c: Corrupt) -> Self {
        StoreError::Corrupt(Box::new(c))
    }
}

/// The constraint name of a unique violation, if `e` is one.
pub(crate) fn unique_violation(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            Some(d.constraint().unwrap_or_default().to_owned())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alternate_form_shows_the_cause() {
        let e = StoreError::from(sqlx::Error::Protocol("bad frame".into()));
        assert_eq!(e.to_string(), "database error");
        let full = format!("{e:#}");
        assert!(
            full.starts_with("database error: ") && full.contains("bad frame"),
            "{full}"
        );
        assert!(std::error::Error::source(&e).is_some());
    }
}
