//! The RBAC half of a sync: the bindings the roster justifies (VIEWER `view`, MEMBER
//! `view` and `edit` in the namespaces Kinetic runs jobs in, ADMIN and OWNER `admin`),
//! against the bindings labelled `managed-by: kineticd` the cluster has.
//!
//! Invariant: deletions come first, so a removed member's access is gone before anything
//! else is applied; only labelled bindings are deleted; a binding that differs from what
//! it should be is deleted and applied again (its `roleRef` cannot change in place). A
//! cluster that is not running yet is skipped: the sync that follows `up` binds it.

use crate::cloud::kube::ClusterAccess;
use crate::cloud::kube::rbac::describe;
use crate::domain::access::{BindingScope, RbacBinding, binding_namespaces, wanted_bindings};
use crate::ops::steps::StepError;

use super::super::{Env, gcp_error, kube_error, store_error};
use super::{AccessSyncReport, Scope};

/// The namespaces MEMBERs get `edit` in ([`binding_namespaces`]).
async fn namespaces(env: &Env, team: &str, cluster: &str) -> Result<Vec<String>, StepError> {
    let profiles = crate::store::access::profile_namespaces(&env.db, team, cluster)
        .await
        .map_err(store_error)?;
    Ok(binding_namespaces(profiles))
}

pub(super) async fn converge(s: &Scope<'_>) -> Result<AccessSyncReport, StepError> {
    let (env, team, n, cluster, roster) = (s.env, s.team, s.names, s.cluster.as_str(), s.roster);
    let mut report = s.report();
    let gke = match env
        .cloud
        .gcp
        .container
        .get_cluster(&n.project, &n.zone, &n.cluster)
        .await
    {
        Ok(c) => c,
        Err(e) if e.http_status == 404 => {
            report.skipped.push(format!(
                "{cluster}: no GKE cluster yet (the sync after up binds it)"
            ));
            return Ok(report);
        }
        Err(e) => return Err(gcp_error(e)),
    };
    let access = match ClusterAccess::for_gke(&gke) {
        Some(a) if gke.status.as_deref() == Some("RUNNING") => a,
        _ => {
            report.skipped.push(format!(
                "{cluster}: GKE cluster is {} (the sync after up binds it)",
                gke.status.as_deref().unwrap_or("without an endpoint")
            ));
            return Ok(report);
        }
    };
    let kube = env.cloud.kube.cluster(access);
    let ns = namespaces(env, team, cluster).await?;
    let want: Vec<RbacBinding> = wanted_bindings(&roster.members, &ns);
    let have = kube.managed_bindings().await.map_err(kube_error)?;
    for h in &have {
        let keep = want.iter().any(|w| h.matches(w));
        if !keep
            && kube
                .delete_binding(&h.scope, &h.name)
                .await
                .map_err(kube_error)?
        {
            report.bindings_deleted.push(h.describe());
        }
    }
    kube.ensure_lws_edit_role().await.map_err(kube_error)?;
    for w in &want {
        if have.iter().any(|h| h.matches(w)) {
            continue;
        }
        match kube.apply_binding(w).await {
            Ok(()) => report.bindings_applied.push(describe(&w.scope, &w.name)),
            Err(e) if e.is_not_found() => {
                if let BindingScope::Namespace(ns) = &w.scope {
                    report.skipped.push(format!(
                        "{}: namespace {ns} does not exist",
                        describe(&w.scope, &w.name)
                    ));
                }
            }
            Err(e) => return Err(kube_error(e)),
        }
    }
    Ok(report)
}
