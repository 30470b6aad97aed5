//! Kubernetes clients per GKE cluster, built from the cluster's `endpoint`, its
//! `masterAuth.clusterCaCertificate` and a Google access token.
//!
//! Invariant: a client handed out was built with the current endpoint, CA and token:
//! the cache asks the token source again once the cached token is near its expiry (or
//! on every call when the source gives no expiry; gcp_auth caches tokens itself) and
//! rebuilds the client whenever the token, endpoint or CA changed. A 401 drops the
//! cached client and asks the token source to refresh.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use kube::config::AuthInfo;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::KubeError;
use crate::cloud::gcp::auth::TokenSource;
use crate::cloud::retry::{CallBudget, DEFAULT_REQUEST_WINDOW};

/// Refresh a token this long before it expires.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(300);

/// A bearer token and, when known, when it expires.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessToken {
    pub token: String,
    pub expires_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Where tokens come from. `Ok(None)` means "no authentication" (the simulator).
///
/// Implemented for [`TokenSource`] (production) and for closures
/// `Fn() -> BoxFuture<'static, Result<Option<AccessToken>, KubeError>>` (tests).
pub trait TokenProvider: Send + Sync + 'static {
    fn token(&self) -> BoxFuture<'_, Result<Option<AccessToken>, KubeError>>;

    /// Forget any cached token (called after a 401).
    fn invalidate(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

impl<F> TokenProvider for F
where
    F: Fn() -> BoxFuture<'static, Result<Option<AccessToken>, KubeError>> + Send + Sync + 'static,
{
    fn token(&self) -> BoxFuture<'_, Result<Option<AccessToken>, KubeError>> {
        self()
    }
}

impl TokenProvider for TokenSource {
    fn token(&self) -> BoxFuture<'_, Result<Option<AccessToken>, KubeError>> {
        Box::pin(async move {
            let t = TokenSource::token(self)
                .await
                .map_err(|e| KubeError::Token(e.to_string()))?;
            // gcp_auth refreshes its cached token before expiry, so without an expiry
            // here the cache simply asks on every call (cheap) and compares.
            Ok(t.map(|token| AccessToken {
                token,
                expires_at: None,
            }))
        })
    }

    fn invalidate(&self) -> BoxFuture<'_, ()> {
        Box::pin(TokenSource::invalidate(self))
    }
}

/// How to reach one cluster's API server.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterAccess {
    /// Cache key, e.g. `projects/p/locations/z/clusters/c`.
    pub key: String,
    /// GKE `endpoint`: a bare IP or host (served over https), or a full `http(s)://` URL.
    pub endpoint: String,
    /// GKE `masterAuth.clusterCaCertificate`: base64 of a PEM bundle.
    pub ca_certificate: Option<String>,
}

impl ClusterAccess {
    /// How to reach a GKE cluster as `clusters.get` describes it (`None` until it has an
    /// endpoint).
    pub fn for_gke(
        cluster: &crate::cloud::gcp::types::container::Cluster,
    ) -> Option<ClusterAccess> {
        let endpoint = cluster.endpoint.clone().filter(|e| !e.trim().is_empty())?;
        Some(ClusterAccess {
            key: cluster
                .self_link
                .clone()
                .unwrap_or_else(|| format!("{}/{}", endpoint, cluster.name)),
            endpoint,
            ca_certificate: cluster
                .master_auth
                .as_ref()
                .and_then(|m| m.cluster_ca_certificate.clone()),
        })
    }
}

impl std::fmt::Debug for ClusterAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterAccess")
            .field("key", &self.key)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// The API server URL for a GKE `endpoint`: URLs as they are, bare hosts over https.
pub fn cluster_url(endpoint: &str) -> Result<axum::http::Uri, KubeError> {
    let e = endpoint.trim().trim_end_matches('/');
    if e.is_empty() {
        return Err(KubeError::Config("the cluster has no endpoint yet".into()));
    }
    let url = if e.starts_with("http://") || e.starts_with("https://") {
        e.to_owned()
    } else {
        format!("https://{e}")
    };
    url.parse()
        .map_err(|err| KubeError::Config(format!("endpoint {endpoint:?}: {err}")))
}

/// DER certificates from GKE's `clusterCaCertificate` (base64 of PEM; plain PEM is
/// accepted too).
pub fn ca_roots(ca_certificate: &str) -> Result<Vec<Vec<u8>>, KubeError> {
    let trimmed = ca_certificate.trim();
    let pem = if trimmed.starts_with("-----BEGIN") {
        trimmed.as_bytes().to_vec()
    } else {
        let compact: String = trimmed.chars().filter(|c| !c.is_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(compact)
            .map_err(|e| KubeError::Config(format!("clusterCaCertificate is not base64: {e}")))?
    };
    let certs = CertificateDer::pem_slice_iter(&pem)
        .map(|c| c.map(|c| c.as_ref().to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| KubeError::Config(format!("clusterCaCertificate is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(KubeError::Config(
            "clusterCaCertificate holds no certificate".into(),
        ));
    }
    Ok(certs)
}

/// Build a client (no I/O). Installs the process TLS provider first.
pub fn build_client(
    access: &ClusterAccess,
    token: Option<&str>,
    timeout: Duration,
) -> Result<kube::Client, KubeError> {
    crate::auth::install_tls_provider();
    let mut config = kube::Config::new(cluster_url(&access.endpoint)?);
    if let Some(ca) = access
        .ca_certificate
        .as_deref()
        .filter(|c| !c.trim().is_empty())
    {
        config.root_cert = Some(ca_roots(ca)?);
    }
    config.auth_info = AuthInfo {
        token: token.map(|t| t.to_owned().into()),
        ..AuthInfo::default()
    };
    // Workflows retry by class and record every attempt; kube's own retry layer
    // would hide retries (and wait up to 1000 s).
    config.default_retry = false;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(timeout);
    config.reset_reader_on_write = true;
    config.write_timeout = Some(timeout);
    let builder = kube::client::ClientBuilder::try_from(config)
        .map_err(|e| KubeError::from_kube(format!("client for {}", access.key), e))?;
    // Every request counted and timed as a cloud call (service `kubernetes`).
    Ok(builder.with_layer(&super::metered::MeteredLayer).build())
}

struct Cached {
    access: ClusterAccess,
    token: Option<String>,
    expires_at: Option<DateTime<Utc>>,
    client: kube::Client,
}

struct Inner {
    tokens: Arc<dyn TokenProvider>,
    timeout: Duration,
    cache: Mutex<HashMap<String, Cached>>,
    builds: AtomicU64,
}

/// Clients for every cluster, cached per cluster key; cheap to clone. The cache is
/// shared by every clone; the [`CallBudget`] is the handle's own.
#[derive(Clone)]
pub struct KubeClients {
    inner: Arc<Inner>,
    budget: CallBudget,
}

impl std::fmt::Debug for KubeClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClients")
            .field("builds", &self.builds())
            .finish_non_exhaustive()
    }
}

impl KubeClients {
    /// Clients authenticating with `tokens`; requests time out after 60 s.
    pub fn new(tokens: impl TokenProvider) -> KubeClients {
        Self::with_timeout(tokens, Duration::from_secs(60))
    }

    pub fn with_timeout(tokens: impl TokenProvider, timeout: Duration) -> KubeClients {
        KubeClients {
            inner: Arc::new(Inner {
                tokens: Arc::new(tokens),
                timeout,
                cache: Mutex::new(HashMap::new()),
                builds: AtomicU64::new(0),
            }),
            budget: CallBudget::request(DEFAULT_REQUEST_WINDOW),
        }
    }

    /// These clients with their idempotent calls retried within `budget`.
    pub fn with_budget(&self, budget: CallBudget) -> KubeClients {
        KubeClients {
            inner: self.inner.clone(),
            budget,
        }
    }

    /// The budget of calls made through this handle.
    pub fn budget(&self) -> &CallBudget {
        &self.budget
    }

    /// A handle on one cluster (no I/O).
    pub fn cluster(&self, access: ClusterAccess) -> super::KubeCluster {
        super::KubeCluster::new(self.clone(), access)
    }

    /// How many clients were built so far (observability and tests).
    pub fn builds(&self) -> u64 {
        self.inner.builds.load(Ordering::Relaxed)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.inner.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A client for `access` with a valid token, from the cache when nothing changed.
    pub async fn client(&self, access: &ClusterAccess) -> Result<kube::Client, KubeError> {
        let fresh_until = Utc::now() + REFRESH_MARGIN;
        if let Some(c) = self.cache().get(&access.key)
            && c.access == *access
            && c.expires_at.is_some_and(|t| t > fresh_until)
        {
            return Ok(c.client.clone());
        }
        let token = self.inner.tokens.token().await?;
        let (token, expires_at) = match token {
            Some(t) => (Some(t.token), t.expires_at),
            None => (None, None),
        };
        let mut cache = self.cache();
        if let Some(c) = cache.get_mut(&access.key)
            && c.access == *access
            && c.token == token
        {
            c.expires_at = expires_at;
            return Ok(c.client.clone());
        }
        let client = build_client(access, token.as_deref(), self.inner.timeout)?;
        self.inner.builds.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(cluster = %access.key, "built kubernetes client");
        cache.insert(
            access.key.clone(),
            Cached {
                access: access.clone(),
                token,
                expires_at,
                client: client.clone(),
            },
        );
        Ok(client)
    }

    /// Drop the cached client of `key` (the cluster was deleted, or its token refused).
    pub fn forget(&self, key: &str) {
        self.cache().remove(key);
    }

    /// After a 401: forget the client and make the token source fetch a new token.
    pub async fn unauthorized(&self, key: &str) {
        self.forget(key);
        self.inner.tokens.invalidate().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            cluster_url("34.1.2.3").unwrap().to_string(),
            "https://34.1.2.3/"
        );
        assert_eq!(
            cluster_url("http://127.0.0.1:8080/kube/k1/")
                .unwrap()
                .to_string(),
            "http://127.0.0.1:8080/kube/k1"
        );
        assert!(cluster_url("").is_err());
    }

    #[test]
    fn ca_from_base64_pem() {
        let b64 = base64::engine::general_purpose::STANDARD.encode(crate::sim::kube::CA_PEM);
        assert_eq!(ca_roots(&b64).unwrap().len(), 1);
        assert_eq!(ca_roots(crate::sim::kube::CA_PEM).unwrap().len(), 1);
        assert!(ca_roots("bm90IGEgY2VydA==").is_err());
    }
}
