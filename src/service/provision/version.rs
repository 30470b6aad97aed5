//! The GKE version a cluster runs now, for the checks that need a minimum version
//! (failover pairs' compute classes, flex-start modes, GPU sharing).
//!
//! Invariant: a version that cannot be read is never a refusal: the caller turns the
//! read's error into a warning, and GKE (or the step) refuses a pool that is too old.

use crate::cloud::Cloud;
use crate::domain::compute_class::GkeVersion;

use super::super::{Error, Result};
use super::Mutation;

/// What `clusters.get` says of the cluster's control plane.
pub enum MasterVersion {
    /// `currentMasterVersion` as reported (empty when GKE gave none) and its parse.
    Read(String, Option<GkeVersion>),
    /// The cluster could not be read: why, for a warning.
    Unread(String),
}

/// Read the cluster's `currentMasterVersion` through the production GKE client.
pub async fn master_version(cloud: &Cloud, m: &Mutation) -> MasterVersion {
    let n = m.names();
    match cloud
        .gcp
        .container
        .get_cluster(&n.project, &n.zone, &n.cluster)
        .await
    {
        Ok(c) => {
            let v = c.current_master_version.unwrap_or_default();
            let parsed = GkeVersion::parse(&v);
            MasterVersion::Read(v, parsed)
        }
        Err(e) => {
            tracing::warn!(error = %e, cluster = %n.cluster, "GKE version check skipped");
            MasterVersion::Unread(e.to_string())
        }
    }
}

/// A minimum-version check: `min` or later is no warning; an older version (or one
/// that does not parse) is 400 GKE_VERSION_TOO_OLD, `cluster … runs GKE "…"; ` then
/// `needs` (what needs `min`, and the way out); a version that cannot be read is the one
/// warning `the GKE version of cluster … was not checked ` then `unread(why)`.
pub async fn require(
    cloud: &Cloud,
    m: &Mutation,
    min: &GkeVersion,
    unread: impl FnOnce(&str) -> String,
    needs: &str,
) -> Result<Vec<String>> {
    match master_version(cloud, m).await {
        MasterVersion::Unread(e) => Ok(vec![format!(
            "the GKE version of cluster {} was not checked {}",
            m.names().cluster,
            unread(&e)
        )]),
        MasterVersion::Read(_, Some(v)) if v >= *min => Ok(Vec::new()),
        MasterVersion::Read(v, _) => Err(Error::invalid(
            "GKE_VERSION_TOO_OLD",
            format!("cluster {} runs GKE {v:?}; {needs}", m.path.name()),
        )
        .with("currentMasterVersion", v)
        .with("minimumVersion", min)),
    }
}
