//! What every page shares: the chrome (who is acting, the dev switcher, the form token),
//! rendering a template into a response, and small formatting helpers.
//!
//! Invariant: templates get display-ready strings; askama escapes every one of them
//! (no `|safe` anywhere), so nothing a user typed becomes markup.

use askama::Template;
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};

use super::error::PageError;
use super::identity::Viewer;

/// The page frame's data.
pub struct Chrome {
    pub title: String,
    pub user: String,
    pub admin: bool,
    pub dev: bool,
    pub csrf: String,
    /// This page's path (where the user switcher comes back to).
    pub here: String,
    pub version: &'static str,
}

impl Chrome {
    pub fn new(v: &Viewer, title: impl Into<String>, here: impl Into<String>) -> Chrome {
        Chrome {
            title: title.into(),
            user: v.caller.email.to_string(),
            admin: v.caller.admin,
            dev: v.dev,
            csrf: v.csrf.clone(),
            here: here.into(),
            version: super::ASSETS_VERSION,
        }
    }
}

/// Render `t` as an HTML response with `status`.
pub fn render_with(status: StatusCode, t: &impl Template) -> Result<Response, PageError> {
    let html = t.render().map_err(|e| {
        tracing::error!(error = %e, "rendering a console page");
        PageError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "the page could not be rendered; the server log has the cause",
        )
    })?;
    Ok((status, Html(html)).into_response())
}

pub fn render(t: &impl Template) -> Result<Response, PageError> {
    render_with(StatusCode::OK, t)
}

/// Money per hour: `USD 4.26/h`.
pub fn per_hour(currency: &str, amount: f64) -> String {
    format!("{currency} {amount:.2}/h")
}

/// A cost range: `USD 0.00–8.52/h` (one figure when both ends agree).
pub fn cost_range(currency: &str, at_min: f64, at_max: f64) -> String {
    if (at_max - at_min).abs() < 0.005 {
        per_hour(currency, at_min)
    } else {
        format!("{currency} {at_min:.2}–{at_max:.2}/h")
    }
}

/// The console path of a cluster named `projects/p/zones/z/clusters/c`.
pub fn cluster_href(name: &str) -> Option<String> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "zones", z, "clusters", c] => {
            Some(format!("/console/clusters/{p}/{z}/{c}"))
        }
        _ => None,
    }
}

/// The console path of an operation named `operations/ID`.
pub fn operation_href(name: &str) -> String {
    format!(
        "/console/operations/{}",
        name.strip_prefix("operations/").unwrap_or(name)
    )
}

/// A CSS class from a state name (`RUNNING` -> `st-running`).
pub fn state_class(state: &str) -> String {
    format!("st-{}", state.to_ascii_lowercase())
}

/// A timestamp without its fractional seconds: `2026-12-02T10:22:07Z`.
pub fn short_time(t: &str) -> String {
    match (t.find('.'), t.ends_with('Z')) {
        (Some(dot), true) => format!("{}Z", &t[..dot]),
        _ => t.to_owned(),
    }
}
