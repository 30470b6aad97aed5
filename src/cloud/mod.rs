//! Everything that talks to the outside: Google Cloud REST APIs ([`gcp`]) and the
//! clusters' Kubernetes APIs ([`kube`]). Nothing outside this module makes a cloud call.
//!
//! Invariant: one [`Cloud`] per process; its Google and Kubernetes clients share one
//! connection pool, one token source and one adaptive rate per project and API
//! ([`rate`]), configured once at start-up from ordinary configuration (the environment;
//! `serve --dev` hands in the simulator's endpoints the same way). A handle's calls are
//! retried by one mechanism ([`retry`]) within the handle's [`CallBudget`]: a request's
//! by default, a step's through [`Cloud::for_steps`].

pub mod call_metrics;
pub mod clock;
pub mod gcp;
pub mod kube;
pub mod rate;
pub mod retry;
pub mod webhook;

use gcp::{GcpClients, GcpConfig};
use kube::KubeClients;
use kube::manifests::ManifestConfig;
use retry::{CallBudget, DEFAULT_STEP_WINDOW};

/// The process's cloud clients and manifest configuration.
#[derive(Debug, Clone)]
pub struct Cloud {
    pub gcp: GcpClients,
    pub kube: KubeClients,
    pub manifests: ManifestConfig,
    /// The shared outbound HTTP client (manifest downloads).
    pub http: reqwest::Client,
    /// The cloud's time (usage, idle rules, TTLs).
    pub clock: clock::CloudClock,
}

impl Cloud {
    pub fn new(config: GcpConfig, manifests: ManifestConfig, http: reqwest::Client) -> Cloud {
        // One call timeout for Google's and the clusters' APIs: a hung call of either
        // kind is given up after it and retried by its step.
        let timeout = config.call_timeout;
        let clock = clock::CloudClock::new(config.clock.clone(), http.clone());
        // Calls are retried within a request's budget unless a caller says otherwise
        // (the workers' steps do: [`Cloud::for_steps`]).
        let budget = CallBudget::request(config.request_retry);
        let gcp = GcpClients::new(config, http.clone());
        let kube =
            KubeClients::with_timeout(gcp.http.tokens().clone(), timeout).with_budget(budget);
        Cloud {
            gcp,
            kube,
            manifests,
            http,
            clock,
        }
    }

    /// These clients with every call retried within `budget` (for a request with a
    /// deadline of its own: `CallBudget::request(..).until(deadline)`); connections,
    /// tokens, the Kubernetes client cache and the adaptive rates are shared.
    pub fn with_budget(&self, budget: CallBudget) -> Cloud {
        Cloud {
            gcp: self.gcp.with_budget(budget),
            kube: self.kube.with_budget(budget),
            manifests: self.manifests.clone(),
            http: self.http.clone(),
            clock: self.clock.clone(),
        }
    }

    /// These clients as an operation's steps use them: a call is retried within the
    /// step's attempt ([`DEFAULT_STEP_WINDOW`]), then the step's own policy decides.
    pub fn for_steps(&self) -> Cloud {
        self.with_budget(CallBudget::step(DEFAULT_STEP_WINDOW))
    }
}
