//! The page-token signing key: one row, created on first use.
//!
//! Invariant: every replica reads the same key (the first insert wins; later ones do
//! nothing), and the key never changes once written.

use super::{Db, StoreError, keyed};

/// The stored key; `fresh` is inserted if there is none yet.
pub async fn load_or_create(db: &Db, fresh: &[u8]) -> Result<Vec<u8>, StoreError> {
    keyed::execute(
        db,
        "INSERT INTO page_token_key (key) VALUES ($1) ON CONFLICT (singleton) DO NOTHING",
        (fresh,),
    )
    .await?;
    Ok(sqlx::query_scalar("SELECT key FROM page_token_key")
        .fetch_one(db)
        .await?)
}
