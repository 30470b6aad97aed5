//! The rendered API reference (`/docs`, Swagger UI) and the document it reads
//! (`/openapi.json`).
//!
//! Invariant: no response under these routes may be framed by another page
//! (`X-Frame-Options: DENY` and `Content-Security-Policy: frame-ancestors 'none'`): the
//! page's "Try it out" buttons act with the viewer's IAP session, so a framing site could
//! trick a click into a call. The page itself needs its inline initializer, so the
//! policy restricts framing only.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use utoipa::openapi::OpenApi;
use utoipa_swagger_ui::SwaggerUi;

/// `/docs` and `/openapi.json` for `doc`, with the anti-framing headers.
pub fn router<S: Clone + Send + Sync + 'static>(doc: OpenApi) -> Router<S> {
    Router::from(SwaggerUi::new("/docs").url("/openapi.json", doc))
        .layer(axum::middleware::map_response(no_framing))
}

async fn no_framing(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("frame-ancestors 'none'"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}
