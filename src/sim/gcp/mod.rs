//! The simulated Google Cloud services, one module each, mounted under their prefixes.

pub mod artifact_registry;
pub mod compute;
pub mod container;
pub mod iam;
pub mod list;
pub mod method;
pub mod operations;
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

/// Whether `name` is a lowercase RFC 1035 label of at most `max` characters: lowercase
/// letters, digits and hyphens, starting with a letter and not ending with a hyphen (the
/// rule Compute and GKE apply to resource names, each with its own length limit).
pub(crate) fn is_lowercase_label(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}
