//! The panic layer: a handler that panics answers a Google-shaped 500 carrying the
//! request id, instead of a dropped connection.
//!
//! Invariant: no panic in a handler reaches the client as an empty reply; the panic's
//! message goes to the log (under the request id), never into the response.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;

use super::error::ApiError;

/// The header [`crate::app`] stamps on every request.
const REQUEST_ID: &str = "x-request-id";

/// Middleware: run the rest of the stack, turning a panic into [`panicked`].
pub async fn catch_panic(req: Request, next: Next) -> Response {
    // The header value itself (a reference count), read as text only on a panic.
    let id = req.headers().get(REQUEST_ID).cloned();
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(payload) => {
            let id = id.as_ref().and_then(|v| v.to_str().ok()).unwrap_or("");
            panicked(id, payload.as_ref()).into_response()
        }
    }
}

/// The 500 for a panic: logged with its message, answered without it.
fn panicked(request_id: &str, payload: &(dyn Any + Send)) -> ApiError {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned());
    tracing::error!(request_id, panic = %what, "request handler panicked");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "INTERNAL",
        format!(
            "internal error; the server log has the cause under request id {request_id}: report it with that id"
        ),
    )
    .with("requestId", request_id)
}
