//! Access as a status and a diagnosis see it (issue 28): the RBAC bindings the team's
//! roster justifies (the same [`wanted_bindings`] the SYNC_ACCESS workflow makes) next to
//! the bindings labelled `managed-by: kineticd` the cluster has, and the drift between
//! them.
//!
//! Invariant: read-only; the roster and the namespaces come from the store, the wanted
//! bindings from [`crate::domain::access`] only (never computed here), and a binding
//! someone else made (without the managed label) is never listed, so it is never drift.

use uuid::Uuid;

use crate::cloud::kube::rbac::{ManagedBinding, describe};
use crate::domain::OperationType;
use crate::domain::access::{
    BindingScope, RbacBinding, Roster, binding_namespaces, wanted_bindings,
};
use crate::model::status::{Drift, DriftProblem};
use crate::ops::workflows::cluster::access::serial_key;
use crate::store::{self, Db};

use super::super::Result;

/// What the roster asks of a cluster.
pub struct Wanted {
    pub roster: Roster,
    pub bindings: Vec<RbacBinding>,
}

/// The roster of `team` and the bindings it justifies on `cluster`
/// (`projects/p/zones/z/clusters/c`).
pub async fn wanted(db: &Db, team: &str, cluster: &str) -> Result<Wanted> {
    let rows = store::access::roster(db, team).await?;
    let roster = Roster::parse(&rows);
    let ns = binding_namespaces(store::access::profile_namespaces(db, team, cluster).await?);
    let bindings = wanted_bindings(&roster.members, &ns);
    Ok(Wanted { roster, bindings })
}

/// `operations/{id}` of the cluster's SYNC_ACCESS not yet finished, if one is.
pub async fn sync_under_way(db: &Db, cluster_id: Uuid) -> Result<Option<String>> {
    let key = serial_key(cluster_id);
    let id =
        store::access::unfinished_with_key(db, &key, OperationType::SyncAccess.as_str()).await?;
    Ok(id.map(|id| format!("operations/{id}")))
}

/// How one binding differs from what the roster justifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindingGap {
    /// Wanted, and the cluster has no binding of that name.
    Missing(RbacBinding),
    /// Labelled managed, and the roster no longer justifies it.
    Extra(ManagedBinding),
    /// A managed binding of a wanted name that binds another role or subject.
    Different(ManagedBinding, RbacBinding),
}

impl BindingGap {
    /// `ClusterRoleBinding name` or `RoleBinding namespace/name`.
    pub fn describe(&self) -> String {
        match self {
            BindingGap::Missing(w) => describe(&w.scope, &w.name),
            BindingGap::Extra(h) | BindingGap::Different(h, _) => h.describe(),
        }
    }

    /// What is wrong, in a few words.
    pub fn problem(&self) -> String {
        match self {
            BindingGap::Missing(w) => format!(
                "missing: {} {} needs {} {}",
                w.subject_kind,
                w.subject_name,
                w.cluster_role,
                scope_words(&w.scope)
            ),
            BindingGap::Extra(h) => format!(
                "extra: binds {} to {}, which the roster no longer justifies",
                h.cluster_role,
                subjects(h)
            ),
            BindingGap::Different(h, w) => format!(
                "different: binds {} to {}, the roster wants {} to {} {}",
                h.cluster_role,
                subjects(h),
                w.cluster_role,
                w.subject_kind,
                w.subject_name
            ),
        }
    }
}

fn scope_words(s: &BindingScope) -> String {
    match s {
        BindingScope::Cluster => "cluster-wide".into(),
        BindingScope::Namespace(ns) => format!("in namespace {ns}"),
    }
}

fn subjects(h: &ManagedBinding) -> String {
    let all: Vec<String> = h.subjects.iter().map(|(k, n)| format!("{k} {n}")).collect();
    if all.is_empty() {
        "nobody".into()
    } else {
        all.join(", ")
    }
}

/// The gaps between `want` and the managed bindings the cluster `have`s, in binding
/// order: what a sync would delete (extra, different) and apply (missing, different).
pub fn gaps(want: &[RbacBinding], have: &[ManagedBinding]) -> Vec<BindingGap> {
    let mut out = Vec::new();
    for h in have {
        if want.iter().any(|w| h.matches(w)) {
            continue;
        }
        match want.iter().find(|w| w.scope == h.scope && w.name == h.name) {
            Some(w) => out.push(BindingGap::Different(h.clone(), w.clone())),
            None => out.push(BindingGap::Extra(h.clone())),
        }
    }
    for w in want {
        if !have.iter().any(|h| h.scope == w.scope && h.name == w.name) {
            out.push(BindingGap::Missing(w.clone()));
        }
    }
    out.sort_by_key(BindingGap::describe);
    out
}

/// `POST /v1/{cluster}:syncAccess`, the repair of every gap.
pub fn sync_fix(cluster: &str) -> String {
    format!("POST /v1/{cluster}:syncAccess")
}

/// A gap as a status drift entry.
pub fn drift(cluster: &str, gap: &BindingGap) -> Drift {
    let (scope, name) = match gap {
        BindingGap::Missing(w) => (&w.scope, &w.name),
        BindingGap::Extra(h) | BindingGap::Different(h, _) => (&h.scope, &h.name),
    };
    let (resource_type, path) = match scope {
        BindingScope::Cluster => (
            "rbac.clusterRoleBinding",
            format!("{cluster}/clusterrolebindings/{name}"),
        ),
        BindingScope::Namespace(ns) => (
            "rbac.roleBinding",
            format!("{cluster}/namespaces/{ns}/rolebindings/{name}"),
        ),
    };
    let problem = match gap {
        BindingGap::Missing(_) => DriftProblem::Missing,
        BindingGap::Extra(_) => DriftProblem::Unrecorded,
        BindingGap::Different(..) => DriftProblem::Different,
    };
    Drift {
        resource: path,
        resource_type: resource_type.to_owned(),
        problem,
        message: format!(
            "{} {}; {} converges the cluster's access with the team's roster",
            gap.describe(),
            gap.problem(),
            sync_fix(cluster)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Role;
    use crate::domain::access::{Member, rbac_bindings};

    fn have(w: &RbacBinding, role: &str) -> ManagedBinding {
        ManagedBinding {
            scope: w.scope.clone(),
            name: w.name.clone(),
            cluster_role: role.to_owned(),
            subjects: vec![(w.subject_kind.to_owned(), w.subject_name.clone())],
        }
    }

    #[test]
    fn gaps_are_missing_extra_or_different_and_nothing_when_converged() {
        let alice = Member::parse("alice@example.com").unwrap();
        let bob = Member::parse("bob@example.com").unwrap();
        let ns = vec!["default".to_owned()];
        let want = rbac_bindings(&alice, Role::Member, &ns);
        let gone = rbac_bindings(&bob, Role::Viewer, &ns);
        let converged: Vec<ManagedBinding> = want.iter().map(|w| have(w, w.cluster_role)).collect();
        assert!(gaps(&want, &converged).is_empty());

        let mut h = vec![have(&want[0], "admin"), have(&gone[0], "view")];
        let g = gaps(&want, &h);
        assert_eq!(g.len(), 3, "{g:?}");
        assert!(
            g.iter()
                .any(|x| matches!(x, BindingGap::Missing(w) if w == &want[1]))
        );
        assert!(
            g.iter()
                .any(|x| matches!(x, BindingGap::Extra(b) if b == &h[1]))
        );
        assert!(
            g.iter()
                .any(|x| matches!(x, BindingGap::Different(b, _) if b == &h[0]))
        );
        let c = "projects/p/zones/z/clusters/c";
        let d = drift(c, &BindingGap::Missing(want[1].clone()));
        assert_eq!(d.problem, DriftProblem::Missing);
        assert_eq!(d.resource_type, "rbac.roleBinding");
        assert!(d.resource.starts_with(
            "projects/p/zones/z/clusters/c/namespaces/default/rolebindings/kineticd:edit:"
        ));
        assert!(
            d.message
                .contains("POST /v1/projects/p/zones/z/clusters/c:syncAccess"),
            "{}",
            d.message
        );
        h.truncate(0);
        assert_eq!(gaps(&want, &h).len(), 2);
    }
}
