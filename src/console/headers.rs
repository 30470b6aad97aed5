//! Security headers on every console response (pages, errors, redirects, assets).
//!
//! Invariant: the Content-Security-Policy allows scripts, styles, images and
//! connections from our own origin only, no inline script or style, no framing, and
//! forms that post only to us; pages are never cached (they show a caller's data),
//! assets set their own cache policy.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

pub async fn middleware(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    let h = resp.headers_mut();
    let set = |h: &mut axum::http::HeaderMap, name: HeaderName, v: &'static str| {
        h.insert(name, HeaderValue::from_static(v));
    };
    set(h, header::CONTENT_SECURITY_POLICY, CSP);
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    // `same-origin`, not `no-referrer`: under `no-referrer` browsers send `Origin: null`
    // on our own form POSTs, which the cross-site check must then refuse.
    set(h, header::REFERRER_POLICY, "same-origin");
    set(h, header::X_FRAME_OPTIONS, "DENY");
    set(
        h,
        HeaderName::from_static("cross-origin-opener-policy"),
        "same-origin",
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        set(h, header::CACHE_CONTROL, "no-store");
    }
    resp
}
