//! A console POST: the caller, the form's fields, and the CSRF checks that every
//! mutation passes before its handler runs.
//!
//! Invariant: a [`Posted`] exists only for a request whose `csrf` field verifies for the
//! session cookie it came with and the authenticated caller, and that a browser did not
//! mark as cross-site (`Sec-Fetch-Site`) or send from another origin (`Origin`).

use axum::extract::{Form, FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header};

use super::ConsoleState;
use super::error::PageError;
use super::identity::Viewer;
use super::session;

/// An accepted POST form.
pub struct Posted {
    pub viewer: Viewer,
    fields: Vec<(String, String)>,
}

impl Posted {
    /// The field's value ("" when absent; the first when repeated).
    pub fn field(&self, name: &str) -> &str {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// A checkbox: present and not "off"/"false".
    pub fn checked(&self, name: &str) -> bool {
        !matches!(self.field(name), "" | "off" | "false")
    }
}

fn refused(message: &str) -> PageError {
    PageError::new(
        StatusCode::FORBIDDEN,
        "CSRF_CHECK_FAILED",
        message.to_owned(),
    )
}

impl FromRequest<ConsoleState> for Posted {
    type Rejection = PageError;

    async fn from_request(req: Request, s: &ConsoleState) -> Result<Self, PageError> {
        let (mut parts, body) = req.into_parts();
        let headers = &parts.headers;
        if headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == "cross-site" || v == "same-site")
        {
            return Err(refused("the form was sent from another site"));
        }
        let same_origin = headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == "same-origin");
        // An opaque `Origin: null` (privacy settings, a no-referrer policy) proves
        // nothing either way: the browser's own `Sec-Fetch-Site: same-origin` decides, and
        // the form token is checked below in every case.
        if let Some(origin) = headers
            .get(header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .filter(|o| !(same_origin && *o == "null"))
        {
            let host = headers
                .get(header::HOST)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let origin_host = origin.split_once("://").map_or("", |(_, h)| h);
            if origin_host != host {
                return Err(refused("the form was sent from another origin"));
            }
        }
        let viewer = Viewer::from_request_parts(&mut parts, s).await?;
        let req = Request::from_parts(parts, body);
        let Form(fields) = Form::<Vec<(String, String)>>::from_request(req, s)
            .await
            .map_err(|e| PageError::new(e.status(), "BAD_FORM", e.body_text()))?;
        let token = fields
            .iter()
            .find(|(k, _)| k == "csrf")
            .map_or("", |(_, v)| v.as_str());
        if !session::verify(
            &s.form_key,
            &viewer.session,
            viewer.caller.email.as_str(),
            token,
        ) {
            return Err(refused(
                "the form's token does not match this session: reload the page and try again",
            ));
        }
        Ok(Posted { viewer, fields })
    }
}
