//! The console's CSS and JavaScript, embedded in the binary (no build step, nothing
//! fetched at run time) and served under `/console/assets/`.
//!
//! Invariant: only the files listed here are served, each with its exact content type;
//! pages link them with `?v=` [`super::ASSETS_VERSION`], so they may be cached for a day.

use axum::extract::Path;
use axum::http::header;
use axum::response::IntoResponse;

use super::error::PageError;

const FILES: &[(&str, &str, &str)] = &[
    (
        "console.css",
        "text/css; charset=utf-8",
        include_str!("assets/console.css"),
    ),
    (
        "console.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/console.js"),
    ),
];

pub async fn serve(Path(file): Path<String>) -> Result<impl IntoResponse, PageError> {
    let (_, ctype, body) = FILES
        .iter()
        .find(|(name, _, _)| *name == file)
        .ok_or_else(|| PageError::not_found(format!("no console asset {file}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, *ctype),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        *body,
    ))
}
