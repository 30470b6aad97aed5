//! The simulated Google Cloud services, one module each, mounted under their prefixes.

pub mod artifact_registry;
pub mod compute;
pub mod container;
pub mod iam;
pub mod resource_manager;
pub mod service_usage;
pub mod storage;

use axum::Router;

use super::Sim;

pub fn routes() -> Router<Sim> {
    Router::new()
        .merge(container::routes())
        .merge(compute::routes())
        .merge(storage::routes())
        .merge(iam::routes())
        .merge(resource_manager::routes())
        .merge(service_usage::routes())
        .merge(artifact_registry::routes())
}
