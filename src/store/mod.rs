//! The only module that speaks SQL. Each file owns the statements for one table family;
//! functions take any executor so callers choose the transaction boundary.
//!
//! Invariant: constraint violations the API must explain (duplicate team, claimed
//! project, ...) come back as typed [`StoreError`] variants, never as raw SQL errors.

pub mod clusters;
pub mod db;
pub mod manifests;
pub mod node_pools;
pub mod operations;
pub mod page_key;
pub mod profiles;
pub mod teams;

pub use db::{Db, connect, migrate};

/// A store failure. Conflicts the caller can act on are typed; everything else is `Db`.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("team already exists")]
    TeamExists,
    #[error("project {0} already belongs to a team")]
    ProjectClaimed(String),
    #[error("database error")]
    Db(#[from] sqlx::Error),
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
