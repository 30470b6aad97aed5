//! A tower layer under every Kubernetes client: each request to a cluster's API server
//! is counted and timed as a cloud call of service `kubernetes` and logged at debug
//! (inside the step's span when a step made it).
//!
//! Invariant: the `method` label is `<resource>.<verb>` (`deployments.patch`,
//! `pods.list`, `version.get`) derived from the request path with namespaces and object
//! names dropped, so it stays a bounded set.

use std::task::{Context, Poll};
use std::time::Instant;

use axum::http::{Method, Request, Response, Uri};
use futures::future::BoxFuture;
use tower::{Layer, Service};

use crate::cloud::call_metrics;
use crate::cloud::gcp::error::status_for_http;

const SERVICE: &str = "kubernetes";

#[derive(Clone, Copy, Debug, Default)]
pub struct MeteredLayer;

impl<S> Layer<S> for MeteredLayer {
    type Service = Metered<S>;

    fn layer(&self, inner: S) -> Metered<S> {
        Metered(inner)
    }
}

#[derive(Clone, Debug)]
pub struct Metered<S>(S);

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Metered<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let method = method_name(req.method(), req.uri());
        let started = Instant::now();
        let fut = self.0.call(req);
        Box::pin(async move {
            let r = fut.await;
            let outcome = match &r {
                Ok(resp) if resp.status().is_success() => "OK",
                Ok(resp) => status_for_http(resp.status().as_u16()),
                Err(_) => "TRANSPORT",
            };
            let elapsed = started.elapsed();
            call_metrics::record(SERVICE, &method, outcome, elapsed);
            tracing::debug!(service = SERVICE, method = %method, outcome,
                elapsed_ms = elapsed.as_millis() as u64, "cloud call");
            r
        })
    }
}

/// `PATCH /apis/apps/v1/namespaces/ns/deployments/x` -> `deployments.patch`;
/// `GET /api/v1/nodes` -> `nodes.list`; `GET /version` -> `version.get`.
pub fn method_name(method: &Method, uri: &Uri) -> String {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let rest: &[&str] = match segments.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        ["version", ..] => return "version.get".to_owned(),
        _ => return format!("discovery.{}", verb(method, false, uri)),
    };
    let rest = match rest {
        ["namespaces", _ns, tail @ ..] if !tail.is_empty() => tail,
        other => other,
    };
    let (resource, named) = match rest {
        [] => return format!("discovery.{}", verb(method, false, uri)),
        [resource] => (resource.to_string(), false),
        [resource, _name] => (resource.to_string(), true),
        [resource, _name, sub, ..] => (format!("{resource}/{sub}"), true),
    };
    format!("{resource}.{}", verb(method, named, uri))
}

fn verb(method: &Method, named: bool, uri: &Uri) -> &'static str {
    let watch = uri
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    match *method {
        Method::GET if watch => "watch",
        Method::GET if named => "get",
        Method::GET => "list",
        Method::POST => "create",
        Method::PUT => "replace",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names_drop_namespaces_and_object_names() {
        for (m, uri, want) in [
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/lws-system/deployments/lws?fieldManager=k",
                "deployments.patch",
            ),
            (Method::GET, "/api/v1/nodes", "nodes.list"),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods?watch=true",
                "pods.watch",
            ),
            (Method::GET, "/api/v1/namespaces/a", "namespaces.get"),
            (Method::GET, "/api/v1/namespaces", "namespaces.list"),
            (
                Method::GET,
                "/apis/apps/v1/namespaces/a/deployments/d/status",
                "deployments/status.get",
            ),
            (Method::DELETE, "/api/v1/namespaces/a/pods/p", "pods.delete"),
            (Method::GET, "/version", "version.get"),
            (Method::GET, "/apis", "discovery.list"),
            (Method::GET, "/apis/apps/v1", "discovery.list"),
        ] {
            let uri: Uri = uri.parse().expect("uri");
            assert_eq!(method_name(&m, &uri), want, "{uri}");
        }
    }
}
