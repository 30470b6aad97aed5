//! The durable operation engine: enqueue ([`queue`]), the worker pool ([`worker`]) that
//! claims operations with leases, the step runner ([`runner`]) and the workflows.
//!
//! Invariant (the engine's contract, see ARCHITECTURE.md "Guarantees"): an accepted
//! operation is a committed row; it runs to an end (SUCCEEDED, FAILED, CANCELLED) across
//! crashes, with each finished step's result kept and never run again; operations on one
//! cluster run one at a time in order, and never wait for another cluster. A cluster's
//! SYNC_ACCESS operations have a queue key of their own (`access:{cluster}`): they run
//! one at a time among themselves, beside the cluster's provisioning, so a removed
//! member's access never waits behind an `up`.

pub mod approvals;
pub mod deliveries;
pub mod delivery_body;
pub mod enqueue;
pub mod events;
pub mod kinds;
pub mod leases;
pub mod outage;
pub mod outcome;
pub mod queue;
pub mod record_states;
pub mod retention;
pub mod runner;
pub mod steps;
pub mod usage;
pub mod worker;
pub mod workflows;

pub use events::Events;
pub use worker::{WorkerConfig, WorkerPool};
pub use workflows::Registry;

/// The workflows this process runs: the provisioning workflows on `db` and `cloud`;
/// `test_workflows` adds NOOP (dev and test only).
pub fn registry(
    db: &crate::store::Db,
    cloud: &crate::cloud::Cloud,
    test_workflows: bool,
) -> Registry {
    registry_with(
        workflows::cluster::Env::new(db.clone(), cloud.clone()),
        test_workflows,
    )
}

/// [`registry`] with a prepared provisioning environment (custom timings in tests):
/// every kind registered in [`kinds`].
pub fn registry_with(env: workflows::cluster::Env, test_workflows: bool) -> Registry {
    kinds::registry(std::sync::Arc::new(env), test_workflows)
}
