//! Access seen and repaired (issue 28 item 3), end to end: after `up` and its sync, the
//! status has no drift and `:diagnose`'s `access` check is OK; a managed binding deleted
//! by hand, a managed binding the roster does not justify and the owner's
//! `roles/container.clusterViewer` revoked behind kineticd's back show as drift (MISSING,
//! UNRECORDED) and make the check FAIL with `:syncAccess` as the fix; after that sync,
//! both are clean again. The preview of `up` lists what the sync after it grants.

use kineticd::cloud::kube::rbac::ManagedBinding;
use kineticd::domain::Role;
use kineticd::domain::access::{BindingScope, Member, rbac_bindings};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::*;

const C: &str = "kv";
const VIEWER_ROLE: &str = "roles/container.clusterViewer";

/// The `access` check of a diagnosis of `C`.
async fn access_check(env: &Env) -> Value {
    let path = format!("{}:diagnose", cluster_path(C));
    let r = env.app.post(OWNER, &path, json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "access")
        .cloned()
        .unwrap_or_else(|| panic!("no access check: {}", r.body))
}

/// The status's drift entries whose type is an RBAC binding.
async fn access_drift(env: &Env) -> Vec<Value> {
    let s = env.status(C).await;
    s["drift"]
        .as_array()
        .unwrap_or_else(|| panic!("no drift: {s}"))
        .iter()
        .filter(|d| d["type"].as_str().is_some_and(|t| t.starts_with("rbac.")))
        .cloned()
        .collect()
}

#[tokio::test]
async fn status_and_diagnose_see_access_drift_and_sync_access_repairs_it() {
    let env = env().await;
    env.up_ok(C, json!({"accelerator": "cpu"})).await;
    env.syncs_settled().await;
    let s = env.status(C).await;
    assert_eq!(s["drift"], json!([]), "{s}");
    let check = access_check(&env).await;
    assert_eq!(check["status"], "OK", "{check}");
    assert!(
        check["message"]
            .as_str()
            .unwrap()
            .contains("1 roster member"),
        "{check}"
    );

    // By hand: the owner's admin binding deleted, a managed binding for someone who is
    // not on the roster made, and the owner's clusterViewer revoked.
    let k = kube(&env, C);
    let have: Vec<ManagedBinding> = k.managed_bindings().await.expect("bindings");
    let admin = have
        .iter()
        .find(|b| b.cluster_role == "admin")
        .unwrap_or_else(|| panic!("no admin binding: {have:?}"))
        .clone();
    assert!(k.delete_binding(&admin.scope, &admin.name).await.unwrap());
    let ghost = Member::parse("ghost@example.com").unwrap();
    let extra = rbac_bindings(&ghost, Role::Viewer, &[]).remove(0);
    k.apply_binding(&extra)
        .await
        .expect("a managed binding by hand");
    let owner = format!("user:{OWNER}");
    env.gcp()
        .resource_manager
        .remove_bindings(
            PROJECT,
            &[(VIEWER_ROLE, owner.as_str())],
            &Default::default(),
        )
        .await
        .expect("revoke");

    let cluster = format!("projects/{PROJECT}/zones/{ZONE}/clusters/{C}");
    let fix = format!("POST /v1/{cluster}:syncAccess");
    let drift = access_drift(&env).await;
    assert_eq!(drift.len(), 2, "{drift:#?}");
    // (problem, the binding, what its message says besides the fix)
    for (problem, name, says) in [
        ("MISSING", &admin.name, OWNER),
        ("UNRECORDED", &extra.name, "no longer justifies"),
    ] {
        let d = drift
            .iter()
            .find(|d| d["problem"] == problem)
            .unwrap_or_else(|| panic!("no {problem}: {drift:#?}"));
        let resource = format!("{cluster}/clusterrolebindings/{name}");
        assert_eq!(
            (&d["resource"], &d["type"]),
            (&json!(resource), &json!("rbac.clusterRoleBinding"))
        );
        let m = d["message"].as_str().unwrap();
        assert!(m.contains(&fix) && m.contains(says), "{m}");
    }

    let check = access_check(&env).await;
    assert_eq!(check["status"], "FAIL", "{check}");
    let m = check["message"].as_str().unwrap();
    for want in [
        format!("ClusterRoleBinding {} missing", admin.name),
        format!("ClusterRoleBinding {} extra", extra.name),
        format!("{owner} lacks {VIEWER_ROLE} on projects/{PROJECT}"),
    ] {
        assert!(m.contains(&want), "message lacks {want:?}: {check:#}");
    }
    let f = check["fix"].as_str().unwrap();
    assert!(f.starts_with(&fix), "{check:#}");
    assert!(
        f.contains("resourcemanager.projects.setIamPolicy"),
        "{check:#}"
    );

    // The fix: one sync converges the bindings and grants the role again.
    let r = env
        .app
        .post(OWNER, &format!("{}:syncAccess", cluster_path(C)), json!({}))
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    env.syncs_settled().await;
    let s = env.status(C).await;
    assert_eq!(s["drift"], json!([]), "{s}");
    let check = access_check(&env).await;
    assert_eq!(check["status"], "OK", "{check}");
    assert_eq!(check["fix"], "", "{check}");
    let again: Vec<ManagedBinding> = k.managed_bindings().await.expect("bindings");
    assert!(again.iter().any(|b| b.name == admin.name), "{again:?}");
    assert!(
        !again
            .iter()
            .any(|b| b.name == extra.name && b.scope == BindingScope::Cluster),
        "{again:?}"
    );
}

#[tokio::test]
async fn the_preview_of_up_lists_the_grants_and_bindings_the_sync_after_it_makes() {
    let env = env().await;
    let owner = format!("user:{OWNER}");
    let has_grant = |plan: &Value, resource: &str, role: &str| {
        plan["access"]["grants"]
            .as_array()
            .unwrap_or_else(|| panic!("no access grants: {plan}"))
            .iter()
            .any(|g| g["resource"] == resource && g["role"] == role && g["member"] == owner)
    };
    // A new cluster, through the preview method and `validateOnly`.
    let preview = format!("{}:previewApply", cluster_path(C));
    let r = env
        .app
        .post(OWNER, &preview, json!({"accelerator": "cpu"}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let plan = r.body;
    let project = format!("projects/{PROJECT}");
    assert!(has_grant(&plan, &project, VIEWER_ROLE), "{plan:#}");
    let state = format!("projects/_/buckets/{PROJECT}-kinetic-state");
    assert!(
        has_grant(&plan, &state, "roles/storage.objectAdmin"),
        "{plan:#}"
    );
    let bindings = plan["access"]["bindings"].as_array().expect("bindings");
    assert_eq!(
        bindings.len(),
        1,
        "the owner is admin cluster-wide: {plan:#}"
    );
    assert_eq!(bindings[0]["kind"], "ClusterRoleBinding");
    assert_eq!(bindings[0]["clusterRole"], "admin");
    assert_eq!(
        bindings[0]["subject"],
        json!({"kind": "User", "name": OWNER})
    );
    assert!(bindings[0].get("namespace").is_none(), "{plan:#}");
    let legacy = env.preview_up(C, json!({"accelerator": "cpu"})).await;
    assert_eq!(legacy["access"], plan["access"]);

    // An existing cluster: the sync after `up` makes the same, and it is what the sync
    // did; the stored plan of the operation carries no preview.
    let done = env.up_ok(C, json!({"accelerator": "cpu"})).await;
    assert!(done["metadata"]["plan"].get("access").is_none(), "{done}");
    let again = env.preview_up(C, json!({})).await;
    assert_eq!(again["access"], plan["access"]);
    env.syncs_settled().await;
    let jobs = format!("projects/_/buckets/{PROJECT}-kn-{C}-jobs");
    assert!(
        has_grant(&again, &jobs, "roles/storage.objectAdmin"),
        "{again:#}"
    );
    let held = env
        .gcp()
        .storage
        .get_bucket_iam_policy(&format!("{PROJECT}-kn-{C}-jobs"))
        .await
        .expect("policy");
    assert!(
        held.bindings
            .iter()
            .any(|b| b.role == "roles/storage.objectAdmin" && b.members.contains(&owner)),
        "{held:?}"
    );
}
