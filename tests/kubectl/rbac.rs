//! The simulator's RBAC driven by the real `kubectl` as team members: each member's
//! kubeconfig carries the bearer token `user:EMAIL` (sent by kubectl only over https,
//! hence [`tls_front`]); the administrator (the usual kubeconfig's token) makes a namespace and binds `edit` to one member and `view` to another.
//! The editor creates a Job and `kubectl auth can-i` says yes; the viewer reads it but
//! is refused a create with kube-apiserver's Forbidden message; a user with no binding
//! can do nothing; a group bound cluster-wide to `view` reads every namespace but not
//! nodes or secrets; deleting the editor's binding takes the access away at once.

use super::{Kubectl, gpu_cluster, kubectl_available, line_with, tls_front};
use crate::common::kubectl::{JOB, can_i};

const NS: &str = "team";
const EDITOR: &str = "bob@example.com";
const VIEWER: &str = "viewer@example.com";

/// A RoleBinding `name` in the team namespace of ClusterRole `role` to User `user`.
fn binding(name: &str, role: &str, user: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {name}\n  namespace: {NS}\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\n\
         subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {user}\n"
    )
}

/// Run kubectl, which must be refused with kube-apiserver's Forbidden `message`.
fn forbidden(k: &Kubectl, args: &[&str], stdin: Option<&str>, message: &str) {
    let (ok, out, err) = k.run(args, stdin);
    assert!(!ok, "kubectl {args:?} succeeded:\n{out}");
    assert!(
        err.contains("Error from server (Forbidden)") && err.contains(message),
        "kubectl {args:?}: want Forbidden {message:?}, got:\n{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_get_what_their_bindings_grant_through_kubectl() {
    if !kubectl_available() {
        return;
    }
    let (_sim, plain) = gpu_cluster().await;
    let url = url::Url::parse(&plain).expect("endpoint");
    let backend = url.socket_addrs(|| None).expect("address")[0];
    let endpoint = format!("{}{}", tls_front::start(backend), url.path());
    // The administrator's credentials (any token but `user:...`) reach the server now.
    let admin = Kubectl::new(&endpoint);
    let editor = Kubectl::with_token(&endpoint, &format!("user:{EDITOR}"));
    let viewer = Kubectl::with_token(&endpoint, &format!("user:{VIEWER}"));
    let nobody = Kubectl::with_token(&endpoint, "user:nobody@example.com");

    let bindings = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n---\n")
        + &binding("bob-edit", "edit", EDITOR)
        + "---\n"
        + &binding("viewer-view", "view", VIEWER);
    admin.ok(&["apply", "-f", "-"], Some(&bindings));

    // The editor creates a Job in the team namespace, and only there.
    assert!(can_i(&editor, &["create", "jobs", "-n", NS]));
    let created = editor.ok(&["create", "-n", NS, "-f", "-"], Some(JOB));
    assert!(created.contains("job.batch/train created"), "{created}");
    assert!(!can_i(&editor, &["create", "jobs", "-n", "default"]));
    assert!(!can_i(&editor, &["create", "rolebindings", "-n", NS]));
    forbidden(
        &editor,
        &["create", "-n", "default", "-f", "-"],
        Some(JOB),
        &format!(
            "jobs.batch is forbidden: User \"{EDITOR}\" cannot create resource \"jobs\" in API group \"batch\" in the namespace \"default\""
        ),
    );

    // The viewer reads but cannot write.
    let jobs = viewer.ok(&["get", "jobs", "-n", NS], None);
    assert!(jobs.contains("train"), "{jobs}");
    let job = viewer.ok(
        &[
            "get",
            "job",
            "train",
            "-n",
            NS,
            "-o",
            "jsonpath={.metadata.name}",
        ],
        None,
    );
    assert_eq!(job, "train");
    assert!(can_i(&viewer, &["list", "pods", "-n", NS]));
    assert!(can_i(
        &viewer,
        &["get", "pods", "--subresource=log", "-n", NS]
    ));
    assert!(!can_i(&viewer, &["create", "jobs", "-n", NS]));
    assert!(!can_i(&viewer, &["get", "secrets", "-n", NS]));
    let list = viewer.ok(&["auth", "can-i", "--list", "-n", NS], None);
    let jobs = line_with(&list, &["jobs.batch", "[get list watch]"]);
    assert!(!jobs.contains("create"), "{list}");
    assert!(!list.contains("secrets"), "{list}");
    forbidden(
        &viewer,
        &["create", "-n", NS, "-f", "-"],
        Some(&JOB.replace("name: train", "name: other")),
        &format!(
            "jobs.batch is forbidden: User \"{VIEWER}\" cannot create resource \"jobs\" in API group \"batch\" in the namespace \"{NS}\""
        ),
    );
    forbidden(
        &viewer,
        &["delete", "job", "train", "-n", NS],
        None,
        &format!(
            "jobs.batch \"train\" is forbidden: User \"{VIEWER}\" cannot delete resource \"jobs\" in API group \"batch\" in the namespace \"{NS}\""
        ),
    );

    // The Status body as any client reads it (the simulator takes tokens over http too).
    let refused = kineticd::app::http_client()
        .expect("http")
        .post(format!("{plain}/apis/batch/v1/namespaces/{NS}/jobs"))
        .bearer_auth(format!("user:{VIEWER}"))
        .json(&serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "x"}}))
        .send()
        .await
        .expect("POST job");
    assert_eq!(refused.status(), 403);
    let status: serde_json::Value = refused.json().await.expect("Status");
    assert_eq!(
        (
            &status["kind"],
            &status["reason"],
            &status["code"],
            &status["details"]
        ),
        (
            &serde_json::json!("Status"),
            &serde_json::json!("Forbidden"),
            &serde_json::json!(403),
            &serde_json::json!({"kind": "jobs", "group": "batch"})
        )
    );

    // Someone with no binding can do nothing.
    forbidden(
        &nobody,
        &["get", "pods", "-n", NS],
        None,
        "pods is forbidden: User \"nobody@example.com\" cannot list resource \"pods\" in API group \"\" in the namespace \"team\"",
    );
    forbidden(
        &nobody,
        &["get", "nodes"],
        None,
        "nodes is forbidden: User \"nobody@example.com\" cannot list resource \"nodes\" in API group \"\" at the cluster scope",
    );
    assert!(!can_i(&nobody, &["get", "jobs", "-n", NS]));
    // A watch (`--raw` paths start at the host, so the cluster's path prefix is given).
    let watch_pods = format!("{}/api/v1/namespaces/{NS}/pods?watch=1", url.path());
    forbidden(
        &nobody,
        &["get", "--raw", &watch_pods],
        None,
        "pods is forbidden: User \"nobody@example.com\" cannot watch resource \"pods\" in API group \"\" in the namespace \"team\"",
    );

    // A group bound to `view` cluster-wide reads every namespace, not nodes or secrets.
    let crb = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: readers\n\
               roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n\
               subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: Group, name: readers@example.com}\n";
    admin.ok(&["apply", "-f", "-"], Some(crb));
    let reader = Kubectl::with_token(
        &endpoint,
        "user:carol@example.com,group:readers@example.com",
    );
    let pods = reader.ok(&["get", "pods", "-A"], None);
    assert!(pods.starts_with("NAMESPACE") || pods.is_empty(), "{pods}");
    assert!(can_i(&reader, &["list", "jobs", "--all-namespaces"]));
    assert!(!can_i(&reader, &["list", "nodes"]));
    assert!(!can_i(&reader, &["list", "secrets", "-n", "default"]));

    // A binding's role never changes (kube-apiserver refuses; delete and recreate).
    let (ok, _, err) = admin.run(
        &["apply", "-f", "-"],
        Some(&binding("viewer-view", "edit", VIEWER)),
    );
    assert!(!ok && err.contains("cannot change roleRef"), "{err}");
    assert!(!can_i(&viewer, &["create", "jobs", "-n", NS]));

    // Deleting the editor's binding takes the access away at once.
    admin.ok(&["delete", "rolebinding", "bob-edit", "-n", NS], None);
    assert!(!can_i(&editor, &["create", "jobs", "-n", NS]));
    forbidden(
        &editor,
        &["get", "jobs", "-n", NS],
        None,
        &format!(
            "jobs.batch is forbidden: User \"{EDITOR}\" cannot list resource \"jobs\" in API group \"batch\" in the namespace \"{NS}\""
        ),
    );
    // The administrator is untouched by all of this.
    let all = admin.ok(&["get", "jobs", "-n", NS, "-o", "name"], None);
    assert_eq!(all.trim(), "job.batch/train");
}
