//! What the handlers of authenticated routes share: the state and the caller, taken as
//! one ([`Call`]); a JSON answer or an API error ([`Reply`]); a page request read from
//! `?pageSize=&pageToken=` ([`Paged`]).
//!
//! Invariant: [`Call`] is `State` then [`Caller`] (the caller authenticated and charged
//! exactly as when a handler takes `Caller` itself); [`Paged`] is [`PageQuery`] checked
//! against the state's page key, as [`PageQuery::request`] makes it.

use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::PageQuery;
use super::error::ApiError;
use super::extract::ApiQuery;
use super::state::AppState;
use crate::service::{Caller, PageRequest};

/// The state and the authenticated caller.
pub struct Call(pub AppState, pub Caller);

impl FromRequestParts<AppState> for Call {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let caller = Caller::from_request_parts(parts, s).await?;
        Ok(Call(s.clone(), caller))
    }
}

/// A handler's JSON answer, or the error it is refused with.
pub type Reply<T> = Result<Json<T>, ApiError>;

/// The page a list request asks for (`?pageSize=&pageToken=`, AIP-158).
pub struct Paged(pub PageRequest);

impl FromRequestParts<AppState> for Paged {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, s: &AppState) -> Result<Self, ApiError> {
        let ApiQuery(q) = ApiQuery::<PageQuery>::from_request_parts(parts, s).await?;
        Ok(Paged(q.request(&s.page_key)))
    }
}
