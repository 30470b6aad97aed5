//! Console errors as HTML pages: the service's status, reason and message, as the API
//! would send them, in a page a person can read.
//!
//! Invariant: a console error is never JSON and never carries more than the service's
//! error does (an INTERNAL error's cause stays in the log); a refusal that names a wait
//! (the per-caller limits) says it in `Retry-After`, as the API does.

use askama::Template;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::auth::limits::Refused;
use crate::domain::{NameError, RpcCode};
use crate::service;

#[derive(Debug, Clone)]
pub struct PageError {
    pub status: StatusCode,
    pub reason: String,
    pub message: String,
    /// Seconds to wait before trying again (`Retry-After`).
    pub retry_after: Option<u64>,
}

impl PageError {
    pub fn new(status: StatusCode, reason: &str, message: impl Into<String>) -> PageError {
        PageError {
            status,
            reason: reason.to_owned(),
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn not_found(message: impl Into<String>) -> PageError {
        PageError::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }
}

/// The HTTP status the API answers a code with (a refused precondition is 409).
pub fn http_status(code: RpcCode) -> StatusCode {
    match code {
        RpcCode::FailedPrecondition => StatusCode::CONFLICT,
        c => StatusCode::from_u16(c.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

impl From<service::Error> for PageError {
    fn from(e: service::Error) -> PageError {
        PageError {
            status: http_status(e.code),
            reason: e.reason,
            message: e.message,
            retry_after: None,
        }
    }
}

/// A per-caller limit's refusal: 429, as the API answers it.
impl From<Refused> for PageError {
    fn from(r: Refused) -> PageError {
        PageError {
            retry_after: Some(r.retry_after()),
            ..PageError::new(StatusCode::TOO_MANY_REQUESTS, r.reason(), r.to_string())
        }
    }
}

impl From<NameError> for PageError {
    fn from(e: NameError) -> PageError {
        service::Error::from(e).into()
    }
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    status: u16,
    title: &'a str,
    reason: &'a str,
    message: &'a str,
    version: &'a str,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let page = ErrorPage {
            status: self.status.as_u16(),
            title: self.status.canonical_reason().unwrap_or("Error"),
            reason: &self.reason,
            message: &self.message,
            version: super::ASSETS_VERSION,
        };
        let mut resp = match page.render() {
            Ok(html) => (self.status, Html(html)).into_response(),
            Err(e) => {
                tracing::error!(error = %e, "rendering the error page");
                (self.status, self.message).into_response()
            }
        };
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp.extensions_mut()
            .insert(service::audit::Refusal(self.reason));
        resp
    }
}

/// Any console path that is not a page.
pub async fn not_found(uri: axum::http::Uri) -> PageError {
    PageError::new(
        StatusCode::NOT_FOUND,
        "ROUTE_NOT_FOUND",
        format!("no console page at {}", uri.path()),
    )
}
