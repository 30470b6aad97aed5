//! Everything that talks to the outside: Google Cloud REST APIs ([`gcp`]) and the
//! clusters' Kubernetes APIs ([`kube`]). Nothing outside this module makes a cloud call.
//!
//! Invariant: one [`Cloud`] per process; its Google and Kubernetes clients share one
//! connection pool and one token source, configured once at start-up from ordinary
//! configuration (the environment; `serve --dev` hands in the simulator's endpoints the
//! same way).

pub mod call_metrics;
pub mod gcp;
pub mod kube;

use gcp::{GcpClients, GcpConfig};
use kube::KubeClients;
use kube::manifests::ManifestConfig;

/// The process's cloud clients and manifest configuration.
#[derive(Debug, Clone)]
pub struct Cloud {
    pub gcp: GcpClients,
    pub kube: KubeClients,
    pub manifests: ManifestConfig,
    /// The shared outbound HTTP client (manifest downloads).
    pub http: reqwest::Client,
}

impl Cloud {
    pub fn new(config: GcpConfig, manifests: ManifestConfig, http: reqwest::Client) -> Cloud {
        // One call timeout for Google's and the clusters' APIs: a hung call of either
        // kind is given up after it and retried by its step.
        let timeout = config.call_timeout;
        let gcp = GcpClients::new(config, http.clone());
        let kube = KubeClients::with_timeout(gcp.http.tokens().clone(), timeout);
        Cloud {
            gcp,
            kube,
            manifests,
            http,
        }
    }
}
