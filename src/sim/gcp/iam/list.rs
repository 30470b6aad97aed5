//! IAM `serviceAccounts.list` (`gcloud iam service-accounts list`): the service accounts
//! of one project (`-`: of every project), paged with `pageSize` (default 20, at most
//! 100) and `pageToken`, in email order.
//!
//! Invariant: a listed account is exactly what `serviceAccounts.get` returns for it; a
//! deleted account is never listed.

use axum::Json;
use axum::extract::{Path, Query};

use crate::cloud::gcp::types::iam::ServiceAccount;
use crate::sim::Sim;
use crate::sim::error::SimError;
use crate::sim::gcp::list::{AipList, Limits, PageQuery, aip158};

const LIMITS: Limits = aip158(20, 100);

pub(super) fn accounts(
    sim: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<AipList<ServiceAccount>>, SimError> {
    let all = sim
        .world()
        .iam
        .accounts
        .iter()
        .filter(|(_, a)| project == "-" || a.account.project_id == project)
        .map(|(email, a)| (email.clone(), a.account.clone()))
        .collect();
    AipList::page(&LIMITS, "accounts", all, &q).map(Json)
}
