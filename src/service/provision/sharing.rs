//! `sharing` and `partitionSize` of `pool add`: checked against the pool's GPU model
//! ([`crate::domain::gpu_sharing`]) and, for a sharing strategy, against the cluster's
//! GKE version, before anything is planned.
//!
//! Invariant: a request that passes carries a [`GpuSharing`] GKE accepts for the pool's
//! GPU and for the cluster's version as GKE reported it (an unreadable version is a
//! warning, never a guess).

use crate::cloud::Cloud;
use crate::domain::accelerators::Resolved;
use crate::domain::gpu_sharing::{self, GpuSharing, SharingError};

use super::super::{Error, Result};
use super::Mutation;
use super::pool_request::AddPoolRequest;
use super::version;

fn sharing_error(acc: &Resolved, e: SharingError) -> Error {
    let mut err = Error::invalid(e.reason(), e.to_string()).with("accelerator", acc.base_name());
    if let Some(valid) = e.valid_sizes() {
        err = err.with("validPartitionSizes", valid);
    }
    err
}

/// The sharing and partitioning a request asks of a pool of `acc` (None: whole GPUs).
pub fn check(acc: &Resolved, req: &AddPoolRequest) -> Result<Option<GpuSharing>> {
    let sharing = req
        .sharing
        .as_ref()
        .map(|s| (s.strategy.as_str(), s.max_clients_per_gpu));
    gpu_sharing::check(acc, req.partition_size.as_deref(), sharing)
        .map_err(|e| sharing_error(acc, e))
}

/// A sharing strategy needs a GKE version that has it: the cluster's
/// `currentMasterVersion` as GKE reports it now; warnings when it cannot be read.
pub async fn check_version(
    cloud: &Cloud,
    m: &Mutation,
    gpu: Option<&GpuSharing>,
) -> Result<Vec<String>> {
    let Some(s) = gpu.and_then(|g| g.sharing) else {
        return Ok(Vec::new());
    };
    let min = s.strategy.min_version();
    let unread = |e: &str| format!("for {} ({e})", s.strategy.as_str());
    let needs = format!(
        "GPU sharing with {} needs GKE {min} or later: upgrade the cluster or add the pool without \"sharing\"",
        s.strategy.as_str()
    );
    version::require(cloud, m, &min, unread, &needs).await
}
