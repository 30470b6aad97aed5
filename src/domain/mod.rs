//! Pure rules of the product, no I/O. Nothing here imports another module of ours.
//!
//! Invariant: a value of a type from this module has already passed its rule, so code
//! that holds a `TeamId` or a `ClusterName` never re-checks it.

pub mod accelerators;
pub mod access;
pub mod compute_class;
pub mod duration;
pub mod gke_version;
pub mod gpu_sharing;
pub mod hash;
pub mod names;
pub mod policy;
pub mod pool_record;
pub mod pools;
pub mod pricing;
pub mod provisioning;
pub mod quota;
pub mod report;
pub mod reservation;
pub mod resize;
pub mod resource_names;
pub mod roles;
pub mod rpc;
#[macro_use]
pub mod states;
pub mod usage;
pub mod webhooks;
pub mod workload;

pub use names::{
    ClusterName, Email, NameError, OperationTarget, PoolId, ProfileId, ProjectId, TeamId, ZoneName,
};
pub use roles::Role;
pub use rpc::RpcCode;
pub use states::{ClusterState, OperationState, OperationType, PoolState, SettledState, StepState};

#[cfg(test)]
pub(crate) mod hostile_props;
