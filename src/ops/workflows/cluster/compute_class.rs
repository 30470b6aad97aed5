//! The `compute-class` step: server-side apply of a failover pair's ComputeClass (the
//! object the plan carries) on a cluster whose GKE version supports it, or its delete
//! when the pair is removed.
//!
//! Invariant: the object applied is exactly the action's `details.computeClass` (what
//! the preview showed); applying twice changes nothing and deleting a class that is
//! already gone succeeds (`absent`).

use serde_json::Value;

use crate::domain::accelerators::Kind;
use crate::domain::compute_class::{GkeVersion, MIN_VERSION};
use crate::ops::steps::{RpcCode, StepError};
use crate::plan::Resource;
use crate::plan::computeclass::{self, ComputeClass};
use crate::store;

use super::results::{ClassApplied, Outcome, outcome, result};
use super::step::Step;
use super::{kube, kube_error, store_error};

fn class_of(s: &Step<'_>) -> Result<ComputeClass, StepError> {
    if let Resource::KubernetesObject(Some(d)) = &s.action.resource
        && let Some(class) = &d.compute_class
    {
        return Ok(class.clone());
    }
    Err(StepError::terminal(
        RpcCode::Internal,
        "BAD_OPERATION_INPUT",
        format!("step {} carries no ComputeClass", s.action.id),
    ))
}

/// Refuse a cluster whose version predates custom compute classes (the service checked
/// it before the operation was queued; the cluster may have changed since).
fn check_version(version: Option<&str>) -> Result<(), StepError> {
    let v = version.unwrap_or_default();
    match GkeVersion::parse(v) {
        Some(parsed) if parsed.supports_compute_classes() => Ok(()),
        _ => Err(StepError::terminal(
            RpcCode::FailedPrecondition,
            "GKE_VERSION_TOO_OLD",
            format!(
                "the cluster runs GKE {v:?}; custom compute classes need {MIN_VERSION} or later"
            ),
        )
        .with("currentMasterVersion", v)),
    }
}

/// The accelerator kind of the pair's spot pool (from its record; GPU if unknown).
async fn kind_of(s: &Step<'_>, class: &ComputeClass) -> Result<Kind, StepError> {
    let spot = class
        .spec
        .priorities
        .first()
        .and_then(|r| r.nodepools.first());
    let Some(spot) = spot else {
        return Ok(Kind::Gpu);
    };
    let rec = store::node_pools::get(&s.env.db, s.cluster_id, spot)
        .await
        .map_err(store_error)?;
    Ok(rec.map_or(Kind::Gpu, |r| r.spec.kind))
}

pub async fn ensure(s: &Step<'_>) -> Result<Value, StepError> {
    let class = class_of(s)?;
    let (gke, k) = kube::cluster_and_version(s).await?;
    check_version(gke.as_deref())?;
    // JSON is YAML: the typed object, as the manifest applied.
    let manifest = serde_json::to_string(&class).map_err(|e| {
        StepError::terminal(
            RpcCode::Internal,
            "BAD_OPERATION_INPUT",
            format!("ComputeClass: {e}"),
        )
    })?;
    let applied = k.apply_yaml(&manifest).await.map_err(kube_error)?;
    let kind = kind_of(s, &class).await?;
    result(ClassApplied {
        outcome: Outcome::Applied,
        objects: applied.iter().map(|a| a.describe()).collect(),
        workload: computeclass::workload(&class.metadata.name, kind),
    })
}

pub async fn delete(s: &Step<'_>) -> Result<Value, StepError> {
    let class = class_of(s)?;
    let (_, k) = kube::cluster_and_version(s).await?;
    let existed = k
        .delete_object(
            computeclass::API_VERSION,
            computeclass::KIND,
            None,
            &class.metadata.name,
        )
        .await
        .map_err(kube_error)?;
    outcome(if existed {
        Outcome::Deleted
    } else {
        Outcome::Absent
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_versions_are_refused_with_the_version_found() {
        assert!(check_version(Some("1.33.5-gke.1080000")).is_ok());
        let e = check_version(Some("1.29.8-gke.1000000")).unwrap_err();
        assert_eq!(e.reason, "GKE_VERSION_TOO_OLD");
        assert!(e.message.contains("1.30.3-gke.1451000"), "{}", e.message);
        assert!(check_version(None).is_err());
    }
}
