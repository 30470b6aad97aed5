//! Whether the named objects `up` applies exist (the KSA, the LWS controller, the NVIDIA
//! driver installer): one GET each.
//!
//! Invariant: `Ok(false)` only on the API server's 404; any other failure is an error,
//! so a caller never takes "could not read" for "missing".

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::ServiceAccount;

use super::{KubeCluster, KubeError};

/// A kind of object `up` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    ServiceAccount,
    Deployment,
    DaemonSet,
}

impl KubeCluster {
    /// Whether `kind` `namespace/name` exists.
    pub async fn exists(
        &self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Result<bool, KubeError> {
        let k = format!("{kind:?}");
        Ok(match kind {
            ObjectKind::ServiceAccount => self
                .get_namespaced::<ServiceAccount>(&k, namespace, name)
                .await?
                .is_some(),
            ObjectKind::Deployment => self
                .get_namespaced::<Deployment>(&k, namespace, name)
                .await?
                .is_some(),
            ObjectKind::DaemonSet => self
                .get_namespaced::<DaemonSet>(&k, namespace, name)
                .await?
                .is_some(),
        })
    }
}
