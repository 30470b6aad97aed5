//! What every handler is given: the service layer's shared handles, plus what only the
//! HTTP surface needs (the authenticator, the metrics registry).
//!
//! Invariant: the API reaches the database, the queue and the cloud only through
//! [`Services`] and the service functions that take it; the composition root (`app`)
//! builds this state, and nothing here depends on `app`.

use std::ops::Deref;
use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;

use crate::service::Services;

use super::auth::{Authenticator, HasAuth};

/// Cloned for every request (and by every middleware that takes state): one reference
/// count, not one per handle.
#[derive(Clone)]
pub struct AppState(Arc<AppParts>);

impl AppState {
    pub fn new(parts: AppParts) -> AppState {
        AppState(Arc::new(parts))
    }

    /// A copy of the parts, to build a state that differs in one (benchmarks, tests).
    pub fn parts(&self) -> AppParts {
        (*self.0).clone()
    }
}

#[derive(Clone)]
pub struct AppParts {
    /// Database, events, cloud clients, prices, page key.
    pub services: Services,
    pub auth: Arc<Authenticator>,
    pub metrics: PrometheusHandle,
}

/// Handlers read `state.auth`, and `state.db`, `state.cloud`, ... straight through.
impl Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

impl Deref for AppParts {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl HasAuth for AppState {
    fn authenticator(&self) -> &Arc<Authenticator> {
        &self.auth
    }
}
