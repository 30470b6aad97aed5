//! Turns a request into a [`Caller`] for the JSON API: the shared
//! [`crate::auth::Authenticator`] decides who is calling (the IAP JWT in production, the
//! `X-Kinetic-User` header in development); this module renders a refusal as an API
//! error and charges the caller's limits.
//!
//! Invariant: no handler that takes a `Caller` runs for an unauthenticated request.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::auth::Rejected;
pub use crate::auth::{DEV_DEFAULT_USER, DEV_USER_HEADER, Mode};
use crate::service::Caller;

use super::error::ApiError;

/// The shared authenticator, plus what only the API charges per caller.
pub struct Authenticator {
    pub identity: Arc<crate::auth::Authenticator>,
    /// Per-caller limits (shared with the console), charged once a request is
    /// authenticated, and the request deadline.
    pub limits: Arc<super::limits::ApiLimits>,
}

impl Authenticator {
    pub async fn authenticate(&self, parts: &Parts) -> Result<Caller, ApiError> {
        let p = self
            .identity
            .authenticate(&parts.headers, None)
            .await
            .map_err(refusal)?;
        Ok(Caller {
            email: p.email,
            admin: p.admin,
        })
    }
}

fn refusal(r: Rejected) -> ApiError {
    let status = if r.is_unavailable() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::UNAUTHORIZED
    };
    ApiError::new(status, r.reason(), r.to_string())
}

/// Anything that can authenticate (the app state).
pub trait HasAuth {
    fn authenticator(&self) -> &Arc<Authenticator>;
}

impl<S> FromRequestParts<S> for Caller
where
    S: HasAuth + Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Some(c) = parts.extensions.get::<Caller>() {
            return Ok(c.clone());
        }
        let auth = state.authenticator();
        let caller = auth.authenticate(parts).await?;
        crate::service::audit::note_actor(&caller.email);
        auth.limits.charge(&caller.email)?;
        parts.extensions.insert(caller.clone());
        Ok(caller)
    }
}
