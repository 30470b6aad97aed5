//! What a provisioning step's result says: an [`Outcome`] every step reports, plus the
//! facts some steps add (the cluster's endpoint, the manifest applied, ...), as typed
//! structs with the JSON the steps have always stored.
//!
//! Invariant: a step result is written through these types and read back through
//! [`outcome_of`] (or, for what a workload needs, [`ClusterResponse::of`])
//! as these types, never by indexing its JSON.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ops::steps::{RpcCode, StepError, StepRecord};
use crate::plan::StepId;
use crate::plan::computeclass::WorkloadSelection;

use super::ClusterOpInput;
use super::queued::QueuedTemplate;

/// What a step found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
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

/// The `response` of a provisioning operation: the cluster, the pools it named, each
/// step's outcome, and what a workload needs from it: the selection of a compute class
/// it applied (`computeClass`, `nodeSelector`, `tolerations`, `snippet`) and the template
/// of a queued-provisioning pool it created (`provisioningRequest`, `podTemplate`,
/// `podAnnotations`, `nodeSelector`, `tolerations`, `snippet`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterResponse {
    pub cluster: String,
    pub node_pools: Vec<String>,
    pub outcomes: BTreeMap<String, Outcome>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSelection>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub queued: Option<QueuedTemplate>,
}

// A ClusterResponse's fields, for its schema only: the flattened parts as the optional
// fields they put beside the others (a plain comment: a doc comment would become the
// schema's description).
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // never built: only its schema is used
struct ClusterResponseFields {
    /// The cluster's resource name.
    cluster: String,
    /// The pools the operation named.
    node_pools: Vec<String>,
    /// Each step's outcome, by step id.
    outcomes: BTreeMap<String, Outcome>,
    /// The ComputeClass of the failover pair the operation created (with
    /// `nodeSelector`, `tolerations` and `snippet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    compute_class: Option<String>,
    /// What a pod template needs to use the new pools.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    node_selector: Option<BTreeMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    tolerations: Option<Vec<crate::plan::computeclass::Toleration>>,
    /// `nodeSelector` and `tolerations` (and a queued pool's objects) as YAML.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    snippet: Option<String>,
    /// A queued-provisioning pool: the ProvisioningRequest to create.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    provisioning_request: Option<Value>,
    /// A queued-provisioning pool: the PodTemplate it names.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pod_template: Option<Value>,
    /// A queued-provisioning pool: the annotations of the job's pod template.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pod_annotations: Option<BTreeMap<String, String>>,
}

impl utoipa::PartialSchema for ClusterResponse {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        ClusterResponseFields::schema()
    }
}

impl utoipa::ToSchema for ClusterResponse {
    fn name() -> std::borrow::Cow<'static, str> {
        "ClusterResponse".into()
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        ClusterResponseFields::schemas(schemas);
    }
}

impl ClusterResponse {
    pub fn of(input: &ClusterOpInput, steps: &[StepRecord]) -> ClusterResponse {
        let outcomes = steps
            .iter()
            .filter_map(|s| Some((s.id.clone(), outcome_of(s.result.as_ref()?)?)))
            .collect();
        ClusterResponse {
            cluster: input.cluster_name(),
            node_pools: input.pools.clone(),
            outcomes,
            workload: workload(steps),
            queued: queued(steps),
        }
    }
}

/// The workload selection of the compute class the operation applied, if any.
fn workload(steps: &[StepRecord]) -> Option<WorkloadSelection> {
    steps
        .iter()
        .filter(|s| s.id == StepId::ComputeClass.to_string())
        .filter_map(|s| ClassApplied::deserialize(s.result.as_ref()?).ok())
        .map(|a| a.workload)
        .next()
}

/// The template of the queued-provisioning pool the operation created, if any.
fn queued(steps: &[StepRecord]) -> Option<QueuedTemplate> {
    steps
        .iter()
        .filter(|s| {
            s.id.parse::<StepId>()
                .is_ok_and(|id| id.pool_id().is_some())
        })
        .filter_map(|s| PoolReady::deserialize(s.result.as_ref()?).ok()?.queued)
        .next()
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
