//! What the kill loops share (tests/crash.rs, tests/soak.rs): a seeded random source, so
//! a failing run replays from its printed seed, and the two reads of the operation queue
//! a kill loop waits on.
//!
//! Invariant: these helpers only read the queue; nothing here changes a row.

use std::time::{Duration, Instant};

/// Deterministic pseudo-random numbers (SplitMix64), so a failing run can be replayed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// Operations not yet finished.
pub async fn unfinished(db: &kineticd::store::Db) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM operations WHERE end_time IS NULL")
        .fetch_one(db)
        .await
        .expect("count unfinished")
}

/// Wait until no unfinished operation holds a live lease (the killed process's leases
/// expired), so the next process can claim at once instead of waiting for its poll.
pub async fn wait_leases_expired(db: &kineticd::store::Db) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let live: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM operations WHERE end_time IS NULL \
             AND lease_expire_time >= now())",
        )
        .fetch_one(db)
        .await
        .expect("lease query");
        if !live || Instant::now() > deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
