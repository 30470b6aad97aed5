//! Everything that talks to the outside: Google Cloud REST APIs ([`gcp`]) and the
//! clusters' Kubernetes APIs ([`kube`]). Nothing outside this module makes a cloud call.
//!
//! Invariant: one [`Cloud`] per process; its Google and Kubernetes clients share one
//! connection pool and one token source, configured once at start-up (from the
//! environment, or pointed at the built-in simulator in development).

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
        let gcp = GcpClients::new(config, http.clone());
        let kube = KubeClients::new(gcp.http.tokens().clone());
        Cloud {
            gcp,
            kube,
            manifests,
            http,
        }
    }

    /// Everything pointed at a simulator listening at `sim_url` (no credentials).
    pub fn simulated(sim_url: &str, http: reqwest::Client) -> Result<Cloud, url::ParseError> {
        Cloud::simulated_at(sim_url, http, 0.0)
    }

    /// [`Cloud::simulated`] for a simulator running `speed` times faster than real time:
    /// polls are as frequent per virtual second as against Google.
    pub fn simulated_at(
        sim_url: &str,
        http: reqwest::Client,
        speed: f64,
    ) -> Result<Cloud, url::ParseError> {
        let root = url::Url::parse(sim_url)?;
        let mut config = GcpConfig::single_root(&root);
        config.poll = gcp::lro::PollSchedule::for_speed(speed);
        Ok(Cloud::new(
            config,
            crate::sim::kube::manifests::config(sim_url),
            http,
        ))
    }
}
