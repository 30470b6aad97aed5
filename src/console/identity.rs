//! Who is looking at a page: the shared authenticator decides (IAP in production); in
//! dev mode the console reads the acting user from a cookie the user switcher sets, then
//! the API's `X-Kinetic-User` header, then the default dev user.
//!
//! Invariants: the dev cookie is read in dev mode only; in IAP mode it changes nothing.
//! A request is charged to its caller's token bucket (the API's) once, when its
//! [`Viewer`] is first extracted, before any handler reads anything. A [`Visit`] is the
//! state and that same [`Viewer`], taken as one by the pages that read both.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;

use crate::service::Caller;

use super::ConsoleState;
use super::error::PageError;
use super::session::{self, Session};

pub const DEV_USER_COOKIE: &str = "kconsole_dev_user";

/// The authenticated caller of a console request, with its form token.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub caller: Caller,
    /// Dev mode: the page shows the user switcher.
    pub dev: bool,
    /// The form token for this session and caller (hidden field `csrf`).
    pub csrf: String,
    pub session: String,
}

impl FromRequestParts<ConsoleState> for Viewer {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, s: &ConsoleState) -> Result<Self, PageError> {
        if let Some(v) = parts.extensions.get::<Viewer>() {
            return Ok(v.clone());
        }
        let dev = s.identity.is_dev();
        let dev_user = if dev {
            session::cookie(&parts.headers, DEV_USER_COOKIE)
        } else {
            None
        };
        let p = s
            .identity
            .authenticate(&parts.headers, dev_user)
            .await
            .map_err(|r| {
                let status = if r.is_unavailable() {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::UNAUTHORIZED
                };
                PageError::new(status, r.reason(), r.to_string())
            })?;
        crate::service::audit::note_actor(&p.email);
        s.limits.charge(&p.email)?;
        let session = parts
            .extensions
            .get::<Session>()
            .map(|s| s.id.clone())
            .unwrap_or_default();
        let v = Viewer {
            csrf: session::token(&s.form_key, &session, p.email.as_str()),
            caller: Caller {
                email: p.email,
                admin: p.admin,
            },
            dev,
            session,
        };
        parts.extensions.insert(v.clone());
        Ok(v)
    }
}

/// The console's state and the [`Viewer`] of the request: what a page handler starts
/// from (`State`, then `Viewer`).
pub struct Visit(pub ConsoleState, pub Viewer);

impl FromRequestParts<ConsoleState> for Visit {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, s: &ConsoleState) -> Result<Self, PageError> {
        let v = Viewer::from_request_parts(parts, s).await?;
        Ok(Visit(s.clone(), v))
    }
}
