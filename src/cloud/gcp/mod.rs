//! Google Cloud REST clients (reqwest) for the seven services kineticd uses, sharing one
//! HTTP layer ([`http`]), one error type ([`error`]) and one LRO waiter ([`lro`]).
//!
//! Invariant: clients are thin and typed: one method per Google call, wire structs from
//! [`types`], errors classified for retry; workflows decide what to do with them.

pub mod artifact_registry;
pub mod auth;
pub mod compute;
pub mod config;
pub mod container;
pub mod error;
pub mod http;
pub mod iam;
pub mod lro;
mod pages;
pub mod policy;
pub mod resource_manager;
pub mod service_usage;
pub mod storage;
pub mod types;

pub use config::{AuthMode, GcpConfig, Service};
pub use error::{GcpError, RetryClass};
pub use http::GcpHttp;

/// Every client, sharing one connection pool and token source.
#[derive(Debug, Clone)]
pub struct GcpClients {
    pub http: GcpHttp,
    pub container: container::Container,
    pub compute: compute::Compute,
    pub storage: storage::Storage,
    pub iam: iam::Iam,
    pub resource_manager: resource_manager::ResourceManager,
    pub service_usage: service_usage::ServiceUsage,
    pub artifact_registry: artifact_registry::ArtifactRegistry,
}

impl GcpClients {
    pub fn new(config: GcpConfig, client: reqwest::Client) -> GcpClients {
        let http = GcpHttp::new(config, client);
        GcpClients {
            container: container::Container::new(http.clone()),
            compute: compute::Compute::new(http.clone()),
            storage: storage::Storage::new(http.clone()),
            iam: iam::Iam::new(http.clone()),
            resource_manager: resource_manager::ResourceManager::new(http.clone()),
            service_usage: service_usage::ServiceUsage::new(http.clone()),
            artifact_registry: artifact_registry::ArtifactRegistry::new(http.clone()),
            http,
        }
    }

    /// These clients with their calls retried within `budget` (the connection pool,
    /// token source and adaptive rates are shared with `self`).
    pub fn with_budget(&self, budget: crate::cloud::retry::CallBudget) -> GcpClients {
        let http = self.http.with_budget(budget);
        let mut c = self.clone();
        c.container.http = http.clone();
        c.compute.http = http.clone();
        c.storage.http = http.clone();
        c.iam.http = http.clone();
        c.resource_manager.http = http.clone();
        c.service_usage.http = http.clone();
        c.artifact_registry.http = http.clone();
        c.http = http;
        c
    }
}
