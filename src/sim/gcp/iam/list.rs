//! IAM `serviceAccounts.list` (`gcloud iam service-accounts list`): the service accounts
//! of one project (`-`: of every project), paged with `pageSize` (default 20, at most
//! 100) and `pageToken`, in email order.
//!
//! Invariant: a listed account is exactly what `serviceAccounts.get` returns for it; a
//! deleted account is never listed.

use axum::Json;
use axum::extract::{Path, Query, State as AxState};
use axum::response::Response;

use super::{F, SVC};
use crate::sim::Sim;
use crate::sim::gcp::list::{AipList, Limits, PageQuery, aip158};

const LIMITS: Limits = aip158(20, 100);

pub(super) async fn accounts(
    AxState(sim): AxState<Sim>,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    sim.serve((SVC, F), "serviceAccounts.list", || {
        let all = sim
            .world()
            .iam
            .accounts
            .iter()
            .filter(|(_, a)| project == "-" || a.account.project_id == project)
            .map(|(email, a)| (email.clone(), a.account.clone()))
            .collect();
        AipList::page(&LIMITS, "accounts", all, &q).map(Json)
    })
    .await
}
