//! The OpenAPI document's routes as the table the layers consult before any handler
//! runs: path templates, AIP-136 custom methods (`{id}:verb`) included, matched against
//! request paths; each with its methods, whether a method takes a body, and the query
//! parameters it documents.
//!
//! Invariant: built from the published document alone, so what the layers enforce (405
//! on a custom method's wrong verb, 403 on a bodyless POST sent as a form, 400 on an
//! unknown query parameter) is what the document says; a path matches the most specific
//! template (a `{id}:verb` over a plain `{id}`).

use std::sync::Arc;

use axum::http::Method;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::{OpenApi, PathItem, RefOr};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}`: any non-empty segment.
    Param,
    /// `{name}:verb`: a non-empty segment ending in `:verb`.
    ParamVerb(String),
}

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

/// Whether `path` is an instance of `template` (no allocation: run for every route on
/// every request that consults the table).
fn matches(template: &[Segment], path: &str) -> bool {
    let mut parts = path.trim_start_matches('/').split('/');
    template.iter().all(|t| {
        parts.next().is_some_and(|p| match t {
            Segment::Literal(l) => l == p,
            Segment::Param => !p.is_empty(),
            Segment::ParamVerb(v) => p
                .strip_suffix(v.as_str())
                .and_then(|rest| rest.strip_suffix(':'))
                .is_some_and(|id| !id.is_empty()),
        })
    }) && parts.next().is_none()
}

/// One documented method of a route.
#[derive(Debug, Clone)]
pub struct Op {
    pub method: Method,
    /// Whether the document gives it a request body.
    pub has_body: bool,
    /// The query parameters it documents, in document order.
    pub query: Vec<String>,
}

/// One documented path.
#[derive(Debug, Clone)]
pub struct Route {
    /// The template as published, e.g. `/v1/operations/{operation}:cancel`.
    pub path: String,
    template: Vec<Segment>,
    pub ops: Vec<Op>,
}

impl Route {
    /// Whether the route is a custom method (`{id}:verb`).
    pub fn is_custom_method(&self) -> bool {
        matches!(self.template.last(), Some(Segment::ParamVerb(_)))
    }

    /// The documented method `m` (HEAD is GET's).
    pub fn op(&self, m: &Method) -> Option<&Op> {
        let m = if m == Method::HEAD { &Method::GET } else { m };
        self.ops.iter().find(|o| o.method == *m)
    }

    /// How specific the template is: its literal segments and verbs.
    fn specificity(&self) -> usize {
        self.template
            .iter()
            .filter(|s| !matches!(s, Segment::Param))
            .count()
    }
}

/// Every route of the document.
#[derive(Debug, Clone, Default)]
pub struct RouteTable(Arc<Vec<Route>>);

fn op(method: Method, o: &Operation) -> Op {
    let query = o
        .parameters
        .iter()
        .flatten()
        .filter_map(|p| match p {
            RefOr::T(p) if matches!(p.parameter_in, ParameterIn::Query) => Some(p.name.clone()),
            _ => None,
        })
        .collect();
    Op {
        method,
        has_body: o.request_body.is_some(),
        query,
    }
}

fn ops(item: &PathItem) -> Vec<Op> {
    [
        (Method::GET, &item.get),
        (Method::PUT, &item.put),
        (Method::POST, &item.post),
        (Method::DELETE, &item.delete),
        (Method::PATCH, &item.patch),
    ]
    .into_iter()
    .filter_map(|(m, o)| o.as_ref().map(|o| op(m, o)))
    .collect()
}

impl RouteTable {
    pub fn from_openapi(doc: &OpenApi) -> RouteTable {
        let routes = doc
            .paths
            .paths
            .iter()
            .map(|(path, item)| Route {
                path: path.clone(),
                template: parse_template(path),
                ops: ops(item),
            })
            .collect();
        RouteTable(Arc::new(routes))
    }

    /// The table of the app's own routes (development-only ones included).
    pub fn of_app() -> RouteTable {
        let (_, doc) = super::openapi::router().split_for_parts();
        RouteTable::from_openapi(&doc)
    }

    /// The route `path` is, if the document has one.
    pub fn find(&self, path: &str) -> Option<&Route> {
        self.0
            .iter()
            .filter(|r| matches(&r.template, path))
            .max_by_key(|r| r.specificity())
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
    fn a_custom_method_wins_over_its_resource() {
        let t = RouteTable::of_app();
        let r = t.find("/v1/operations/abc:cancel").unwrap();
        assert_eq!(r.path, "/v1/operations/{operation}:cancel");
        assert!(r.is_custom_method());
        let r = t.find("/v1/operations/abc").unwrap();
        assert_eq!(r.path, "/v1/operations/{operation}");
        assert!(!r.is_custom_method());
        // An undocumented verb is the resource's path (its handler answers 404).
        let r = t.find("/v1/operations/abc:bogus").unwrap();
        assert_eq!(r.path, "/v1/operations/{operation}");
        assert!(t.find("/v1/nothing").is_none());
    }

    #[test]
    fn methods_bodies_and_query_parameters_are_the_documents() {
        let t = RouteTable::of_app();
        let r = t.find("/v1/projects/p/zones/z/clusters/c").unwrap();
        let put = r.op(&Method::PUT).unwrap();
        assert!(put.has_body);
        assert!(put.query.contains(&"validateOnly".to_owned()), "{put:?}");
        assert!(r.op(&Method::HEAD).is_some(), "HEAD is GET's");
        assert!(r.op(&Method::POST).is_none());
        let cancel = t.find("/v1/operations/x:cancel").unwrap();
        assert!(!cancel.op(&Method::POST).unwrap().has_body);
    }
}
