//! Step ids: the names plan actions carry, typed: a provisioning plan's [`StepId`]
//! (`network`, `pool:gpu-l4-1a2b`, ...) and a drill plan's [`DrillStep`]
//! (`drill-reclaim`, ...). A plan names its actions and their dependencies with them,
//! and a kind picks the handler of a step by matching on its own id type, so a step of
//! another kind cannot reach it.
//!
//! Invariant: every id has exactly one text form, and parsing that text gives the same
//! id back, so ids stored in operations before these types existed still decode.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which bucket of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BucketKind {
    /// `{project}-kinetic-state`: one per project, never deleted.
    State,
    Jobs,
    Builds,
}

/// A bucket that belongs to one cluster (not the shared state bucket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClusterBucket {
    Jobs,
    Builds,
}

impl From<ClusterBucket> for BucketKind {
    fn from(b: ClusterBucket) -> BucketKind {
        match b {
            ClusterBucket::Jobs => BucketKind::Jobs,
            ClusterBucket::Builds => BucketKind::Builds,
        }
    }
}

/// Which service account of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Account {
    /// The nodes' identity (and the Workload Identity target).
    Node,
    /// The identity builds run as.
    Build,
}

/// A step of a failover drill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum DrillStep {
    /// `drill-reclaim`: the spot pool's VMs (or the pool) deleted.
    Reclaim,
    /// `drill-recreate`: the deleted pool created again from its record.
    Recreate,
    /// `drill-watch`: the failover watched until recovery or the deadline.
    Watch,
}

/// The id of a plan action, which is also the id of the step that carries it out.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum StepId {
    /// `apis`: the project's services.
    Apis,
    /// `state-bucket`, `jobs-bucket`, `builds-bucket`.
    Bucket(BucketKind),
    /// `jobs-bucket-iam`, `builds-bucket-iam`: the accounts' roles on a bucket.
    BucketRoles(ClusterBucket),
    Network,
    Router,
    /// `node-sa`, `build-sa`.
    ServiceAccount(Account),
    /// `node-sa-roles`, `build-sa-roles`: an account's project roles.
    ProjectRoles(Account),
    Repository,
    /// `repository-iam`.
    RepositoryRoles,
    /// `cluster`: the GKE cluster.
    Cluster,
    WorkloadIdentity,
    /// `ksa`: the Kubernetes service account.
    Ksa,
    /// `lws`: the LeaderWorkerSet controller.
    Lws,
    NvidiaDriver,
    /// `compute-class`: the ComputeClass of a failover pair.
    ComputeClass,
    /// `pool:{id}`: an accelerator node pool.
    Pool(String),
    Profile,
}

/// Text that is no step id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown step id {0:?}")]
pub struct UnknownStepId(pub String);

const POOL_PREFIX: &str = "pool:";

/// Every id but pools (what text is parsed against).
const FIXED: [StepId; 21] = [
    StepId::Apis,
    StepId::Bucket(BucketKind::State),
    StepId::Bucket(BucketKind::Jobs),
    StepId::Bucket(BucketKind::Builds),
    StepId::BucketRoles(ClusterBucket::Jobs),
    StepId::BucketRoles(ClusterBucket::Builds),
    StepId::Network,
    StepId::Router,
    StepId::ServiceAccount(Account::Node),
    StepId::ServiceAccount(Account::Build),
    StepId::ProjectRoles(Account::Node),
    StepId::ProjectRoles(Account::Build),
    StepId::Repository,
    StepId::RepositoryRoles,
    StepId::Cluster,
    StepId::WorkloadIdentity,
    StepId::Ksa,
    StepId::Lws,
    StepId::NvidiaDriver,
    StepId::ComputeClass,
    StepId::Profile,
];

impl StepId {
    /// The step of the node pool `id`.
    pub fn pool(id: &str) -> StepId {
        StepId::Pool(id.to_owned())
    }

    /// The pool this step is about, if it is a pool step.
    pub fn pool_id(&self) -> Option<&str> {
        match self {
            StepId::Pool(id) => Some(id),
            _ => None,
        }
    }
}

impl StepId {
    /// The text of every id but a pool's (`None`).
    fn fixed_text(&self) -> Option<&'static str> {
        use Account as A;
        use BucketKind as B;
        let text = match self {
            StepId::Pool(_) => return None,
            StepId::Apis => "apis",
            StepId::Bucket(B::State) => "state-bucket",
            StepId::Bucket(B::Jobs) => "jobs-bucket",
            StepId::Bucket(B::Builds) => "builds-bucket",
            StepId::BucketRoles(ClusterBucket::Jobs) => "jobs-bucket-iam",
            StepId::BucketRoles(ClusterBucket::Builds) => "builds-bucket-iam",
            StepId::Network => "network",
            StepId::Router => "router",
            StepId::ServiceAccount(A::Node) => "node-sa",
            StepId::ServiceAccount(A::Build) => "build-sa",
            StepId::ProjectRoles(A::Node) => "node-sa-roles",
            StepId::ProjectRoles(A::Build) => "build-sa-roles",
            StepId::Repository => "repository",
            StepId::RepositoryRoles => "repository-iam",
            StepId::Cluster => "cluster",
            StepId::WorkloadIdentity => "workload-identity",
            StepId::Ksa => "ksa",
            StepId::Lws => "lws",
            StepId::NvidiaDriver => "nvidia-driver",
            StepId::ComputeClass => "compute-class",
            StepId::Profile => "profile",
        };
        Some(text)
    }
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self, self.fixed_text()) {
            (StepId::Pool(id), _) => write!(f, "{POOL_PREFIX}{id}"),
            (_, text) => f.write_str(text.unwrap_or_default()),
        }
    }
}

impl FromStr for StepId {
    type Err = UnknownStepId;

    fn from_str(s: &str) -> Result<StepId, UnknownStepId> {
        if let Some(pool) = s.strip_prefix(POOL_PREFIX).filter(|p| !p.is_empty()) {
            return Ok(StepId::pool(pool));
        }
        FIXED
            .iter()
            .find(|id| id.fixed_text() == Some(s))
            .cloned()
            .ok_or_else(|| UnknownStepId(s.to_owned()))
    }
}

/// The `String` conversions serde goes through (`into` / `try_from`): an id's one text
/// form, and back.
macro_rules! string_form {
    ($($id:ty),*) => {$(
        impl From<$id> for String {
            fn from(id: $id) -> String {
                id.to_string()
            }
        }

        impl TryFrom<String> for $id {
            type Error = UnknownStepId;

            fn try_from(s: String) -> Result<$id, UnknownStepId> {
                s.parse()
            }
        }
    )*};
}

string_form!(StepId, DrillStep);

impl PartialEq<str> for StepId {
    fn eq(&self, other: &str) -> bool {
        match self {
            StepId::Pool(id) => other.strip_prefix(POOL_PREFIX) == Some(id.as_str()),
            fixed => fixed.fixed_text() == Some(other),
        }
    }
}

impl PartialEq<&str> for StepId {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl DrillStep {
    pub const ALL: [DrillStep; 3] = [DrillStep::Reclaim, DrillStep::Recreate, DrillStep::Watch];

    fn text(self) -> &'static str {
        match self {
            DrillStep::Reclaim => "drill-reclaim",
            DrillStep::Recreate => "drill-recreate",
            DrillStep::Watch => "drill-watch",
        }
    }
}

impl fmt::Display for DrillStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl FromStr for DrillStep {
    type Err = UnknownStepId;

    fn from_str(s: &str) -> Result<DrillStep, UnknownStepId> {
        DrillStep::ALL
            .into_iter()
            .find(|d| d.text() == s)
            .ok_or_else(|| UnknownStepId(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_reads_back_from_its_text() {
        let mut all = FIXED.to_vec();
        all.push(StepId::pool("gpu-l4-1a2b"));
        for id in all {
            let text = id.to_string();
            assert_eq!(text.parse::<StepId>(), Ok(id.clone()), "{text}");
            let json = serde_json::to_value(&id).unwrap();
            assert_eq!(json, serde_json::Value::String(text));
            assert_eq!(serde_json::from_value::<StepId>(json).unwrap(), id);
        }
        assert_eq!(StepId::pool("p").to_string(), "pool:p");
        assert!("pool:".parse::<StepId>().is_err());
        assert!("netwrok".parse::<StepId>().is_err());
        // A drill's steps are not a provisioning plan's, and the other way round.
        for d in DrillStep::ALL {
            let text = d.to_string();
            assert_eq!(text.parse::<DrillStep>(), Ok(d));
            assert!(text.parse::<StepId>().is_err(), "{text}");
        }
        assert!("network".parse::<DrillStep>().is_err());
    }
}
