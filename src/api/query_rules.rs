//! Unknown query parameters fail closed. A misspelt `validateOnly` (Google's own
//! `validate_only`, or `validateonly`) would otherwise be ignored and the request run for
//! real; an internal tool's typo must never spend money.
//!
//! Invariant: a request to a documented route whose query names a parameter the
//! document does not list for its method is refused with 400 INVALID_ARGUMENT
//! `UNKNOWN_QUERY_PARAMETER` before any handler runs (nothing is read, written or
//! enqueued); the error names the parameter, the nearest documented spelling when one
//! is close, and every parameter the method takes. Paths the document does not have
//! (the console, `/docs`) are not checked here.

use axum::extract::Request;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::route_table::RouteTable;

pub const REASON: &str = "UNKNOWN_QUERY_PARAMETER";

/// A spelling compared without case, `_` or `-`: `validate_only` is `validateOnly`.
fn folded(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The documented parameter `name` most likely meant, if one is close.
fn nearest<'a>(name: &str, known: &'a [String]) -> Option<&'a str> {
    let f = folded(name);
    known
        .iter()
        .map(|k| (strsim::levenshtein(&f, &folded(k)), k))
        .filter(|(d, k)| *d <= 2 && *d < k.len() / 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.as_str())
}

/// The names in a query string, decoded, in order (a name given twice is named once).
fn names(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (k, _) in url::form_urlencoded::parse(query.as_bytes()) {
        if !out.iter().any(|n| *n == k) {
            out.push(k.into_owned());
        }
    }
    out
}

/// The refusal of `name` on `method path`, if the document does not list it.
fn check(
    routes: &RouteTable,
    method: &axum::http::Method,
    path: &str,
    query: &str,
) -> Result<(), ApiError> {
    let Some(route) = routes.find(path) else {
        return Ok(());
    };
    let Some(op) = route.op(method) else {
        return Ok(()); // 405 is the router's to answer
    };
    let Some(unknown) = names(query).into_iter().find(|n| !op.query.contains(n)) else {
        return Ok(());
    };
    let takes = if op.query.is_empty() {
        "it takes no query parameters".to_owned()
    } else {
        format!("it takes {}", op.query.join(", "))
    };
    let hint = nearest(&unknown, &op.query);
    let message = format!(
        "unknown query parameter {unknown:?} on {method} {}{}; {takes}. Nothing was done",
        route.path,
        hint.map(|h| format!(" (did you mean {h:?}?)"))
            .unwrap_or_default(),
    );
    let mut err = ApiError::invalid(REASON, message)
        .with("parameter", &unknown)
        .with("allowed", op.query.join(","));
    if let Some(h) = hint {
        err = err.with("suggestion", h);
    }
    Err(err)
}

/// The 400 for a query parameter the route's document does not list.
pub fn refusal(routes: &RouteTable, req: &Request) -> Option<Response> {
    let query = req.uri().query().filter(|q| !q.is_empty())?;
    check(routes, req.method(), req.uri().path(), query)
        .err()
        .map(IntoResponse::into_response)
}

#[cfg(test)]
mod tests {
    use axum::http::Method;

    use super::*;

    #[test]
    fn close_spellings_are_suggested() {
        let known = ["validateOnly", "requestId"].map(String::from);
        assert_eq!(nearest("validate_only", &known), Some("validateOnly"));
        assert_eq!(nearest("validateonly", &known), Some("validateOnly"));
        assert_eq!(nearest("valdateOnly", &known), Some("validateOnly"));
        assert_eq!(nearest("request-id", &known), Some("requestId"));
        assert_eq!(nearest("force", &known), None);
        assert_eq!(nearest("x", &["y".to_owned()]), None);
    }

    #[test]
    fn names_are_decoded_and_named_once() {
        assert_eq!(names("a=1&b%5F=2&a=3&c"), vec!["a", "b_", "c"]);
    }

    #[test]
    fn documented_parameters_pass_and_others_are_refused() {
        let r = RouteTable::of_app();
        let up = "/v1/projects/p/zones/z/clusters/c";
        assert!(check(&r, &Method::PUT, up, "validateOnly=true&requestId=x").is_ok());
        let e = check(&r, &Method::PUT, up, "validate_only=true").unwrap_err();
        assert_eq!(e.reason, REASON);
        assert_eq!(e.metadata["parameter"], "validate_only");
        assert_eq!(e.metadata["suggestion"], "validateOnly");
        assert!(
            e.message.contains("did you mean \"validateOnly\""),
            "{}",
            e.message
        );
        let e = check(&r, &Method::GET, "/v1/teams/t", "pageSize=1").unwrap_err();
        assert!(
            e.message.contains("takes no query parameters"),
            "{}",
            e.message
        );
        assert!(check(&r, &Method::GET, "/v1/teams", "pageSize=1").is_ok());
        assert!(check(&r, &Method::GET, "/console/anything", "x=1").is_ok());
    }
}
