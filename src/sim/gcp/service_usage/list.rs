//! Service Usage `services.list` (`gcloud services list --enabled`): every service of the
//! catalogue with its state in the project, or only those the filter `state:ENABLED` /
//! `state:DISABLED` names (gcloud relies on this filter being applied by the server),
//! paged with `pageSize` (default 50, at most 200) and `pageToken`, by service name.
//!
//! Invariant: a listed service is exactly what `services.get` returns for it; a filter
//! this simulator cannot apply is 400, never silently ignored.

use axum::Json;
use axum::extract::{Path, Query};
use serde::Deserialize;

use super::{CATALOGUE, F, project_denied, service, valid_project_id};
use crate::cloud::gcp::types::service_usage::Service;
use crate::sim::Sim;
use crate::sim::error::SimError;
use crate::sim::gcp::list::{AipList, Limits, PageQuery, aip158};

const LIMITS: Limits = aip158(50, 200);

#[derive(Debug, Default, Deserialize)]
pub(super) struct Filter {
    filter: Option<String>,
}

/// The state a filter keeps (`None`: every state).
fn wanted_state(filter: Option<&str>) -> Result<Option<bool>, SimError> {
    match filter.map(str::trim).unwrap_or("") {
        "" => Ok(None),
        "state:ENABLED" => Ok(Some(true)),
        "state:DISABLED" => Ok(Some(false)),
        other => Err(SimError::invalid(
            F,
            format!("Invalid filter {other:?}: only state:ENABLED or state:DISABLED."),
        )),
    }
}

pub(super) fn services(
    sim: &Sim,
    Path(project): Path<String>,
    Query(f): Query<Filter>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AipList<Service>>, SimError> {
    if !valid_project_id(&project) {
        return Err(project_denied(&project));
    }
    let wanted = wanted_state(f.filter.as_deref())?;
    let mut w = sim.world();
    let enabled = w.service_usage.enabled_mut(&project);
    let all = CATALOGUE
        .iter()
        .map(|(id, _)| (*id, enabled.contains(*id)))
        .filter(|(_, on)| wanted.is_none_or(|state| state == *on))
        .map(|(id, on)| (id.to_owned(), service(&project, id, on)))
        .collect();
    AipList::page(&LIMITS, "services", all, &q).map(Json)
}

#[cfg(test)]
mod tests {
    use super::wanted_state;

    #[test]
    fn only_state_filters_are_understood() {
        assert_eq!(wanted_state(None).unwrap(), None);
        assert_eq!(wanted_state(Some("state:ENABLED")).unwrap(), Some(true));
        assert_eq!(wanted_state(Some(" state:DISABLED")).unwrap(), Some(false));
        assert_eq!(wanted_state(Some("name:compute")).unwrap_err().http, 400);
    }
}
