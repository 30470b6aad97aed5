//! What a provisioning step's result says: an [`Outcome`] every step reports, plus the
//! facts some steps add (the cluster's endpoint, the manifest applied, ...), as typed
//! structs with the JSON the steps have always stored.
//!
//! Invariant: a step result is written through these types and read back through
//! [`outcome_of`] (or, for the compute class's workload selection, [`add_workload`])
//! as these types, never by indexing its JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::plan::StepId;
use crate::plan::computeclass::WorkloadSelection;

use super::queued::QueuedTemplate;

/// What a step found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Created,
    /// Found, ours, and kept as it is.
    Adopted,
    /// Found ours but broken: deleted and created again.
    Recreated,
    Deleted,
    /// Already gone (deleting).
    Absent,
    Enabled,
    Granted,
    Revoked,
    Applied,
    Saved,
}

/// A result that is an outcome alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Done {
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketDeleted {
    pub outcome: Outcome,
    pub objects_deleted: usize,
}

/// The GKE cluster, running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterReady {
    pub outcome: Outcome,
    pub endpoint: Option<String>,
    pub status: String,
}

/// A node pool, running (a queued-provisioning pool: with what a job needs to get
/// its nodes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolReady {
    pub outcome: Outcome,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<QueuedTemplate>,
}

/// Kubernetes objects applied from YAML we wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectsApplied {
    pub outcome: Outcome,
    pub objects: Vec<String>,
}

/// A downloaded manifest applied and ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestApplied {
    pub outcome: Outcome,
    pub manifest: ManifestRef,
    /// How many objects it holds.
    pub objects: usize,
    /// What was waited for.
    pub ready: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestRef {
    pub url: String,
    pub version: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileSaved {
    pub outcome: Outcome,
    pub profile: String,
}

/// A failover pair's ComputeClass applied, and what a workload needs to use it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassApplied {
    pub outcome: Outcome,
    pub objects: Vec<String>,
    pub workload: WorkloadSelection,
}

/// Put the workload selection of an applied compute class (if the operation applied
/// one) into the operation's `response`: `computeClass`, `nodeSelector`, `tolerations`
/// and `snippet`.
pub fn add_workload(response: &mut Value, steps: &[StepRecord]) {
    let applied = steps
        .iter()
        .filter(|s| s.id == StepId::ComputeClass.to_string())
        .filter_map(|s| ClassApplied::deserialize(s.result.as_ref()?).ok())
        .next();
    let (Some(a), Some(obj)) = (applied, response.as_object_mut()) else {
        return;
    };
    if let Ok(Value::Object(w)) = serde_json::to_value(&a.workload) {
        obj.extend(w);
    }
}

/// Put the template of a queued-provisioning pool the operation created (if any) into
/// its `response`: `provisioningRequest`, `podTemplate`, `podAnnotations`,
/// `nodeSelector`, `tolerations` and `snippet`.
pub fn add_queued(response: &mut Value, steps: &[StepRecord]) {
    let queued = steps
        .iter()
        .filter(|s| {
            s.id.parse::<StepId>()
                .is_ok_and(|id| id.pool_id().is_some())
        })
        .filter_map(|s| PoolReady::deserialize(s.result.as_ref()?).ok()?.queued)
        .next();
    let (Some(q), Some(obj)) = (queued, response.as_object_mut()) else {
        return;
    };
    if let Ok(Value::Object(fields)) = serde_json::to_value(&q) {
        obj.extend(fields);
    }
}

/// A step's result as stored.
pub fn result(r: impl Serialize) -> Result<Value, StepError> {
    serde_json::to_value(r).map_err(|e| {
        StepError::terminal(
            RpcCode::Internal,
            "BAD_STEP_RESULT",
            format!("step result: {e}"),
        )
    })
}

/// A result that is `outcome` alone.
pub fn outcome(outcome: Outcome) -> Result<Value, StepError> {
    result(Done { outcome })
}

/// The outcome a stored result reports (`None`: not a provisioning step's result).
pub fn outcome_of(result: &Value) -> Option<Outcome> {
    Done::deserialize(result).ok().map(|d| d.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_their_json_and_read_back_their_outcome() {
        let r = result(ClusterReady {
            outcome: Outcome::Created,
            endpoint: None,
            status: "RUNNING".into(),
        })
        .unwrap();
        assert_eq!(
            r,
            serde_json::json!({"outcome": "created", "endpoint": null, "status": "RUNNING"})
        );
        assert_eq!(outcome_of(&r), Some(Outcome::Created));
        let r = serde_json::json!({"outcome": "deleted", "objectsDeleted": 3});
        assert_eq!(outcome_of(&r), Some(Outcome::Deleted));
        assert_eq!(outcome_of(&serde_json::json!({"chain": 1})), None);
    }
}
