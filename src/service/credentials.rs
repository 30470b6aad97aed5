//! A kubeconfig for the caller (`GET .../clusters/{c}/credentials`): the one `gcloud
//! container clusters get-credentials` writes for the cluster, made from the GKE cluster
//! as `clusters.get` answers now.
//!
//! Invariant: it is exactly gcloud's shape (one cluster, user and context, all named
//! `gke_{project}_{zone}_{cluster}`, the context current; the server `https://ENDPOINT`,
//! the CA as GKE gives it, base64; the `gke-gcloud-auth-plugin` exec user) and holds no
//! secret: whoever uses it authenticates as themselves through the plugin, so a member
//! gets nothing a non-member could use. Visibility is that of every cluster read (404
//! for outsiders); a cluster that is not RUNNING (or RECONCILING: its API server serves
//! while `up` runs again) is 409 CLUSTER_STATE_NOT_RUNNING. One addition to gcloud's: the
//! context's `namespace` is that of the caller's profile of this cluster (the active one
//! if it points here, else the first by id); with no such profile there is none, as
//! gcloud writes it (kubectl then uses `default`). Every kubeconfig given out is a
//! CREDENTIALS_ISSUED event naming the cluster (the kubeconfig itself is not kept).

use serde::Serialize;

use crate::cloud::gcp::types::container::Cluster as GkeCluster;
use crate::domain::ClusterState;
use crate::domain::resource_names::ClusterNames;
use crate::domain::states::EventType;
use crate::store::{self, Db};

use super::clusters::{ClusterPath, record};
use super::{Caller, Error, Result, Services, live};

/// The exec credential plugin gcloud configures for GKE.
pub const AUTH_PLUGIN: &str = "gke-gcloud-auth-plugin";

/// gcloud's `installHint` for the plugin, word for word.
pub const INSTALL_HINT: &str = "Install gke-gcloud-auth-plugin for use with kubectl by \
following https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin";

/// The client-go credential API version of the exec plugin.
const EXEC_API_VERSION: &str = "client.authentication.k8s.io/v1beta1";

/// How many of the caller's profiles are looked through for this cluster's.
const PROFILES_READ: i64 = 1000;

/// `gke_{project}_{zone}_{cluster}`: gcloud's name of the context, cluster and user.
pub fn context_name(path: &ClusterPath) -> String {
    format!(
        "gke_{}_{}_{}",
        path.project.as_str(),
        path.zone.as_str(),
        path.cluster.as_str()
    )
}

/// The kubeconfig (YAML) for the cluster at `path`, for `caller` (VIEWER+).
pub async fn kubeconfig(svc: &Services, caller: &Caller, path: &ClusterPath) -> Result<String> {
    let rec = record(&svc.db, caller, path).await?;
    if !matches!(rec.state, ClusterState::Running | ClusterState::Reconciling) {
        let state = rec.state.as_str();
        return Err(Error::precondition(
            "CLUSTER_STATE_NOT_RUNNING",
            format!(
                "cluster {} is {state}: credentials are given for a RUNNING cluster only; wait for its operation to finish, or run up",
                path.name()
            ),
        )
        .with("cluster", path.name())
        .with("state", state));
    }
    let n = ClusterNames::new(&path.project, &path.zone, &path.cluster);
    let gke = live::gke(&svc.cloud, &n).await?;
    let namespace = profile_namespace(&svc.db, caller, &path.name()).await?;
    let kubeconfig = render(&context_name(path), &gke, namespace)?;
    // What was given and to whom; never the kubeconfig.
    let cluster = path.name();
    let details = serde_json::json!({"cluster": cluster});
    let team = Some(rec.team_id.as_str());
    super::audit::append_by(
        &svc.db,
        caller,
        team,
        EventType::CredentialsIssued,
        &cluster,
        details,
    )
    .await?;
    Ok(kubeconfig)
}

/// The namespace of the caller's profile of `cluster` (see the module's invariant).
async fn profile_namespace(db: &Db, caller: &Caller, cluster: &str) -> Result<Option<String>> {
    let me = caller.email.as_str();
    if let Some(p) = store::profiles::active(db, me).await?
        && p.cluster == cluster
    {
        return Ok(Some(p.namespace));
    }
    Ok(store::profiles::list(db, me, None, PROFILES_READ)
        .await?
        .into_iter()
        .find(|p| p.cluster == cluster)
        .map(|p| p.namespace))
}

/// The kubeconfig of `gke` with every entry named `name` (503 CLUSTER_NOT_READY while
/// GKE gives no endpoint).
pub fn render(name: &str, gke: &GkeCluster, namespace: Option<String>) -> Result<String> {
    let access = live::access(gke)?;
    let config = Kubeconfig {
        api_version: "v1",
        clusters: vec![NamedCluster {
            name,
            cluster: ClusterEntry {
                certificate_authority_data: access.ca_certificate.filter(|c| !c.trim().is_empty()),
                server: server(&access.endpoint),
            },
        }],
        contexts: vec![NamedContext {
            name,
            context: ContextEntry {
                cluster: name,
                namespace,
                user: name,
            },
        }],
        current_context: name,
        kind: "Config",
        preferences: Preferences {},
        users: vec![NamedUser {
            name,
            user: UserEntry {
                exec: Exec {
                    api_version: EXEC_API_VERSION,
                    command: AUTH_PLUGIN,
                    install_hint: INSTALL_HINT,
                    provide_cluster_info: true,
                },
            },
        }],
    };
    serde_saphyr::to_string(&config).map_err(|e| Error::internal(&e))
}

/// gcloud's `https://ENDPOINT`; an endpoint that is already a URL (a simulator's) is kept.
fn server(endpoint: &str) -> String {
    let e = endpoint.trim().trim_end_matches('/');
    if e.starts_with("https://") || e.starts_with("http://") {
        e.to_owned()
    } else {
        format!("https://{e}")
    }
}

// The file's shape, fields in gcloud's (sorted) order.

#[derive(Serialize)]
struct Kubeconfig<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    clusters: Vec<NamedCluster<'a>>,
    contexts: Vec<NamedContext<'a>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
    kind: &'static str,
    preferences: Preferences,
    users: Vec<NamedUser<'a>>,
}

/// `preferences: {}`.
#[derive(Serialize)]
struct Preferences {}

#[derive(Serialize)]
struct NamedCluster<'a> {
    cluster: ClusterEntry,
    name: &'a str,
}

#[derive(Serialize)]
struct ClusterEntry {
    #[serde(
        rename = "certificate-authority-data",
        skip_serializing_if = "Option::is_none"
    )]
    certificate_authority_data: Option<String>,
    server: String,
}

#[derive(Serialize)]
struct NamedContext<'a> {
    context: ContextEntry<'a>,
    name: &'a str,
}

#[derive(Serialize)]
struct ContextEntry<'a> {
    cluster: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    user: &'a str,
}

#[derive(Serialize)]
struct NamedUser<'a> {
    name: &'a str,
    user: UserEntry,
}

#[derive(Serialize)]
struct UserEntry {
    exec: Exec,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Exec {
    api_version: &'static str,
    command: &'static str,
    install_hint: &'static str,
    provide_cluster_info: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::gcp::types::container::MasterAuth;

    fn gke(endpoint: Option<&str>) -> GkeCluster {
        GkeCluster {
            name: "c".into(),
            endpoint: endpoint.map(str::to_owned),
            master_auth: Some(MasterAuth {
                cluster_ca_certificate: Some("Q0EK".into()),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn gclouds_shape_with_the_profiles_namespace() {
        let yaml = render("gke_p_z_c", &gke(Some("10.0.0.1")), Some("team-a".into())).unwrap();
        let v: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "v1",
                "clusters": [{"cluster": {"certificate-authority-data": "Q0EK",
                    "server": "https://10.0.0.1"}, "name": "gke_p_z_c"}],
                "contexts": [{"context": {"cluster": "gke_p_z_c", "namespace": "team-a",
                    "user": "gke_p_z_c"}, "name": "gke_p_z_c"}],
                "current-context": "gke_p_z_c",
                "kind": "Config",
                "preferences": {},
                "users": [{"name": "gke_p_z_c", "user": {"exec": {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "command": "gke-gcloud-auth-plugin",
                    "installHint": INSTALL_HINT,
                    "provideClusterInfo": true}}}],
            })
        );
    }

    #[test]
    fn no_profile_no_namespace_and_urls_kept() {
        let yaml = render("n", &gke(Some("http://127.0.0.1:9/kube/k/")), None).unwrap();
        let v: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
        assert_eq!(v["contexts"][0]["context"].get("namespace"), None);
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "http://127.0.0.1:9/kube/k"
        );
    }

    #[test]
    fn no_endpoint_is_not_ready() {
        let e = render("n", &gke(None), None).unwrap_err();
        assert_eq!(e.reason, "CLUSTER_NOT_READY");
    }
}
