//! The `access` check (issue 28): the team's roster has the access a SYNC_ACCESS gives
//! it: every RBAC binding it justifies is in the cluster, no binding labelled
//! `managed-by: kineticd` is left that it does not justify, and every roster member
//! holds `roles/container.clusterViewer` on the project (what `get-credentials` needs).
//!
//! Invariant: reads only (the records, the cluster's bindings, `projects.getIamPolicy`),
//! each bounded by the diagnosis deadline; what the roster wants comes from the same
//! [`crate::domain::access`] tables the sync uses (through [`status_access::wanted`]).
//! A gap while a sync is under way is WARN (that sync repairs it); otherwise FAIL with
//! `:syncAccess` as the fix. A read that fails is WARN (not checked), never FAIL.

use crate::cloud::Cloud;
use crate::cloud::gcp::types::iam::Policy;
use crate::cloud::kube::KubeError;
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};
use crate::store::Db;

use super::super::status::access::{self as status_access, gaps, sync_fix};
use super::{Read, Shared, check, count, ok, read};

const ID: &str = "access";
/// What every roster member needs on the project to get the cluster's credentials.
pub const VIEWER_ROLE: &str = "roles/container.clusterViewer";

/// The cluster record's part of the check.
pub struct Record {
    pub id: uuid::Uuid,
    pub team: String,
}

fn not_checked(what: &str, e: impl std::fmt::Display) -> DiagnosisCheck {
    check(
        ID,
        CheckStatus::Warn,
        format!("not checked: {what} could not be read: {e}"),
        "diagnose again".into(),
    )
}

pub async fn access(db: &Db, cloud: &Cloud, rec: &Record, s: &Shared) -> Vec<DiagnosisCheck> {
    vec![run(db, cloud, rec, s).await]
}

async fn run(db: &Db, cloud: &Cloud, rec: &Record, s: &Shared) -> DiagnosisCheck {
    let k = match s.kube_or_why(ID) {
        Ok(k) => k,
        Err(c) => return c,
    };
    let p = s.n.project.as_str();
    let (want, pending) = tokio::join!(
        status_access::wanted(db, &rec.team, &s.name),
        status_access::sync_under_way(db, rec.id)
    );
    let (want, pending) = match (want, pending) {
        (Ok(w), Ok(p)) => (w, p),
        (Err(e), _) | (_, Err(e)) => return not_checked("the team's roster", e.message),
    };
    let policy_read = async {
        cloud
            .gcp
            .resource_manager
            .get_iam_policy(p)
            .await
            .map_err(|e| {
                if e.http_status == 403 {
                    format!(
                        "kineticd lacks resourcemanager.projects.getIamPolicy on project {p} ({})",
                        e.message
                    )
                } else {
                    e.to_string()
                }
            })
    };
    let (have, policy) = tokio::join!(
        read(s.deadline, k.managed_bindings(), KubeError::is_not_found),
        read(s.deadline, policy_read, |_| false),
    );
    let Read::Found(have) = have else {
        return s.unread(ID, "the cluster's RBAC bindings", &have);
    };
    let Read::Found(policy) = policy else {
        return s.unread(ID, &format!("the IAM policy of project {p}"), &policy);
    };
    let mut problems: Vec<String> = gaps(&want.bindings, &have)
        .iter()
        .map(|g| format!("{} {}", g.describe(), g.problem()))
        .collect();
    let lacking = lacking_viewers(
        &policy,
        want.roster.members.iter().map(|(m, _)| m.iam_member()),
    );
    problems.extend(
        lacking
            .iter()
            .map(|m| format!("{m} lacks {VIEWER_ROLE} on projects/{p}")),
    );
    let members = count(want.roster.members.len(), "roster member", "roster members");
    if problems.is_empty() {
        let mut msg = format!(
            "{members}: the cluster has the {} the roster justifies and no other managed binding; every member holds {VIEWER_ROLE} on projects/{p}",
            count(want.bindings.len(), "managed binding", "managed bindings")
        );
        if !want.roster.skipped.is_empty() {
            msg.push_str(&format!(" (left out: {})", want.roster.skipped.join("; ")));
        }
        return ok(ID, msg);
    }
    let message = format!(
        "{members}, {} not as the roster wants: {}",
        count(problems.len(), "grant", "grants"),
        problems.join("; ")
    );
    let mut fix = sync_fix(&s.name);
    if !lacking.is_empty() {
        fix.push_str(&format!(
            " (granting {VIEWER_ROLE} needs kineticd's service account to hold resourcemanager.projects.setIamPolicy on project {p}; see deploy/README.md)"
        ));
    }
    match pending {
        Some(op) => check(
            ID,
            CheckStatus::Warn,
            format!("{message}; {op} (SYNC_ACCESS) is under way and converges it"),
            format!("wait for {op}, then diagnose again; if it stays, {fix}"),
        ),
        None => check(ID, CheckStatus::Fail, message, fix),
    }
}

/// The IAM members of `members` without an unconditional [`VIEWER_ROLE`] binding.
fn lacking_viewers(policy: &Policy, members: impl Iterator<Item = String>) -> Vec<String> {
    members
        .filter(|m| {
            !policy
                .bindings
                .iter()
                .any(|b| b.role == VIEWER_ROLE && b.condition.is_none() && b.members.contains(m))
        })
        .collect()
}
