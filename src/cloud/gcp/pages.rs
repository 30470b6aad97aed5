//! Paged list calls of the APIs that page with `maxResults` / `pageToken` /
//! `nextPageToken` (Compute, Storage): one page of a call, or every page followed to
//! the last.
//!
//! Invariant: a page size or token is sent only when there is one; a walk ends at the
//! first page without a (non-empty) `nextPageToken` and fails (transport error) rather
//! than follow more pages than its cap.

use serde::de::DeserializeOwned;

use super::error::GcpError;
use super::http::{Call, GcpHttp};
use super::types::list::Page;

/// A list call with its page size and token.
pub(super) fn paged<'a>(
    mut call: Call<'a>,
    max_results: Option<u32>,
    page_token: Option<&str>,
) -> Call<'a> {
    if let Some(n) = max_results {
        call = call.query("maxResults", n);
    }
    if let Some(t) = page_token {
        call = call.query("pageToken", t);
    }
    call
}

/// Follow `nextPageToken` from the first page of `call` to the last (at most
/// `max_pages` pages), `max_results` a page.
pub(super) async fn all_pages<P: Page + DeserializeOwned>(
    http: &GcpHttp,
    call: Call<'_>,
    max_results: Option<u32>,
    max_pages: usize,
) -> Result<Vec<P::Item>, GcpError> {
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..max_pages {
        let page: P = http
            .call(paged(call.clone(), max_results, token.as_deref()))
            .await?;
        let (items, next) = page.into_parts();
        out.extend(items);
        match next.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => return Ok(out),
        }
    }
    Err(GcpError::transport(
        call.service.name(),
        call.method,
        format!("more than {max_pages} pages"),
    ))
}
