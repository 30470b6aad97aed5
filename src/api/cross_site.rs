//! Cross-site requests. A page on another site can make a browser send a POST (an HTML
//! form, or a `no-cors` fetch) that carries the user's IAP session, and IAP then vouches
//! for it. A JSON body cannot be sent that way (it needs a CORS preflight, which no route
//! answers), so routes that take one are safe; a POST that takes no body (`:cancel`,
//! `:activate`, `:diagnose`, `:wait`) is not, and neither is any mutation a browser marks
//! as another site's.
//!
//! Invariant: under `/v1/`, no request of a method other than GET, HEAD or OPTIONS runs
//! when the browser marks it as another site's (`Sec-Fetch-Site: cross-site` or
//! `same-site`) or it carries an `Origin` other than this host's (an opaque `null` passes
//! only with `Sec-Fetch-Site: same-origin`); and no POST that the OpenAPI document
//! declares without a body runs with a `Content-Type` other than JSON (what a form sends,
//! from a browser too old to send either header). Each is refused with 403
//! PERMISSION_DENIED CROSS_SITE_REQUEST before any handler runs. curl and generated
//! clients (no `Origin`, no `Sec-Fetch-Site`, no body or a JSON one) pass.

use axum::extract::Request;
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::extract::json_content_type;
use super::route_table::RouteTable;

pub const REASON: &str = "CROSS_SITE_REQUEST";

/// Whether the document's POST at `path` takes no body.
fn bodyless_post(routes: &RouteTable, path: &str) -> bool {
    routes
        .find(path)
        .and_then(|r| r.op(&Method::POST))
        .is_some_and(|o| !o.has_body)
}

fn header(headers: &HeaderMap, name: impl axum::http::header::AsHeaderName) -> &str {
    headers
        .get(name)
        .map_or("", |v| v.to_str().unwrap_or("\u{0}"))
}

/// Why `req` looks like another site's, if it does.
fn cross_site(req: &Request, routes: &RouteTable) -> Option<String> {
    let h = req.headers();
    let fetch_site = header(h, "sec-fetch-site");
    if matches!(fetch_site, "cross-site" | "same-site") {
        return Some("the browser says it was sent from another site".to_owned());
    }
    if h.contains_key(ORIGIN) {
        let origin = header(h, ORIGIN);
        let same = if origin == "null" {
            fetch_site == "same-origin"
        } else {
            origin
                .split_once("://")
                .is_some_and(|(_, host)| host.eq_ignore_ascii_case(header(h, HOST)))
        };
        if !same {
            return Some(format!(
                "it was sent from another origin ({origin:?}, not this server's)"
            ));
        }
    }
    if req.method() == Method::POST
        && h.contains_key(CONTENT_TYPE)
        && !json_content_type(h)
        && bodyless_post(routes, req.uri().path())
    {
        return Some(format!(
            "POST {} takes no body, and a {:?} one is what another site's form sends; \
             send it with no body (or a JSON one)",
            req.uri().path(),
            header(h, CONTENT_TYPE)
        ));
    }
    None
}

/// The refusal of a mutation that another site's page may have sent.
pub fn refusal(routes: &RouteTable, req: &Request) -> Option<Response> {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if safe || !req.uri().path().starts_with("/v1/") {
        return None;
    }
    let why = cross_site(req, routes)?;
    Some(
        ApiError::new(
            StatusCode::FORBIDDEN,
            REASON,
            format!(
                "{} {} was refused: {why}. The API takes changes from its own pages, \
                 scripts and API clients only",
                req.method(),
                req.uri().path()
            ),
        )
        .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documents_bodyless_posts_are_listed() {
        let routes = RouteTable::of_app();
        for path in [
            "/v1/operations/x:cancel",
            "/v1/operations/x:wait",
            "/v1/profiles/work:activate",
            "/v1/projects/p/zones/z/clusters/c:diagnose",
        ] {
            assert!(bodyless_post(&routes, path), "{path}");
        }
        for path in [
            "/v1/teams",
            "/v1/projects/p/zones/z/clusters/c:checkWorkload",
            "/v1/testing/noopOperations",
        ] {
            assert!(!bodyless_post(&routes, path), "{path}");
        }
    }
}
