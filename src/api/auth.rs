//! Turns a request into a [`Caller`]: the IAP JWT in production, the `X-Kinetic-User`
//! header in development (loopback only, enforced by `Settings`).
//!
//! Invariant: no handler that takes a `Caller` runs for an unauthenticated request.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::auth::{IAP_HEADER, IapVerifier};
use crate::domain::Email;
use crate::service::Caller;

use super::error::ApiError;

pub const DEV_USER_HEADER: &str = "x-kinetic-user";
pub const DEV_DEFAULT_USER: &str = "dev@localhost";

pub enum Mode {
    Dev,
    Iap(IapVerifier),
}

/// How this process authenticates callers, and who its service admins are.
pub struct Authenticator {
    pub mode: Mode,
    pub admins: HashSet<Email>,
    /// Per-caller limits, charged once a request is authenticated.
    pub limits: Arc<super::limits::CallerLimits>,
}

impl Authenticator {
    pub async fn authenticate(&self, parts: &Parts) -> Result<Caller, ApiError> {
        let email = match &self.mode {
            Mode::Dev => {
                let raw = match parts.headers.get(DEV_USER_HEADER) {
                    None => DEV_DEFAULT_USER,
                    Some(v) => v.to_str().map_err(|_| bad_dev_user())?,
                };
                Email::parse(raw).map_err(|_| bad_dev_user())?
            }
            Mode::Iap(v) => {
                let token = parts
                    .headers
                    .get(IAP_HEADER)
                    .map(|h| h.to_str().unwrap_or("\u{0}"));
                let id = v.verify(token).await.map_err(|e| {
                    if e.is_unavailable() {
                        // Our failure, not the caller's: the detail (key URL, network
                        // error) goes to the log, never into a 5xx body.
                        tracing::error!(reason = e.reason(), error = %e, "cannot authenticate");
                        return ApiError::new(
                            StatusCode::SERVICE_UNAVAILABLE,
                            e.reason(),
                            "cannot verify the identity token right now: the signing keys are \
                             unavailable; retry shortly (the server log has the cause)",
                        );
                    }
                    tracing::info!(reason = e.reason(), "request not authenticated");
                    ApiError::new(StatusCode::UNAUTHORIZED, e.reason(), e.to_string())
                })?;
                Email::parse(&id.email).map_err(|_| {
                    ApiError::unauthenticated(
                        "TOKEN_MISSING_EMAIL",
                        "the identity token's email claim is not an email address",
                    )
                })?
            }
        };
        let admin = self.admins.contains(&email);
        Ok(Caller { email, admin })
    }
}

fn bad_dev_user() -> ApiError {
    ApiError::unauthenticated(
        "BAD_DEV_USER",
        format!("{DEV_USER_HEADER} must be an email address such as alice@example.com"),
    )
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
        auth.limits.charge(&caller.email)?;
        parts.extensions.insert(caller.clone());
        Ok(caller)
    }
}
