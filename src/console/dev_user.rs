//! `POST /console/dev/user` (dev mode only): the user switcher. It sets the cookie
//! [`super::identity`] reads in dev mode.
//!
//! Invariant: in IAP mode it answers 404 and sets nothing; the cookie holds only an
//! ASCII email made of cookie-safe characters, and the redirect stays inside the console.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::domain::Email;

use super::ConsoleState;
use super::error::PageError;
use super::form::Posted;
use super::identity::DEV_USER_COOKIE;

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
