//! One LISTEN connection per process fans operation events out in memory: new work
//! wakes idle workers, a cancel request reaches the worker running that operation, and
//! state changes reach `:wait` / `:watch` callers; new webhook deliveries wake the
//! delivery loop.
//!
//! Invariant: waiters hold no database connection while they wait; after a lost
//! connection every waiter and worker is told to re-read (notifications may have been
//! missed), so nothing waits forever on an event that already happened. Once the
//! process shuts down ([`Events::close`]) every subscription is closed, so `:wait` and
//! `:watch` answer at once instead of holding the drain until they are cut off.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::store::operations::EVENTS_CHANNEL;

/// The channel the `events` trigger notifies when it wrote webhook deliveries
/// (migration 0012).
pub const DELIVERIES_CHANNEL: &str = "kinetic_webhooks";

/// What happened to one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpEvent {
    /// The operation changed; its state after the change.
    Changed(String),
    /// Events may have been missed: re-read.
    Resync,
}

#[derive(Default)]
pub struct Events {
    work: Notify,
    deliveries: Notify,
    subscribers: Mutex<HashMap<Uuid, broadcast::Sender<OpEvent>>>,
    running: Mutex<HashMap<Uuid, CancellationToken>>,
    /// Set (under the `subscribers` lock) by [`Events::close`].
    closed: AtomicBool,
}

/// Receives one operation's events; unsubscribes when dropped.
pub struct Subscription {
    pub rx: broadcast::Receiver<OpEvent>,
    id: Uuid,
    events: Arc<Events>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut subs = lock(&self.events.subscribers);
        if let Some(tx) = subs.get(&self.id) {
            // This receiver is still counted until dropped after this fn; 1 means last.
            if tx.receiver_count() <= 1 {
                subs.remove(&self.id);
            }
        }
    }
}

/// Cancels the token when the operation is asked to stop; unregisters when dropped.
pub struct Running {
    pub token: CancellationToken,
    id: Uuid,
    events: Arc<Events>,
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.events.running).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Events {
    /// Start the listener on its own connection to `url` (not from the pool).
    pub async fn start(url: &str) -> Result<Arc<Events>, sqlx::Error> {
        let mut listener = PgListener::connect(url).await?;
        listener
            .listen_all([EVENTS_CHANNEL, DELIVERIES_CHANNEL])
            .await?;
        let events = Arc::new(Events::default());
        let weak = Arc::downgrade(&events);
        tokio::spawn(async move {
            loop {
                let r = listener.try_recv().await;
                let Some(events) = weak.upgrade() else { return };
                match r {
                    Ok(Some(n)) if n.channel() == DELIVERIES_CHANNEL => {
                        events.deliveries.notify_waiters()
                    }
                    Ok(Some(n)) => events.dispatch(n.payload()),
                    Ok(None) => {
                        // Connection lost and re-established by the listener.
                        tracing::warn!("operation event listener reconnected; resyncing");
                        events.resync();
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "operation event listener failed; retrying");
                        events.resync();
                        drop(events);
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
        Ok(events)
    }

    fn dispatch(&self, payload: &str) {
        if payload == "new" {
            self.work.notify_waiters();
            return;
        }
        let Some((id, what)) = payload.split_once(':') else {
            return;
        };
        let Ok(id) = Uuid::parse_str(id) else { return };
        if what == "cancel" {
            if let Some(t) = lock(&self.running).get(&id) {
                t.cancel();
            }
            return;
        }
        if let Some(tx) = lock(&self.subscribers).get(&id) {
            let _ = tx.send(OpEvent::Changed(what.to_owned()));
        }
    }

    fn resync(&self) {
        self.work.notify_waiters();
        self.deliveries.notify_waiters();
        for tx in lock(&self.subscribers).values() {
            let _ = tx.send(OpEvent::Resync);
        }
    }

    /// Idle workers wait on this; it fires on new or newly claimable work.
    pub fn work(&self) -> &Notify {
        &self.work
    }

    /// The delivery loop waits on this; it fires when webhook deliveries were written.
    pub fn deliveries(&self) -> &Notify {
        &self.deliveries
    }

    /// Follow one operation's changes. Subscribe before reading the operation, so a
    /// change between the read and the wait is not missed.
    /// After [`Events::close`] the subscription is closed from the start.
    pub fn subscribe(self: &Arc<Self>, id: Uuid) -> Subscription {
        let mut subs = lock(&self.subscribers);
        let rx = if self.closed.load(Ordering::SeqCst) {
            broadcast::channel(1).1
        } else {
            subs.entry(id)
                .or_insert_with(|| broadcast::channel(64).0)
                .subscribe()
        };
        drop(subs);
        Subscription {
            rx,
            id,
            events: self.clone(),
        }
    }

    /// Shutdown: close every subscription, now and later (their receivers see
    /// `Closed`), so waiters answer with what they have and watchers end their streams.
    pub fn close(&self) {
        let mut subs = lock(&self.subscribers);
        self.closed.store(true, Ordering::SeqCst);
        subs.clear();
    }

    /// Register an operation this process runs, so a cancel request reaches it.
    pub fn running(self: &Arc<Self>, id: Uuid) -> Running {
        let token = CancellationToken::new();
        lock(&self.running).insert(id, token.clone());
        Running {
            token,
            id,
            events: self.clone(),
        }
    }

    /// Number of live `:wait`/`:watch` subscriptions (for tests and metrics).
    pub fn subscriber_count(&self) -> usize {
        lock(&self.subscribers)
            .values()
            .map(|t| t.receiver_count())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn close_ends_every_subscription_now_and_later() {
        let events = Arc::new(Events::default());
        let id = Uuid::new_v4();
        let mut before = events.subscribe(id);
        events.close();
        assert_eq!(events.subscriber_count(), 0);
        let mut after = events.subscribe(id);
        for sub in [&mut before, &mut after] {
            assert!(matches!(
                sub.rx.recv().await,
                Err(broadcast::error::RecvError::Closed)
            ));
        }
        // Events for a closed hub go nowhere (and do not panic).
        events.dispatch(&format!("{id}:SUCCEEDED"));
    }
}
