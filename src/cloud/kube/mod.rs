//! The Kubernetes layer: clients per GKE cluster ([`client`]), server-side apply of
//! multi-document manifests ([`apply`]), pinned manifests cached in PostgreSQL
//! ([`manifests`]), wait conditions ([`wait`]) and the inventory of nodes and pods
//! ([`inventory`]).
//!
//! Invariant: every call goes through a [`KubeCluster`], which fetches a client with a
//! current token for each request (so long waits survive token expiry) and reports
//! failures as one [`KubeError`] with a retry class.

pub mod apply;
pub mod client;
pub mod error;
pub mod health;
pub mod inventory;
pub mod manifests;
pub mod metered;
pub mod objects;
pub mod quantity;
pub mod wait;

pub use apply::{Applied, FIELD_MANAGER, parse_manifest};
pub use client::{AccessToken, ClusterAccess, KubeClients, TokenProvider};
pub use error::KubeError;
pub use inventory::{Inventory, NodeInfo, PodInfo};
pub use manifests::{
    Downloaded, ManifestConfig, ManifestSpec, PoolAccelerator, needs_nvidia_driver_installer,
};
pub use objects::ObjectKind;
pub use wait::{WaitFor, WaitOptions};

/// One cluster's API server, reached through the shared client cache; cheap to clone.
#[derive(Clone, Debug)]
pub struct KubeCluster {
    clients: KubeClients,
    access: ClusterAccess,
}

impl KubeCluster {
    pub fn new(clients: KubeClients, access: ClusterAccess) -> KubeCluster {
        KubeCluster { clients, access }
    }

    pub fn access(&self) -> &ClusterAccess {
        &self.access
    }

    /// A client with a current token (cached unless the token or endpoint changed).
    pub async fn client(&self) -> Result<kube::Client, KubeError> {
        self.clients.client(&self.access).await
    }

    /// Classify a kube error for `action`; after a 401 the next call gets a fresh token.
    pub(crate) async fn fail(&self, action: impl Into<String>, e: kube::Error) -> KubeError {
        let err = KubeError::from_kube(action, e);
        if err.http_status() == Some(401) {
            self.clients.unauthorized(&self.access.key).await;
        }
        err
    }

    /// The API server's version (`/version`): a cheap reachability check.
    pub async fn version(&self) -> Result<String, KubeError> {
        let client = self.client().await?;
        match client.apiserver_version().await {
            Ok(info) => Ok(info.git_version),
            Err(e) => Err(self.fail("get /version", e).await),
        }
    }
}
