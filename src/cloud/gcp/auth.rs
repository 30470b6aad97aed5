//! Access tokens for Google APIs (cloud-platform scope) from Application Default
//! Credentials through gcp_auth, or none for emulators.
//!
//! Invariant: a token is never logged; after a 401 the provider is rebuilt once so the
//! next token is fresh (gcp_auth caches tokens until they expire).

use std::sync::Arc;

use tokio::sync::RwLock;

use super::config::AuthMode;

pub const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";

#[derive(Debug, thiserror::Error)]
#[error(
    "no Google credentials: {0} (set GOOGLE_APPLICATION_CREDENTIALS, run on GKE with Workload Identity, or KINETIC_GCP_AUTH=none for an emulator)"
)]
pub struct TokenError(pub String);

#[derive(Clone)]
pub struct TokenSource {
    mode: AuthMode,
    provider: Arc<RwLock<Option<Arc<dyn gcp_auth::TokenProvider>>>>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("mode", &self.mode)
            .finish()
    }
}

impl TokenSource {
    pub fn new(mode: AuthMode) -> TokenSource {
        TokenSource {
            mode,
            provider: Arc::new(RwLock::new(None)),
        }
    }

    /// A bearer token, or `None` when this source does not authenticate.
    pub async fn token(&self) -> Result<Option<String>, TokenError> {
        if self.mode == AuthMode::None {
            return Ok(None);
        }
        let existing = self.provider.read().await.clone();
        let provider = match existing {
            Some(p) => p,
            None => {
                let mut slot = self.provider.write().await;
                match slot.clone() {
                    Some(p) => p,
                    None => {
                        let p = gcp_auth::provider()
                            .await
                            .map_err(|e| TokenError(e.to_string()))?;
                        *slot = Some(p.clone());
                        p
                    }
                }
            }
        };
        let t = provider
            .token(&[CLOUD_PLATFORM])
            .await
            .map_err(|e| TokenError(e.to_string()))?;
        Ok(Some(t.as_str().to_owned()))
    }

    /// Drop the cached provider (and its cached token) after a 401.
    pub async fn invalidate(&self) {
        if self.mode != AuthMode::None {
            *self.provider.write().await = None;
        }
    }
}
