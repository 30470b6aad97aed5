//! The checks every request passes before routing, against the route table built from
//! the OpenAPI document: the HTTP method of a custom method ([`super::verbs`]), requests
//! another site may have sent ([`super::cross_site`]), unknown query parameters
//! ([`super::query_rules`]).
//!
//! Invariant: one middleware runs the three in that order and the first refusal is the
//! answer; a request none refuses reaches the router unchanged. (One layer, not three:
//! each axum layer costs a request a boxed future and a clone of the service below.)

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::route_table::RouteTable;
use super::{cross_site, query_rules, verbs};

/// Middleware: the first refusal of the three checks, or the router's answer.
pub async fn admit(State(routes): State<RouteTable>, req: Request, next: Next) -> Response {
    let refusal = verbs::method_refusal(&routes, &req)
        .or_else(|| cross_site::refusal(&routes, &req))
        .or_else(|| query_rules::refusal(&routes, &req));
    match refusal {
        Some(resp) => resp,
        None => next.run(req).await,
    }
}
