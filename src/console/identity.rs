//! Who is looking at a page: the shared authenticator decides (IAP in production); in
//! dev mode the console reads the acting user from a cookie the user switcher sets, then
//! the API's `X-Kinetic-User` header, then the default dev user.
//!
//! Invariants: the dev cookie is read in dev mode only; in IAP mode it changes nothing.
//! A request is charged to its caller's token bucket (the API's) once, when its
//! [`Viewer`] is first extracted, before any handler reads anything.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::domain::Email;
use crate::service::Caller;

use super::ConsoleState;
use super::error::PageError;
use super::form::Posted;
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

/// `POST /console/dev/user` (dev mode only): act as another user from now on.
pub async fn switch_user(State(s): State<ConsoleState>, p: Posted) -> Result<Response, PageError> {
    if !s.identity.is_dev() {
        return Err(PageError::not_found(
            "the user switcher exists in --dev only",
        ));
    }
    let raw = p.field("user").trim().to_owned();
    let cookie_safe = raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"@._+-".contains(&b));
    let email = Email::parse(&raw)
        .ok()
        .filter(|_| cookie_safe)
        .ok_or_else(|| {
            PageError::new(
                StatusCode::BAD_REQUEST,
                "BAD_DEV_USER",
                format!("{raw:?} is not an email address such as alice@example.com"),
            )
        })?;
    let back = p.field("back");
    let back = if back.starts_with("/console/") && !back.starts_with("/console//") {
        back.to_owned()
    } else {
        "/console/".to_owned()
    };
    let mut resp = Redirect::to(&back).into_response();
    let c = format!(
        "{DEV_USER_COOKIE}={}; Path=/console; HttpOnly; SameSite=Strict",
        email.as_str()
    );
    if let Ok(v) = HeaderValue::from_str(&c) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(resp)
}
