//! What the SYNC_ACCESS that follows `up` will grant (issue 28), shown in the preview of
//! `up`: the IAM grants of every roster member on the cluster's resources
//! ([`iam_grants`]) and the RBAC bindings the roster justifies, by the names `up` gives
//! the resources.
//!
//! Invariant: computed from the roster and bindings it is given and the
//! [`crate::domain::access`] tables only (never from the database), so the preview and
//! the sync cannot disagree about what the roster asks for; an empty roster shows
//! nothing (`None`).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::domain::Role;
use crate::domain::access::{BindingScope, GrantOn, Member, RbacBinding, iam_grants};
use crate::domain::resource_names::ClusterNames;

use super::super::resources::cluster_resources;

/// The access the sync after `up` gives the team's roster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessPreview {
    /// IAM grants, by resource, role and member.
    pub grants: Vec<AccessGrant>,
    /// RBAC bindings labelled `managed-by: kineticd`.
    pub bindings: Vec<AccessBinding>,
}

/// One IAM grant.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessGrant {
    /// The policy's resource, e.g. `projects/p` or `projects/_/buckets/b`.
    #[schema(example = "projects/ml-proj")]
    pub resource: String,
    #[schema(example = "roles/container.clusterViewer")]
    pub role: String,
    /// The IAM member.
    #[schema(example = "user:alice@example.com")]
    pub member: String,
}

/// One RBAC binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessBinding {
    /// `ClusterRoleBinding` or `RoleBinding`.
    #[schema(example = "ClusterRoleBinding")]
    pub kind: String,
    /// The RoleBinding's namespace (none for a ClusterRoleBinding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub namespace: Option<String>,
    pub name: String,
    /// The ClusterRole it binds: `view`, `edit` or `admin`.
    #[schema(example = "view")]
    pub cluster_role: String,
    pub subject: AccessSubject,
}

/// Whom a binding binds: a `User` (a person or a service account, by email) or a
/// `Group`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessSubject {
    #[schema(example = "User")]
    pub kind: String,
    #[schema(example = "alice@example.com")]
    pub name: String,
}

/// The resource a grant on `on` is made on, by the names `up` gives the cluster's
/// resources: what the preview shows, and what the sync records and reports.
pub fn grant_resource(n: &ClusterNames, on: GrantOn) -> String {
    let r = cluster_resources(n);
    let name = match on {
        GrantOn::Project => return format!("projects/{}", n.project),
        GrantOn::StateBucket => r.state_bucket,
        GrantOn::JobsBucket => r.jobs_bucket,
        GrantOn::BuildsBucket => r.builds_bucket,
        GrantOn::Repository => r.artifact_repository,
        GrantOn::BuildsServiceAccount => r.build_service_account,
    };
    name.unwrap_or_default()
}

/// The access `members` get on the cluster named `n`, with the `bindings` they justify
/// there; `None` when there are no members.
pub fn preview(
    n: &ClusterNames,
    members: &[(Member, Role)],
    bindings: &[RbacBinding],
) -> Option<AccessPreview> {
    if members.is_empty() {
        return None;
    }
    let mut grants: Vec<AccessGrant> = members
        .iter()
        .flat_map(|(m, role)| {
            iam_grants(*role).into_iter().map(move |g| AccessGrant {
                resource: grant_resource(n, g.on),
                role: g.role.to_owned(),
                member: m.iam_member(),
            })
        })
        .collect();
    grants.sort();
    grants.dedup();
    let bindings = bindings
        .iter()
        .map(|b| {
            let (kind, namespace) = match &b.scope {
                BindingScope::Cluster => ("ClusterRoleBinding", None),
                BindingScope::Namespace(ns) => ("RoleBinding", Some(ns.clone())),
            };
            AccessBinding {
                kind: kind.to_owned(),
                namespace,
                name: b.name.clone(),
                cluster_role: b.cluster_role.to_owned(),
                subject: AccessSubject {
                    kind: b.subject_kind.to_owned(),
                    name: b.subject_name.clone(),
                },
            }
        })
        .collect();
    Some(AccessPreview { grants, bindings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::access::wanted_bindings;

    #[test]
    fn a_member_gets_the_tables_grants_on_the_clusters_resources() {
        let n = crate::plan::test_names("ml-proj");
        assert_eq!(preview(&n, &[], &[]), None);
        let bob = (Member::parse("bob@example.com").unwrap(), Role::Member);
        let members = [bob];
        let ns = vec!["default".to_owned()];
        let p = preview(&n, &members, &wanted_bindings(&members, &ns)).unwrap();
        assert_eq!(p.grants.len(), iam_grants(Role::Member).len());
        let has = |res: &str, role: &str| {
            p.grants
                .iter()
                .any(|g| g.resource == res && g.role == role && g.member == "user:bob@example.com")
        };
        assert!(has("projects/ml-proj", "roles/container.clusterViewer"));
        assert!(has(
            "projects/_/buckets/ml-proj-kn-kc-jobs",
            "roles/storage.objectAdmin"
        ));
        assert!(has(
            "projects/ml-proj/serviceAccounts/kn-kc-builds@ml-proj.iam.gserviceaccount.com",
            "roles/iam.serviceAccountUser"
        ));
        assert_eq!(p.bindings.len(), 2);
        assert_eq!(p.bindings[0].kind, "ClusterRoleBinding");
        assert_eq!(p.bindings[1].namespace.as_deref(), Some("default"));
        assert_eq!(p.bindings[1].cluster_role, "edit");
        let json = serde_json::to_value(&p.bindings[0]).unwrap();
        assert!(json.get("namespace").is_none(), "{json}");
        assert_eq!(json["clusterRole"], "view");
    }
}
