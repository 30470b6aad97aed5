//! Ensure steps inside the cluster: the `kinetic` Kubernetes service account (annotated
//! for Workload Identity), the LeaderWorkerSet controller, and the NVIDIA driver
//! installer. Server-side apply makes each of them idempotent.
//!
//! Invariant: a step that applies a controller returns only once it is usable
//! (Deployment Available, DaemonSet scheduled), so later jobs never race it.

use serde_json::Value;

use crate::cloud::kube::manifests::NVIDIA_DRIVER_DAEMONSET;
use crate::cloud::kube::{ClusterAccess, KubeCluster, WaitFor};
use crate::domain::resource_names::{KSA_NAME, KSA_NAMESPACE};
use crate::ops::steps::{RpcCode, StepError};

use super::kube_error;
use super::results::{ManifestApplied, ManifestRef, ObjectsApplied, Outcome, result};
use super::step::Step;
use crate::plan::ActionId;

pub(super) async fn cluster<Id: ActionId>(s: &Step<'_, Id>) -> Result<KubeCluster, StepError> {
    cluster_and_version(s).await.map(|(_, k)| k)
}

/// The running cluster's API server and its GKE version (`currentMasterVersion`).
pub async fn cluster_and_version<Id: ActionId>(
    s: &Step<'_, Id>,
) -> Result<(Option<String>, KubeCluster), StepError> {
    let gke = s.running_cluster().await?;
    let access = ClusterAccess::for_gke(&gke).ok_or_else(|| {
        StepError::retryable(
            RpcCode::Unavailable,
            "CLUSTER_NOT_READY",
            format!("cluster {} has no endpoint yet", gke.name),
        )
        .was("CLUSTER_NO_ENDPOINT")
    })?;
    Ok((gke.current_master_version, s.env.cloud.kube.cluster(access)))
}

fn ksa_yaml(s: &Step<'_>) -> String {
    format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {KSA_NAME}\n  namespace: {KSA_NAMESPACE}\n  labels:\n    kinetic: \"true\"\n  annotations:\n    iam.gke.io/gcp-service-account: {}\n",
        s.names.node_sa_email()
    )
}

pub async fn ensure_ksa(s: &Step<'_>) -> Result<Value, StepError> {
    let k = cluster(s).await?;
    let applied = k.apply_yaml(&ksa_yaml(s)).await.map_err(kube_error)?;
    result(ObjectsApplied {
        outcome: Outcome::Applied,
        objects: applied.iter().map(|a| a.describe()).collect(),
    })
}

async fn apply_manifest(
    s: &Step<'_>,
    spec: &crate::cloud::kube::ManifestSpec,
    wait: WaitFor,
) -> Result<Value, StepError> {
    let k = cluster(s).await?;
    let manifest = s.env.manifests.fetch(spec).await?;
    let applied = k.apply_yaml(&manifest.body).await.map_err(kube_error)?;
    k.wait_for(&wait, &s.env.timing.kube, &s.ctx.cancel, |_| {})
        .await
        .map_err(kube_error)?;
    result(ManifestApplied {
        outcome: Outcome::Applied,
        manifest: ManifestRef {
            url: manifest.url,
            version: manifest.version,
            sha256: manifest.sha256,
        },
        objects: applied.len(),
        ready: wait.describe(),
    })
}

pub async fn ensure_lws(s: &Step<'_>) -> Result<Value, StepError> {
    let spec = s.env.cloud.manifests.lws.clone();
    apply_manifest(
        s,
        &spec,
        WaitFor::DeploymentAvailable {
            namespace: "lws-system".into(),
            name: "lws-controller-manager".into(),
        },
    )
    .await
}

pub async fn ensure_nvidia_driver(s: &Step<'_>) -> Result<Value, StepError> {
    let spec = s.env.cloud.manifests.nvidia_driver.clone();
    apply_manifest(
        s,
        &spec,
        WaitFor::DaemonSetScheduled {
            namespace: "kube-system".into(),
            name: NVIDIA_DRIVER_DAEMONSET.into(),
        },
    )
    .await
}
