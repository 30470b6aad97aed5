//! Who may bind a GCP project to a team: a service admin, or a caller whom the project's
//! own IAM policy, as kineticd reads it, makes an owner (`roles/owner`) or lets set that
//! policy (`resourcemanager.projects.setIamPolicy`): binding a project hands kineticd's
//! service account to the team there, so it takes the same authority as granting
//! access to the project directly.
//!
//! Invariant: a claim is allowed only on a positive reading. The caller matches a
//! binding's member only as IAM would match it from the email alone (`user:`,
//! `serviceAccount:`, `domain:`, `allUsers`, `allAuthenticatedUsers`), only
//! unconditional bindings count, and a custom role counts only when IAM says it grants
//! the permission now (not deleted, not DISABLED). Group membership and grants
//! inherited from folders or the organization are invisible here, so they never allow a
//! claim; the refusal says so and who can do it instead. A policy kineticd cannot read
//! refuses the claim (403) or, when Google is unavailable, answers 503; never a pass.

use crate::cloud::Cloud;
use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::types::iam::{Policy, is_custom_role};
use crate::domain::{Email, RpcCode};

use super::{Caller, Error, Result};

/// The permission that binding a project to a team requires.
pub const SET_IAM_POLICY: &str = "resourcemanager.projects.setIamPolicy";

/// Predefined roles that include [`SET_IAM_POLICY`] on a project (Google's role
/// reference): Owner, Project IAM Admin, Security Admin. Other predefined roles do not.
pub const AUTHORITY_ROLES: [&str; 3] = [
    "roles/owner",
    "roles/resourcemanager.projectIamAdmin",
    "roles/iam.securityAdmin",
];

/// What one reading of a project's policy says about the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// A predefined role in [`AUTHORITY_ROLES`] is bound to the caller.
    Allowed { role: String },
    /// Not (yet) allowed: `custom` are custom roles bound to the caller whose
    /// permissions must be read from IAM; `roles` every role the caller holds;
    /// `unseen` says whether bindings the caller might get through a group or a
    /// condition exist (then the refusal says kineticd cannot see them).
    Undecided {
        custom: Vec<String>,
        roles: Vec<String>,
        unseen: bool,
    },
}

/// Whether IAM would apply `member` to `email` without knowing group memberships.
pub fn member_matches(member: &str, email: &Email) -> bool {
    let email = email.as_str();
    match member.split_once(':') {
        None => member == "allUsers" || member == "allAuthenticatedUsers",
        Some(("user" | "serviceAccount", who)) => who.eq_ignore_ascii_case(email),
        Some(("domain", domain)) => email
            .rsplit_once('@')
            .is_some_and(|(_, d)| d.eq_ignore_ascii_case(domain)),
        Some(_) => false,
    }
}

/// Read `policy` for `email` (no I/O): allowed by a predefined role, or the custom
/// roles still to look up.
pub fn read_policy(policy: &Policy, email: &Email) -> Reading {
    let mut custom = Vec::new();
    let mut roles = Vec::new();
    let mut unseen = false;
    for b in &policy.bindings {
        let applies = b.members.iter().any(|m| member_matches(m, email));
        if b.condition.is_some() {
            unseen |= applies || b.members.iter().any(|m| m.starts_with("group:"));
            continue;
        }
        if !applies {
            unseen |= b.members.iter().any(|m| m.starts_with("group:"))
                && (AUTHORITY_ROLES.contains(&b.role.as_str()) || is_custom_role(&b.role));
            continue;
        }
        if AUTHORITY_ROLES.contains(&b.role.as_str()) {
            return Reading::Allowed {
                role: b.role.clone(),
            };
        }
        roles.push(b.role.clone());
        if is_custom_role(&b.role) {
            custom.push(b.role.clone());
        }
    }
    roles.sort();
    roles.dedup();
    custom.sort();
    custom.dedup();
    Reading::Undecided {
        custom,
        roles,
        unseen,
    }
}

/// 503: Google could not answer; nothing was claimed.
fn unavailable(project: &str, e: &GcpError) -> Error {
    Error::new(
        RpcCode::Unavailable,
        "CLOUD_UNAVAILABLE",
        format!(
            "could not read the IAM policy of project {project} to check that you may bind it \
             ({}.{} answered {} {}); nothing was changed, retry shortly",
            e.service, e.method, e.http_status, e.reason
        ),
    )
    .with("project", project)
    .with("service", e.service)
    .with("method", e.method)
    .with("cloudReason", &e.reason)
}

/// 403: kineticd's own service account may not read the project's policy.
fn unreadable(project: &str, e: &GcpError) -> Error {
    Error::new(
        RpcCode::PermissionDenied,
        "PROJECT_POLICY_UNREADABLE",
        format!(
            "kineticd cannot read the IAM policy of project {project} ({} {}: {}), so it cannot \
             check that you may bind it to a team; a project owner must first grant kineticd's \
             service account its team-project role there (docs/deploying.md, \"Onboard a team \
             project\"), or a kineticd service admin can bind it",
            e.http_status, e.reason, e.message
        ),
    )
    .with("project", project)
    .with("permission", "resourcemanager.projects.getIamPolicy")
    .with("cloudReason", &e.reason)
}

/// 403: the policy does not make the caller an owner of the project.
fn refused(project: &str, roles: &[String], unseen: bool) -> Error {
    let held = if roles.is_empty() {
        "no role".to_owned()
    } else {
        roles.join(", ")
    };
    let blind = if unseen {
        " kineticd reads only direct grants: a grant through a group, a conditional \
         binding or a folder or organization policy is not visible to it."
    } else {
        ""
    };
    Error::new(
        RpcCode::PermissionDenied,
        "PROJECT_OWNERSHIP_REQUIRED",
        format!(
            "binding project {project} to a team needs roles/owner (or {SET_IAM_POLICY}) on it, \
             and its IAM policy gives you {held}.{blind} Ask an owner of {project} to bind it \
             (they can create the team or add the project, then make you a member), or ask a \
             kineticd service admin"
        ),
    )
    .with("project", project)
    .with("permission", SET_IAM_POLICY)
    .with("requiredRole", "roles/owner")
}

/// Check that `caller` may bind `project` (an ID already validated): `Ok(role)` names
/// what allowed it (`admin` for a service admin, who is not checked against Google).
pub async fn check(cloud: &Cloud, caller: &Caller, project: &str) -> Result<String> {
    if caller.admin {
        return Ok("admin".to_owned());
    }
    let policy = match cloud.gcp.resource_manager.get_iam_policy(project).await {
        Ok(p) => p,
        Err(e) if e.is_retryable() => return Err(unavailable(project, &e)),
        Err(e) => return Err(unreadable(project, &e)),
    };
    let (custom, roles, unseen) = match read_policy(&policy, &caller.email) {
        Reading::Allowed { role } => return Ok(role),
        Reading::Undecided {
            custom,
            roles,
            unseen,
        } => (custom, roles, unseen),
    };
    let mut unseen = unseen;
    for name in custom {
        match cloud.gcp.iam.get_custom_role(&name).await {
            Ok(role) if role.grants(SET_IAM_POLICY) => return Ok(name),
            Ok(_) => {}
            Err(e) if e.is_retryable() => return Err(unavailable(project, &e)),
            // A role kineticd may not read (an organization's, say) cannot allow it.
            Err(_) => unseen = true,
        }
    }
    Err(refused(project, &roles, unseen))
}

/// Check every project in `projects` for `caller`; the first refusal wins. Each
/// outcome is logged (project, caller's log id, what allowed it or why not) and
/// counted in `kineticd_project_claims_total`.
pub async fn check_all(
    cloud: &Cloud,
    caller: &Caller,
    team: &str,
    projects: &[String],
) -> Result<()> {
    for project in projects {
        match check(cloud, caller, project).await {
            Ok(by) => {
                metrics::counter!("kineticd_project_claims_total", "outcome" => "ALLOWED")
                    .increment(1);
                tracing::info!(team, project = %project, by = %caller.email.log_id(), allowed_by = %by, "project claim allowed");
            }
            Err(e) => {
                let outcome = if e.code == RpcCode::Unavailable {
                    "UNAVAILABLE"
                } else {
                    "REFUSED"
                };
                metrics::counter!("kineticd_project_claims_total", "outcome" => outcome)
                    .increment(1);
                tracing::warn!(team, project = %project, by = %caller.email.log_id(), reason = %e.reason, "project claim refused");
                return Err(e);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::gcp::types::iam::{Binding, Expr};

    fn email(s: &str) -> Email {
        Email::parse(s).unwrap()
    }

    fn policy(bindings: &[(&str, &[&str], bool)]) -> Policy {
        Policy {
            version: Some(3),
            bindings: bindings
                .iter()
                .map(|(role, members, conditional)| Binding {
                    role: (*role).to_owned(),
                    members: members.iter().map(|m| (*m).to_owned()).collect(),
                    condition: conditional.then(|| Expr {
                        expression: "request.time < timestamp('2030-01-01T00:00:00Z')".into(),
                        ..Expr::default()
                    }),
                })
                .collect(),
            ..Policy::default()
        }
    }

    #[test]
    fn members_match_as_iam_matches_an_email() {
        let alice = email("alice@example.com");
        assert!(member_matches("user:alice@example.com", &alice));
        assert!(member_matches("user:Alice@Example.com", &alice));
        assert!(member_matches("domain:example.com", &alice));
        assert!(member_matches("allAuthenticatedUsers", &alice));
        assert!(member_matches("allUsers", &alice));
        assert!(!member_matches("user:bob@example.com", &alice));
        assert!(!member_matches("domain:example.org", &alice));
        assert!(!member_matches("domain:ample.com", &alice));
        assert!(!member_matches("group:alice@example.com", &alice));
        assert!(!member_matches(
            "deleted:user:alice@example.com?uid=1",
            &alice
        ));
        assert!(!member_matches("user:alice@example.com.evil", &alice));
        let sa = email("ci@p.iam.gserviceaccount.com");
        assert!(member_matches(
            "serviceAccount:ci@p.iam.gserviceaccount.com",
            &sa
        ));
    }

    #[test]
    fn owner_and_iam_admins_are_allowed_others_are_not() {
        let alice = email("alice@example.com");
        for role in AUTHORITY_ROLES {
            let p = policy(&[
                ("roles/viewer", &["user:alice@example.com"], false),
                (role, &["user:alice@example.com"], false),
            ]);
            assert_eq!(
                read_policy(&p, &alice),
                Reading::Allowed { role: role.into() }
            );
        }
        let p = policy(&[
            ("roles/editor", &["user:alice@example.com"], false),
            ("roles/owner", &["user:bob@example.com"], false),
        ]);
        assert_eq!(
            read_policy(&p, &alice),
            Reading::Undecided {
                custom: vec![],
                roles: vec!["roles/editor".into()],
                unseen: false
            }
        );
    }

    #[test]
    fn conditional_and_group_grants_are_not_seen_but_said() {
        let alice = email("alice@example.com");
        let p = policy(&[("roles/owner", &["user:alice@example.com"], true)]);
        assert_eq!(
            read_policy(&p, &alice),
            Reading::Undecided {
                custom: vec![],
                roles: vec![],
                unseen: true
            }
        );
        let p = policy(&[("roles/owner", &["group:admins@example.com"], false)]);
        assert!(matches!(
            read_policy(&p, &alice),
            Reading::Undecided { unseen: true, .. }
        ));
        // A group holding a role that cannot allow anything is not worth mentioning.
        let p = policy(&[("roles/viewer", &["group:all@example.com"], false)]);
        assert!(matches!(
            read_policy(&p, &alice),
            Reading::Undecided { unseen: false, .. }
        ));
    }

    #[test]
    fn custom_roles_are_left_to_iam() {
        let alice = email("alice@example.com");
        let p = policy(&[
            (
                "projects/p1/roles/projectAdmin",
                &["domain:example.com"],
                false,
            ),
            (
                "organizations/42/roles/x",
                &["user:alice@example.com"],
                false,
            ),
        ]);
        assert_eq!(
            read_policy(&p, &alice),
            Reading::Undecided {
                custom: vec![
                    "organizations/42/roles/x".into(),
                    "projects/p1/roles/projectAdmin".into()
                ],
                roles: vec![
                    "organizations/42/roles/x".into(),
                    "projects/p1/roles/projectAdmin".into()
                ],
                unseen: false
            }
        );
    }
}
