//! Service logic: decides what a request means, checks who may do it, and calls the
//! store. Handlers stay thin; the service never sees HTTP types.
//!
//! Invariant: every function here that reads or changes a team's resources first
//! resolves the caller's role through [`access`], so a non-member gets 404, not 403.

pub mod accelerators;
pub mod access;
pub mod access_sync;
pub mod adopt;
pub mod audit;
pub mod capacity;
pub mod clusters;
pub mod credentials;
pub mod diagnose;
pub mod error;
pub mod etag;
pub mod filter;
pub mod idle;
pub mod live;
pub mod noop_operations;
pub mod operation_response;
pub mod operations;
pub mod page;
pub mod placements;
pub mod policy;
pub mod profiles;
pub mod project_authority;
pub mod provision;
pub mod replies;
pub mod request_id;
pub mod state;
pub mod status;
pub mod teams;
pub mod usage;
pub mod webhooks;
pub mod workload;

pub use access::Caller;
pub use error::Error;
pub use page::{Page, PageRequest};
pub use state::Services;

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod hostile_props;
