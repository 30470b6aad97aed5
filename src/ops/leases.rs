//! The leases this process holds, renewed together: one statement every `lease / 3`
//! extends every lease the process holds and reads back which operations were asked to
//! cancel, instead of one heartbeat per operation (a thousand running operations cost a
//! statement every ten seconds, not a hundred a second).
//!
//! Invariants: while the database answers, a lease held here is extended at least every
//! `lease / 3`; a lease whose fence moved (another worker claimed the operation after it
//! expired) is reported to its runner at the next renewal (its `lost` token), and a
//! cancel request the renewal reads reaches the runner (its `cancel` token). A lease is
//! held from the claim until its [`Held`] guard drops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::{Db, StoreError, operations};

/// Leases renewed in one statement at most (a larger set takes several).
const BATCH: usize = 1_000;

/// What the renewal tells a runner.
#[derive(Clone)]
struct Tokens {
    generation: i64,
    cancel: CancellationToken,
    lost: CancellationToken,
}

/// Every lease this process holds, by operation id.
#[derive(Default)]
pub struct Leases {
    held: Mutex<HashMap<Uuid, Tokens>>,
}

/// A lease held until dropped.
pub struct Held {
    id: Uuid,
    generation: i64,
    leases: Arc<Leases>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = lock(&self.leases.held);
        if held.get(&self.id).map(|t| t.generation) == Some(self.generation) {
            held.remove(&self.id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Leases {
    /// Hold the lease of claim `generation` on `id`: renewals extend it, cancel `cancel`
    /// when a cancel was requested, and `lost` when the fence moved.
    pub fn hold(
        self: &Arc<Self>,
        id: Uuid,
        generation: i64,
        cancel: CancellationToken,
        lost: CancellationToken,
    ) -> Held {
        lock(&self.held).insert(
            id,
            Tokens {
                generation,
                cancel,
                lost,
            },
        );
        Held {
            id,
            generation,
            leases: self.clone(),
        }
    }

    /// Number of leases held now.
    pub fn len(&self) -> usize {
        lock(&self.held).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Extend every held lease by `lease` (one statement per [`BATCH`]).
    pub async fn renew(&self, db: &Db, lease: Duration) -> Result<(), StoreError> {
        let snapshot: Vec<(Uuid, Tokens)> = lock(&self.held)
            .iter()
            .map(|(id, t)| (*id, t.clone()))
            .collect();
        for chunk in snapshot.chunks(BATCH) {
            let pairs: Vec<(Uuid, i64)> = chunk.iter().map(|(id, t)| (*id, t.generation)).collect();
            let alive: HashMap<Uuid, bool> =
                operations::heartbeat_many(db, &pairs, lease.as_secs_f64())
                    .await?
                    .into_iter()
                    .collect();
            for (id, t) in chunk {
                match alive.get(id) {
                    Some(true) => t.cancel.cancel(),
                    Some(false) => {}
                    // Ended by its runner since the snapshot, or claimed by another worker.
                    None if self.still_held(*id, t.generation) => {
                        tracing::warn!(operation.id = %id, "lease lost to another worker");
                        t.lost.cancel();
                    }
                    None => {}
                }
            }
        }
        Ok(())
    }

    fn still_held(&self, id: Uuid, generation: i64) -> bool {
        lock(&self.held).get(&id).map(|t| t.generation) == Some(generation)
    }

    /// Renew every `lease / 3` until `stop`; a failed renewal is retried at the next tick.
    pub async fn run(self: Arc<Self>, db: Db, lease: Duration, stop: CancellationToken) {
        let every = lease / 3;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = stop.cancelled() => return,
            }
            if let Err(e) = self.renew(&db, lease).await {
                tracing::warn!(error = %format_args!("{e:#}"), held = self.len(),
                    "renewing leases failed; retrying");
            }
        }
    }
}
