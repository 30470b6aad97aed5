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

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::extract::json_content_type;

pub const REASON: &str = "CROSS_SITE_REQUEST";

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}`: any non-empty segment.
    Param,
    /// `{name}:verb`: a non-empty segment ending in `:verb`.
    ParamVerb(String),
}

/// The path templates of the POST routes that take no body.
#[derive(Debug, Clone, Default)]
pub struct BodylessPosts(Arc<Vec<Vec<Segment>>>);

fn parse_template(path: &str) -> Vec<Segment> {
    path.trim_start_matches('/')
        .split('/')
        .map(|s| match (s.starts_with('{'), s.split_once("}:")) {
            (true, Some((_, verb))) => Segment::ParamVerb(verb.to_owned()),
            (true, None) => Segment::Param,
            (false, _) => Segment::Literal(s.to_owned()),
        })
        .collect()
}

fn matches(template: &[Segment], path: &str) -> bool {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    template.len() == parts.len()
        && template.iter().zip(parts).all(|(t, p)| match t {
            Segment::Literal(l) => l == p,
            Segment::Param => !p.is_empty(),
            Segment::ParamVerb(v) => p
                .strip_suffix(v.as_str())
                .and_then(|rest| rest.strip_suffix(':'))
                .is_some_and(|id| !id.is_empty()),
        })
}

impl BodylessPosts {
    /// Every POST of `doc` without a request body.
    pub fn from_openapi(doc: &utoipa::openapi::OpenApi) -> BodylessPosts {
        let table = doc
            .paths
            .paths
            .iter()
            .filter(|(_, item)| item.post.as_ref().is_some_and(|p| p.request_body.is_none()))
            .map(|(path, _)| parse_template(path))
            .collect();
        BodylessPosts(Arc::new(table))
    }

    fn contains(&self, path: &str) -> bool {
        self.0.iter().any(|t| matches(t, path))
    }
}

fn header(headers: &HeaderMap, name: impl axum::http::header::AsHeaderName) -> &str {
    headers
        .get(name)
        .map_or("", |v| v.to_str().unwrap_or("\u{0}"))
}

/// Why `req` looks like another site's, if it does.
fn cross_site(req: &Request, bodyless: &BodylessPosts) -> Option<String> {
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
        && bodyless.contains(req.uri().path())
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

/// Middleware: refuse a mutation that another site's page may have sent.
pub async fn refuse(State(bodyless): State<BodylessPosts>, req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if safe || !req.uri().path().starts_with("/v1/") {
        return next.run(req).await;
    }
    match cross_site(&req, &bodyless) {
        None => next.run(req).await,
        Some(why) => ApiError::new(
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_their_paths_only() {
        let t = parse_template("/v1/operations/{operation}:cancel");
        assert!(matches(&t, "/v1/operations/abc:cancel"));
        assert!(!matches(&t, "/v1/operations/:cancel"));
        assert!(!matches(&t, "/v1/operations/abc:wait"));
        assert!(!matches(&t, "/v1/operations/abc"));
        assert!(!matches(&t, "/v1/operations/a/b:cancel"));
        let t = parse_template("/v1/teams/{team}");
        assert!(matches(&t, "/v1/teams/acme"));
        assert!(!matches(&t, "/v1/teams/"));
    }

    #[test]
    fn the_documents_bodyless_posts_are_listed() {
        let (_, doc) = super::super::openapi::router().split_for_parts();
        let b = BodylessPosts::from_openapi(&doc);
        for path in [
            "/v1/operations/x:cancel",
            "/v1/operations/x:wait",
            "/v1/profiles/work:activate",
            "/v1/projects/p/zones/z/clusters/c:diagnose",
        ] {
            assert!(b.contains(path), "{path}");
        }
        for path in [
            "/v1/teams",
            "/v1/projects/p/zones/z/clusters/c:checkWorkload",
            "/v1/testing/noopOperations",
        ] {
            assert!(!b.contains(path), "{path}");
        }
    }
}
