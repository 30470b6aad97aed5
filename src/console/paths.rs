//! Path extractors for the console's cluster and team routes: the
//! `{project}/{zone}/{cluster}` segments parsed into a [`ClusterPath`] once, for every
//! handler under `/console/clusters/...`, and `{team}` into a [`TeamId`] for the pages
//! under `/console/teams/{team}/...`.
//!
//! Invariant: a handler given a [`ConsoleCluster`], [`ConsolePool`] or [`ConsoleTeam`]
//! holds a valid path; a segment that does not parse is answered as the handler's own
//! `?` would (the service's error as an HTML page), a missing one as axum's `Path`
//! answers it.

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use crate::domain::TeamId;
use crate::service::clusters::ClusterPath;

use super::error::PageError;

/// `.../{project}/{zone}/{cluster}`.
pub struct ConsoleCluster(pub ClusterPath);

/// `.../{project}/{zone}/{cluster}/pools/{pool}`.
pub struct ConsolePool {
    pub path: ClusterPath,
    pub pool: String,
}

/// `.../teams/{team}`.
pub struct ConsoleTeam(pub TeamId);

fn parse(project: &str, zone: &str, cluster: &str) -> Result<ClusterPath, PageError> {
    Ok(ClusterPath::parse(project, zone, cluster)?)
}

impl<S: Send + Sync> FromRequestParts<S> for ConsoleCluster {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, Response> {
        let Path((project, zone, cluster)) =
            Path::<(String, String, String)>::from_request_parts(parts, s)
                .await
                .map_err(IntoResponse::into_response)?;
        let path = parse(&project, &zone, &cluster).map_err(IntoResponse::into_response)?;
        Ok(ConsoleCluster(path))
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ConsolePool {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, Response> {
        let Path((project, zone, cluster, pool)) =
            Path::<(String, String, String, String)>::from_request_parts(parts, s)
                .await
                .map_err(IntoResponse::into_response)?;
        let path = parse(&project, &zone, &cluster).map_err(IntoResponse::into_response)?;
        Ok(ConsolePool { path, pool })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for ConsoleTeam {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, s: &S) -> Result<Self, Response> {
        let Path(team) = Path::<String>::from_request_parts(parts, s)
            .await
            .map_err(IntoResponse::into_response)?;
        let id = TeamId::parse(&team).map_err(|e| PageError::from(e).into_response())?;
        Ok(ConsoleTeam(id))
    }
}
