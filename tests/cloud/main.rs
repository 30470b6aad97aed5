//! Cloud clients against the simulator (real HTTP, the production client code), the
//! simulator's own state machines, and the Kubernetes layer.

#[path = "../common/mod.rs"]
mod common;

mod artifact_registry;
mod compute;
mod container;
mod errors;
mod iam;
mod kube;
mod lists;
mod reservations;
mod resource_manager;
mod retries;
mod service_usage;
mod sim;
#[path = "../serve_process/journal.rs"]
mod sim_journal;
mod storage;
mod timeouts;
