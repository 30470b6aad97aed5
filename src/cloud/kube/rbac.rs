//! The RBAC objects kineticd manages in a cluster (issue 28): the bindings a team's
//! roster justifies, listed by their `managed-by: kineticd` label, applied and deleted
//! one by one, and the ClusterRole that lets `edit` and `admin` cover LeaderWorkerSets.
//!
//! Invariant: only objects carrying the managed label are listed, and only listed
//! objects or objects named by [`crate::domain::access`] are deleted, so a binding
//! someone else made is never touched; every call is idempotent (apply, or delete that
//! takes a 404 as done) and goes through [`KubeCluster::idempotent`].

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};

use crate::domain::access::{
    BindingScope, LWS_EDIT_ROLE, MANAGED_BY_LABEL, MANAGED_BY_VALUE, MANAGED_SELECTOR,
    MEMBER_ANNOTATION, RbacBinding,
};

use super::{FIELD_MANAGER, KubeCluster, KubeError};

/// A managed binding as the cluster has it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManagedBinding {
    pub scope: BindingScope,
    pub name: String,
    pub cluster_role: String,
    /// `(kind, name)` of each subject.
    pub subjects: Vec<(String, String)>,
}

impl ManagedBinding {
    /// Whether it is exactly what `want` describes.
    pub fn matches(&self, want: &RbacBinding) -> bool {
        self.scope == want.scope
            && self.name == want.name
            && self.cluster_role == want.cluster_role
            && self.subjects == [(want.subject_kind.to_owned(), want.subject_name.clone())]
    }

    /// `ClusterRoleBinding name` or `RoleBinding namespace/name`.
    pub fn describe(&self) -> String {
        describe(&self.scope, &self.name)
    }
}

/// `ClusterRoleBinding name` or `RoleBinding namespace/name`.
pub fn describe(scope: &BindingScope, name: &str) -> String {
    match scope {
        BindingScope::Cluster => format!("ClusterRoleBinding {name}"),
        BindingScope::Namespace(ns) => format!("RoleBinding {ns}/{name}"),
    }
}

fn managed_meta(name: &str, namespace: Option<&str>, member: Option<&str>) -> ObjectMeta {
    let labels = BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGED_BY_VALUE.to_owned(),
        ),
    ]);
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels),
        annotations: member.map(|m| BTreeMap::from([(MEMBER_ANNOTATION.to_owned(), m.to_owned())])),
        ..ObjectMeta::default()
    }
}

fn role_ref(cluster_role: &str) -> RoleRef {
    RoleRef {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: "ClusterRole".into(),
        name: cluster_role.to_owned(),
    }
}

fn subject(b: &RbacBinding) -> Subject {
    Subject {
        api_group: Some("rbac.authorization.k8s.io".into()),
        kind: b.subject_kind.to_owned(),
        name: b.subject_name.clone(),
        namespace: None,
    }
}

fn subjects_of(s: Option<&Vec<Subject>>) -> Vec<(String, String)> {
    s.map(|v| v.iter().map(|s| (s.kind.clone(), s.name.clone())).collect())
        .unwrap_or_default()
}

fn apply_params() -> PatchParams {
    PatchParams::apply(FIELD_MANAGER).force()
}

impl KubeCluster {
    /// Every binding carrying the managed label: ClusterRoleBindings, then
    /// RoleBindings of every namespace.
    pub async fn managed_bindings(&self) -> Result<Vec<ManagedBinding>, KubeError> {
        let client = self.client().await?;
        let lp = ListParams::default().labels(MANAGED_SELECTOR);
        let crbs: Api<ClusterRoleBinding> = Api::all(client.clone());
        let list = self
            .idempotent(
                "clusterrolebindings.list",
                "list clusterrolebindings",
                || crbs.list(&lp),
            )
            .await?;
        let mut out: Vec<ManagedBinding> = list
            .items
            .iter()
            .map(|b| ManagedBinding {
                scope: BindingScope::Cluster,
                name: b.metadata.name.clone().unwrap_or_default(),
                cluster_role: b.role_ref.name.clone(),
                subjects: subjects_of(b.subjects.as_ref()),
            })
            .collect();
        let rbs: Api<RoleBinding> = Api::all(client);
        let list = self
            .idempotent("rolebindings.list", "list rolebindings", || rbs.list(&lp))
            .await?;
        out.extend(list.items.iter().map(|b| ManagedBinding {
            scope: BindingScope::Namespace(b.metadata.namespace.clone().unwrap_or_default()),
            name: b.metadata.name.clone().unwrap_or_default(),
            cluster_role: b.role_ref.name.clone(),
            subjects: subjects_of(b.subjects.as_ref()),
        }));
        Ok(out)
    }

    /// Apply `b` (server-side, labelled and annotated as managed).
    pub async fn apply_binding(&self, b: &RbacBinding) -> Result<(), KubeError> {
        let client = self.client().await?;
        let pp = apply_params();
        match &b.scope {
            BindingScope::Cluster => {
                let obj = ClusterRoleBinding {
                    metadata: managed_meta(&b.name, None, Some(&b.member)),
                    role_ref: role_ref(b.cluster_role),
                    subjects: Some(vec![subject(b)]),
                };
                let api: Api<ClusterRoleBinding> = Api::all(client);
                let action = format!("apply {}", describe(&b.scope, &b.name));
                let patch = Patch::Apply(&obj);
                self.idempotent("clusterrolebindings.apply", &action, || {
                    api.patch(&b.name, &pp, &patch)
                })
                .await?;
            }
            BindingScope::Namespace(ns) => {
                let obj = RoleBinding {
                    metadata: managed_meta(&b.name, Some(ns), Some(&b.member)),
                    role_ref: role_ref(b.cluster_role),
                    subjects: Some(vec![subject(b)]),
                };
                let api: Api<RoleBinding> = Api::namespaced(client, ns);
                let action = format!("apply {}", describe(&b.scope, &b.name));
                let patch = Patch::Apply(&obj);
                self.idempotent("rolebindings.apply", &action, || {
                    api.patch(&b.name, &pp, &patch)
                })
                .await?;
            }
        }
        Ok(())
    }

    /// Delete the binding `name` in `scope`; true when it was there.
    pub async fn delete_binding(
        &self,
        scope: &BindingScope,
        name: &str,
    ) -> Result<bool, KubeError> {
        let client = self.client().await?;
        let dp = DeleteParams::default();
        let action = format!("delete {}", describe(scope, name));
        let r = match scope {
            BindingScope::Cluster => {
                let api: Api<ClusterRoleBinding> = Api::all(client);
                self.idempotent("clusterrolebindings.delete", &action, || {
                    api.delete(name, &dp)
                })
                .await
                .map(|_| ())
            }
            BindingScope::Namespace(ns) => {
                let api: Api<RoleBinding> = Api::namespaced(client, ns);
                self.idempotent("rolebindings.delete", &action, || api.delete(name, &dp))
                    .await
                    .map(|_| ())
            }
        };
        match r {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The ClusterRole that aggregates LeaderWorkerSet rights into `edit` and `admin`
    /// (the LWS release does not), applied (when it is missing or differs) so a MEMBER
    /// can run multi-host jobs.
    pub async fn ensure_lws_edit_role(&self) -> Result<(), KubeError> {
        let mut meta = managed_meta(LWS_EDIT_ROLE, None, None);
        if let Some(labels) = meta.labels.as_mut() {
            for verb in ["edit", "admin"] {
                labels.insert(
                    format!("rbac.authorization.k8s.io/aggregate-to-{verb}"),
                    "true".into(),
                );
            }
        }
        let obj = ClusterRole {
            metadata: meta,
            aggregation_rule: None::<AggregationRule>,
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec!["leaderworkerset.x-k8s.io".into()]),
                resources: Some(vec![
                    "leaderworkersets".into(),
                    "leaderworkersets/status".into(),
                ]),
                verbs: [
                    "get", "list", "watch", "create", "update", "patch", "delete",
                ]
                .map(str::to_owned)
                .to_vec(),
                ..PolicyRule::default()
            }]),
        };
        let api: Api<ClusterRole> = Api::all(self.client().await?);
        let have = self
            .idempotent("clusterroles.get", "get ClusterRole", || {
                api.get_opt(LWS_EDIT_ROLE)
            })
            .await?;
        let labels_held = |h: &ClusterRole| {
            let want = obj.metadata.labels.iter().flatten();
            let held = h.metadata.labels.as_ref();
            want.into_iter()
                .all(|(k, v)| held.and_then(|l| l.get(k)) == Some(v))
        };
        if have
            .as_ref()
            .is_some_and(|h| h.rules == obj.rules && labels_held(h))
        {
            return Ok(());
        }
        let pp = apply_params();
        let patch = Patch::Apply(&obj);
        self.idempotent("clusterroles.apply", "apply ClusterRole", || {
            api.patch(LWS_EDIT_ROLE, &pp, &patch)
        })
        .await?;
        Ok(())
    }
}
