//! Who is calling, for every HTTP surface (the JSON API and the web console): the IAP
//! JWT in production, a development user in `--dev` (loopback only, enforced by
//! `Settings`). Each surface adds only how it reads the dev user and how it renders a
//! refusal; the decision is made here once.
//!
//! Invariant: no [`Principal`] is produced in IAP mode without exactly one
//! `x-goog-iap-jwt-assertion` header holding a verified IAP assertion
//! ([`IapVerifier::verify`]); a request with two is refused (`TOKEN_DUPLICATED`), never
//! resolved to the first or the last. In dev mode the named user must be a valid
//! [`Email`]. Either way the identity is an [`Email`]: printable ASCII, lower-cased by
//! ASCII rules.

use std::collections::HashSet;

use axum::http::HeaderMap;

use crate::domain::Email;

use super::{AuthError, IAP_HEADER, IapVerifier};

/// The API's dev identity header.
pub const DEV_USER_HEADER: &str = "x-kinetic-user";
/// Who a dev request is from when it names nobody.
pub const DEV_DEFAULT_USER: &str = "dev@localhost";

pub enum Mode {
    Dev,
    Iap(IapVerifier),
}

/// How this process authenticates callers, and who its service admins are.
pub struct Authenticator {
    pub mode: Mode,
    pub admins: HashSet<Email>,
}

/// An authenticated caller: the email and whether it is a service admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub email: Email,
    pub admin: bool,
}

/// Why a request is not authenticated.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    #[error("{DEV_USER_HEADER} must be a printable-ASCII email address such as alice@example.com")]
    BadDevUser,
    /// The signing keys could not be fetched: our failure (a 503), not the caller's.
    #[error(
        "cannot verify the identity token right now: the signing keys are unavailable; \
         retry shortly (the server log has the cause)"
    )]
    Unavailable { reason: &'static str },
    #[error("{0}")]
    Token(AuthError),
}

impl Rejected {
    /// The stable machine reason (`BAD_DEV_USER`, the IAP verifier's reasons, ...).
    pub fn reason(&self) -> &'static str {
        match self {
            Rejected::BadDevUser => "BAD_DEV_USER",
            Rejected::Unavailable { reason } => reason,
            Rejected::Token(e) => e.reason(),
        }
    }

    /// 503-class (ours) rather than 401-class (the caller's).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Rejected::Unavailable { .. })
    }
}

impl Authenticator {
    pub fn is_dev(&self) -> bool {
        matches!(self.mode, Mode::Dev)
    }

    /// Authenticate a request; in dev mode the user is `dev_user` when given, else the
    /// `X-Kinetic-User` header, else [`DEV_DEFAULT_USER`]. `dev_user` is ignored in IAP
    /// mode.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        dev_user: Option<&str>,
    ) -> Result<Principal, Rejected> {
        let email = match &self.mode {
            Mode::Dev => {
                let raw = match (dev_user, headers.get(DEV_USER_HEADER)) {
                    (Some(u), _) => u,
                    (None, None) => DEV_DEFAULT_USER,
                    (None, Some(v)) => v.to_str().map_err(|_| Rejected::BadDevUser)?,
                };
                Email::parse(raw).map_err(|_| Rejected::BadDevUser)?
            }
            Mode::Iap(v) => {
                let mut values = headers.get_all(IAP_HEADER).iter();
                let token = values.next().map(|h| h.to_str().unwrap_or("\u{0}"));
                if values.next().is_some() {
                    let e = AuthError::Duplicated;
                    tracing::warn!(reason = e.reason(), "request not authenticated");
                    return Err(Rejected::Token(e));
                }
                let id = v.verify(token).await.map_err(|e| {
                    if e.is_unavailable() {
                        // The detail (key URL, network error) goes to the log, never
                        // into a 5xx body.
                        tracing::error!(reason = e.reason(), error = %e, "cannot authenticate");
                        return Rejected::Unavailable { reason: e.reason() };
                    }
                    tracing::info!(reason = e.reason(), "request not authenticated");
                    Rejected::Token(e)
                })?;
                id.email
            }
        };
        let admin = self.admins.contains(&email);
        Ok(Principal { email, admin })
    }
}
