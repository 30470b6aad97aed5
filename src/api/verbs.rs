//! Custom methods (AIP-136) share a path segment with their resource (`{id}:verb`), so
//! the router cannot tell `GET .../x:cancel` from a read of a resource called
//! `x:cancel`. This layer answers a wrong HTTP method on a documented custom method with
//! 405 and the right `Allow` header before any handler runs.
//!
//! Invariant: the table is built from the OpenAPI document, so every documented
//! `:verb` route is covered and none is listed twice.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::ALLOW;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Segment {
    Literal(String),
    Param,
}

/// A custom method's resource path and verb.
type VerbKey = (Vec<Segment>, String);

/// `(resource segments, verb)` -> the methods documented for it.
#[derive(Debug, Clone, Default)]
pub struct VerbRoutes(Arc<BTreeMap<VerbKey, Vec<Method>>>);

fn methods_of(item: &utoipa::openapi::PathItem) -> Vec<Method> {
    [
        (Method::GET, item.get.is_some()),
        (Method::PUT, item.put.is_some()),
        (Method::POST, item.post.is_some()),
        (Method::DELETE, item.delete.is_some()),
        (Method::PATCH, item.patch.is_some()),
    ]
    .into_iter()
    .filter_map(|(m, has)| has.then_some(m))
    .collect()
}

/// `/v1/operations/{operation}:cancel` -> (["v1", "operations", Param], "cancel").
fn parse_template(path: &str) -> Option<(Vec<Segment>, String)> {
    let (resource, verb) = path.rsplit_once("}:")?;
    let mut segments: Vec<Segment> = resource
        .trim_start_matches('/')
        .split('/')
        .map(|s| {
            if s.starts_with('{') {
                Segment::Param
            } else {
                Segment::Literal(s.to_owned())
            }
        })
        .collect();
    // The last segment was `{name` (its `}` went with the split).
    if let Some(last) = segments.last_mut() {
        *last = Segment::Param;
    }
    Some((segments, verb.to_owned()))
}

fn matches(template: &[Segment], path: &[&str]) -> bool {
    template.len() == path.len()
        && template.iter().zip(path).all(|(t, p)| match t {
            Segment::Param => !p.is_empty(),
            Segment::Literal(l) => l == p,
        })
}

impl VerbRoutes {
    /// Every `{param}:verb` path of `doc`.
    pub fn from_openapi(doc: &utoipa::openapi::OpenApi) -> VerbRoutes {
        let table = doc
            .paths
            .paths
            .iter()
            .filter_map(|(path, item)| Some((parse_template(path)?, methods_of(item))))
            .collect();
        VerbRoutes(Arc::new(table))
    }

    /// The methods a custom-method path allows, if `path` is one.
    fn allowed(&self, path: &str) -> Option<&[Method]> {
        let (resource, verb) = path.rsplit_once(':')?;
        let segments: Vec<&str> = resource.trim_start_matches('/').split('/').collect();
        self.0
            .iter()
            .find(|((t, v), _)| v == verb && matches(t, &segments))
            .map(|(_, m)| m.as_slice())
    }
}

/// Middleware: 405 with `Allow` for a documented custom method called with another verb.
pub async fn check_method(State(routes): State<VerbRoutes>, req: Request, next: Next) -> Response {
    let allowed = routes.allowed(req.uri().path());
    match allowed {
        Some(methods) if !methods.contains(req.method()) => {
            let allow = methods
                .iter()
                .map(Method::as_str)
                .collect::<Vec<_>>()
                .join(",");
            let mut resp = ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                format!(
                    "{} is not supported on {}; use {allow}",
                    req.method(),
                    req.uri().path()
                ),
            )
            .into_response();
            if let Ok(v) = HeaderValue::from_str(&allow) {
                resp.headers_mut().insert(ALLOW, v);
            }
            resp
        }
        _ => next.run(req).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let (segs, verb) = parse_template("/v1/operations/{operation}:cancel").unwrap();
        assert_eq!(verb, "cancel");
        assert_eq!(
            segs,
            vec![
                Segment::Literal("v1".into()),
                Segment::Literal("operations".into()),
                Segment::Param
            ]
        );
        assert!(parse_template("/v1/operations/{operation}").is_none());
        assert!(matches(&segs, &["v1", "operations", "abc"]));
        assert!(!matches(&segs, &["v1", "profiles", "abc"]));
        assert!(!matches(&segs, &["v1", "operations", ""]));
    }
}
