//! Custom methods (AIP-136) share a path segment with their resource (`{id}:verb`), so
//! the router cannot tell `GET .../x:cancel` from a read of a resource called
//! `x:cancel`. This layer answers a wrong HTTP method on a documented custom method with
//! 405 and the right `Allow` header before any handler runs.
//!
//! Invariant: the table is built from the OpenAPI document, so every documented
//! `:verb` route is covered and none is listed twice.

use axum::extract::Request;
use axum::http::header::ALLOW;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::route_table::RouteTable;

/// The methods a custom-method path allows, if `path` is one.
fn allowed(routes: &RouteTable, path: &str) -> Option<Vec<Method>> {
    // Only a last segment with a `:` can be a custom method's (`{id}:verb`): the table
    // is not consulted for any other path (most requests).
    if !path
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
    {
        return None;
    }
    let route = routes.find(path).filter(|r| r.is_custom_method())?;
    Some(route.ops.iter().map(|o| o.method.clone()).collect())
}

/// The 405 with `Allow` for a documented custom method called with another verb.
pub fn method_refusal(routes: &RouteTable, req: &Request) -> Option<Response> {
    let methods = allowed(routes, req.uri().path())?;
    if methods.contains(req.method()) {
        return None;
    }
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
    Some(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_methods_list_their_documented_methods() {
        let routes = RouteTable::of_app();
        assert_eq!(
            allowed(&routes, "/v1/operations/abc:cancel"),
            Some(vec![Method::POST])
        );
        assert_eq!(
            allowed(&routes, "/v1/operations/abc:watch"),
            Some(vec![Method::GET])
        );
        assert_eq!(allowed(&routes, "/v1/operations/abc"), None);
        assert_eq!(allowed(&routes, "/v1/operations/:cancel"), None);
    }
}
