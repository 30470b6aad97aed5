//! RBAC evaluation against a cluster's store: request attributes from paths, rule
//! matching (resource names, subresources, non-resource URLs), Roles and ClusterRoles,
//! aggregation into the defaults, subjects of every kind, and the Forbidden Status.

use axum::http::Method;
use serde_json::{Value, json};

use super::*;
use crate::sim::kube::cluster::ClusterKube;
use crate::sim::kube::objects::ObjKey;
use crate::sim::kube::request::parse;

const RBAC: &str = "rbac.authorization.k8s.io";

fn req(method: Method, query: &[(&str, &str)]) -> Req {
    Req {
        method,
        query: query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        accept: String::new(),
        media: String::new(),
        body: Default::default(),
    }
}

fn attrs(method: Method, path: &str, query: &[(&str, &str)]) -> Attrs {
    attributes(&parse(path).expect("path"), path, &req(method, query))
}

fn user(token: &str) -> Caller {
    authenticate(Some(&format!("Bearer {token}")))
        .expect("valid")
        .expect("a user")
}

fn put(c: &mut ClusterKube, plural: &str, ns: &str, obj: Value) {
    let name = obj["metadata"]["name"].as_str().expect("name").to_owned();
    c.api.put(ObjKey::new(RBAC, plural, ns, &name), obj);
}

/// Bind `role` (a Role when `role_kind` says so) to `subject`: a RoleBinding in `ns`,
/// or a ClusterRoleBinding when `ns` is empty.
fn bind(c: &mut ClusterKube, ns: &str, role_kind: &str, role: &str, subject: Value) {
    let (kind, plural) = if ns.is_empty() {
        ("ClusterRoleBinding", "clusterrolebindings")
    } else {
        ("RoleBinding", "rolebindings")
    };
    let obj = json!({
        "kind": kind,
        "metadata": {"name": format!("{role}-binding"), "namespace": ns},
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
        "subjects": [subject],
    });
    put(c, plural, ns, obj);
}

fn allowed(c: &ClusterKube, who: &Caller, method: Method, path: &str) -> bool {
    authorize(&c.api, who, &attrs(method, path, &[])).is_ok()
}

/// Check `who` is allowed exactly the GETs of `paths` marked true.
fn gets(c: &ClusterKube, who: &Caller, paths: &[(&str, bool)]) {
    for (path, want) in paths {
        assert_eq!(
            allowed(c, who, Method::GET, path),
            *want,
            "{who:?} GET {path}"
        );
    }
}

#[test]
fn tokens() {
    assert_eq!(authenticate(None), Ok(None));
    assert_eq!(authenticate(Some("Bearer ya29.token")), Ok(None));
    assert_eq!(authenticate(Some("Basic dXNlcjpwdw==")), Ok(None));
    let bob = user("user:bob@x.com,group:team@x.com");
    assert_eq!(bob.user, "bob@x.com");
    assert_eq!(bob.groups, ["team@x.com", "system:authenticated"]);
    for bad in ["user:", "user:bob@x.com,team"] {
        let err = authenticate(Some(&format!("Bearer {bad}"))).expect_err(bad);
        assert_eq!(err.code, 401, "{bad}");
    }
}

#[test]
fn request_attributes() {
    let a = attrs(Method::GET, "api/v1/namespaces/ns1/pods", &[("watch", "1")]);
    assert_eq!(
        (a.verb.as_str(), a.namespace.as_str(), a.resource.as_str()),
        ("watch", "ns1", "pods")
    );
    let a = attrs(Method::GET, "api/v1/namespaces/ns1/pods/p/log", &[]);
    assert_eq!(
        (a.verb.as_str(), a.subresource.as_deref()),
        ("get", Some("log"))
    );
    let a = attrs(Method::GET, "api/v1/namespaces/ns1", &[]);
    assert_eq!((a.namespace.as_str(), a.name.as_str()), ("ns1", "ns1"));
    let a = attrs(Method::DELETE, "apis/batch/v1/namespaces/ns1/jobs", &[]);
    assert_eq!(a.verb, "deletecollection");
    let a = attrs(
        Method::GET,
        "api/v1/namespaces/ns1/pods",
        &[("fieldSelector", "metadata.name=p1")],
    );
    assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "p1"));
    let a = attrs(Method::GET, "apis/batch/v1", &[]);
    assert!(!a.resource_request);
    assert_eq!(
        (a.verb.as_str(), a.path.as_str()),
        ("get", "/apis/batch/v1")
    );
}

#[test]
fn defaults_grant_discovery_and_reviews_and_nothing_else() {
    let c = ClusterKube::new("k");
    let nobody = user("user:nobody@x.com");
    let reviews = "apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    assert!(allowed(&c, &nobody, Method::POST, reviews));
    assert!(!allowed(&c, &nobody, Method::POST, "api/v1/namespaces"));
    gets(
        &c,
        &nobody,
        &[
            ("apis/batch/v1", true),
            ("version", true),
            ("api/v1/namespaces/default/pods", false),
            ("api/v1/namespaces/default", false),
        ],
    );
}

#[test]
fn view_edit_admin_in_a_namespace() {
    let mut c = ClusterKube::new("k");
    for (role, who) in [
        ("view", "v@x.com"),
        ("edit", "e@x.com"),
        ("admin", "a@x.com"),
    ] {
        bind(
            &mut c,
            "t",
            "ClusterRole",
            role,
            json!({"kind": "User", "name": who}),
        );
    }
    let (v, e, a) = (
        user("user:v@x.com"),
        user("user:e@x.com"),
        user("user:a@x.com"),
    );
    let jobs = "apis/batch/v1/namespaces/t/jobs";
    let lws = "apis/leaderworkerset.x-k8s.io/v1/namespaces/t/leaderworkersets/x";
    let secrets = "api/v1/namespaces/t/secrets";
    let bindings = "apis/rbac.authorization.k8s.io/v1/namespaces/t/rolebindings";
    for who in [&v, &e, &a] {
        let read = [
            (jobs, true),
            ("api/v1/namespaces/t/pods/p/log", true),
            ("api/v1/namespaces/t", true),
            (lws, true),
            ("api/v1/nodes", false),
            ("apis/batch/v1/namespaces/other/jobs", false),
            (secrets, who != &v),
        ];
        gets(&c, who, &read);
        assert!(!allowed(&c, who, Method::DELETE, "api/v1/namespaces/t"));
        assert_eq!(allowed(&c, who, Method::POST, jobs), who != &v);
        assert_eq!(allowed(&c, who, Method::PATCH, lws), who != &v);
        assert_eq!(allowed(&c, who, Method::POST, bindings), who == &a);
    }
}

#[test]
fn roles_rules_subjects_and_aggregation() {
    let mut c = ClusterKube::new("k");
    // A Role: one ConfigMap by name, and the status subresource of any resource.
    let narrow = json!({
        "kind": "Role",
        "metadata": {"name": "narrow", "namespace": "t"},
        "rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cfg"]},
            {"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/status"]},
        ],
    });
    put(&mut c, "roles", "t", narrow);
    let sa = json!({"kind": "ServiceAccount", "name": "runner"});
    bind(&mut c, "t", "Role", "narrow", sa);
    let runner = user("user:system:serviceaccount:t:runner");
    let cases = [
        ("api/v1/namespaces/t/configmaps/cfg", true),
        ("api/v1/namespaces/t/configmaps/other", false),
        ("api/v1/namespaces/t/configmaps", false),
        ("apis/batch/v1/namespaces/t/jobs/j/status", true),
        ("apis/batch/v1/namespaces/t/jobs/j", false),
    ];
    gets(&c, &runner, &cases);

    // A group bound cluster-wide to `view`, which a labelled ClusterRole extends.
    let readers = json!({"kind": "Group", "name": "readers"});
    bind(&mut c, "", "ClusterRole", "view", readers);
    let carol = user("user:carol@x.com,group:readers");
    let pods = "api/v1/namespaces/any/pods";
    let widgets = "apis/example.com/v1/namespaces/any/widgets";
    gets(&c, &carol, &[(pods, true), (widgets, false)]);
    let widget_view = json!({
        "kind": "ClusterRole",
        "metadata": {
            "name": "widget-view",
            "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
        },
        "rules": [{"verbs": ["list"], "apiGroups": ["example.com"], "resources": ["widgets"]}],
    });
    put(&mut c, "clusterroles", "", widget_view);
    gets(&c, &carol, &[(pods, true), (widgets, true)]);
    gets(&c, &user("user:dave@x.com"), &[(widgets, false)]);

    // A stored ClusterRole replaces the default of its name.
    let empty = json!({"kind": "ClusterRole", "metadata": {"name": "view"}, "rules": []});
    put(&mut c, "clusterroles", "", empty);
    gets(&c, &carol, &[(pods, false), (widgets, false)]);
}

#[test]
fn forbidden_status_as_kube_apiserver_words_it() {
    let c = ClusterKube::new("k");
    let bob = user("user:bob@x.com");
    let denied =
        |method, path: &str| authorize(&c.api, &bob, &attrs(method, path, &[])).expect_err(path);
    let s = denied(Method::POST, "apis/batch/v1/namespaces/t/jobs");
    assert_eq!((s.code, s.reason), (403, "Forbidden"));
    assert_eq!(
        s.message,
        "jobs.batch is forbidden: User \"bob@x.com\" cannot create resource \"jobs\" in API group \"batch\" in the namespace \"t\""
    );
    assert_eq!(s.details, Some(json!({"kind": "jobs", "group": "batch"})));
    let s = denied(Method::GET, "api/v1/namespaces/t/pods/p/log");
    assert_eq!(
        s.message,
        "pods \"p\" is forbidden: User \"bob@x.com\" cannot get resource \"pods/log\" in API group \"\" in the namespace \"t\""
    );
    assert_eq!(s.details, Some(json!({"kind": "pods", "name": "p"})));
    let s = denied(Method::GET, "api/v1/nodes");
    assert!(
        s.message
            .ends_with("in API group \"\" at the cluster scope"),
        "{}",
        s.message
    );
    let s = denied(Method::POST, "version");
    assert_eq!(
        s.message,
        "forbidden: User \"bob@x.com\" cannot post path \"/version\""
    );
}

#[test]
fn bindings_are_checked_before_they_are_stored() {
    let c = ClusterKube::new("k");
    let defs = crate::sim::kube::resources::all(&c.api);
    let def = |plural: &str| {
        crate::sim::kube::resources::find(&defs, RBAC, "v1", plural).expect("served")
    };
    let (rb, crb) = (def("rolebindings"), def("clusterrolebindings"));
    let good = json!({
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"},
        "subjects": [
            {"apiGroup": RBAC, "kind": "User", "name": "bob@x.com"},
            {"kind": "ServiceAccount", "name": "runner", "namespace": "t"},
        ],
    });
    assert_eq!(validation::check_binding(&rb, "b", &good, None), Ok(()));
    assert_eq!(
        validation::check_binding(&crb, "b", &good, Some(&good)),
        Ok(())
    );
    let mut moved = good.clone();
    moved["roleRef"]["name"] = json!("view");
    let err = validation::check_binding(&rb, "b", &moved, Some(&good)).expect_err("moved");
    assert_eq!(err.code, 422);
    assert!(
        err.message.ends_with(": cannot change roleRef"),
        "{}",
        err.message
    );
    let bad = json!({
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "bob@x.com"}, {"kind": "Robot", "name": "r2"}],
    });
    assert_eq!(
        validation::check_binding(&rb, "b", &bad, None).map_err(|e| e.code),
        Err(422)
    );
    let err = validation::check_binding(&crb, "b", &bad, None).expect_err("bad");
    assert_eq!(
        err.message,
        "ClusterRoleBinding \"b\" is invalid: [roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\", \
         subjects[0].apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\", \
         subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"]"
    );
}
