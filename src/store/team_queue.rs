//! The cap on a team's unfinished operations: the cap travels as a session setting on
//! every pooled connection ([`CAP_SETTING`], set by `db::connect_pool`), and the count is
//! one SQL statement over the partial index of unfinished operations.
//!
//! Invariant: with no cap configured nothing is counted; with one, the count read here
//! covers every operation of the team whose `end_time` is NULL (QUEUED, RUNNING,
//! CANCELLING) except those waiting for approval (they hold no worker). Concurrent enqueues of one team may each see the same count, so the cap
//! can be passed by at most the number of enqueues racing at that moment.

use sqlx::PgConnection;

use super::{StoreError, keyed};

/// The PostgreSQL session setting holding the cap (a custom, dotted parameter).
pub const CAP_SETTING: &str = "kinetic.max_operations_per_team";

/// A team at or over its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverCap {
    pub unfinished: i64,
    pub cap: i64,
}

/// `Some` when `team` already has `cap` or more unfinished operations.
pub async fn over_cap(tx: &mut PgConnection, team: &str) -> Result<Option<OverCap>, StoreError> {
    let sql = "WITH c AS (SELECT nullif(current_setting('kinetic.max_operations_per_team', true), '')::bigint AS cap) \
         SELECT c.cap, (SELECT count(*) FROM operations \
                        WHERE c.cap IS NOT NULL AND end_time IS NULL AND team_id = $1 \
                              AND state <> 'PENDING_APPROVAL') \
         FROM c";
    let (cap, unfinished): (Option<i64>, i64) = keyed::one(&mut *tx, sql, (team,)).await?;
    Ok(cap
        .filter(|&cap| unfinished >= cap)
        .map(|cap| OverCap { unfinished, cap }))
}
