//! Membership becomes access (issue 28), end to end: the app, its workers, the
//! production clients and the simulator's IAM and RBAC, and the real `kubectl` as the
//! members (through a TLS front: kubectl sends a bearer token only over https).
//!
//! After `up`, a SYNC_ACCESS grants the owner; adding Bob as MEMBER and Carol as VIEWER
//! syncs again: IAM on the project and the buckets as deploy/README.md's table says, and
//! RBAC bindings labelled `managed-by: kineticd`. Bob creates a Job and Carol may not;
//! a binding someone made by hand and a grant held from someone else survive every
//! sync; removing Bob takes his access away within seconds; a project where kineticd may
//! not set IAM fails the sync naming the permission while RBAC still converges.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::kubectl::{JOB, Kubectl, can_i, kubectl_available};
use crate::common::tls_front;
use crate::support::*;

/// The SYNC_ACCESS operations of the team so far, newest first.
async fn syncs(env: &Env) -> Vec<Value> {
    env.operations_of("SYNC_ACCESS").await["operations"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Wait until every sync is done; the newest one.
async fn settled(env: &Env) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let all = syncs(env).await;
        if !all.is_empty() && all.iter().all(|o| o["done"] == true) {
            return all[0].clone();
        }
        assert!(Instant::now() < deadline, "syncs not done: {all:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The IAM policy's members of `role` on the project, read through the production client.
async fn project_members(env: &Env, role: &str) -> Vec<String> {
    let p = env
        .gcp()
        .resource_manager
        .get_iam_policy(PROJECT)
        .await
        .expect("project policy");
    p.bindings
        .iter()
        .filter(|b| b.role == role && b.condition.is_none())
        .flat_map(|b| b.members.clone())
        .collect()
}

async fn bucket_members(env: &Env, bucket: &str, role: &str) -> Vec<String> {
    let p = env
        .gcp()
        .storage
        .get_bucket_iam_policy(bucket)
        .await
        .expect("bucket policy");
    p.bindings
        .iter()
        .filter(|b| b.role == role)
        .flat_map(|b| b.members.clone())
        .collect()
}

/// kubectl on `cluster` as `email` (through the TLS front: kubectl sends a bearer token
/// only over https); `None` as the administrator.
fn kubectl_as(env: &Env, cluster: &str, email: Option<&str>) -> Kubectl {
    let plain = format!("{}/kube/{}", env.sim.url(), kube_key(cluster));
    let url = url::Url::parse(&plain).expect("endpoint");
    let backend = url.socket_addrs(|| None).expect("address")[0];
    let endpoint = format!("{}{}", tls_front::start(backend), url.path());
    match email {
        Some(e) => Kubectl::with_token(&endpoint, &format!("user:{e}")),
        None => Kubectl::new(&endpoint),
    }
}

/// DELETE Bob from the team; within 10 s kubectl as Bob may not even read Jobs.
async fn remove_bob_and_see_him_lose_access(env: &Env, as_bob: &Kubectl) {
    let removed = Instant::now();
    let r = env
        .app
        .delete(OWNER, &format!("/v1/teams/{TEAM}/members/{BOB}"))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    while can_i(as_bob, &["get", "jobs"]) {
        assert!(
            removed.elapsed() < Duration::from_secs(10),
            "Bob kept access"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn put_member(env: &Env, who: &str, role: &str) -> StatusCode {
    let path = format!("/v1/teams/{TEAM}/members/{who}");
    let r = env.app.put(OWNER, &path, json!({ "role": role })).await;
    r.status
}

/// A fresh environment with cluster `name` up on `accelerator`, when kubectl is installed
/// (these tests read the cluster's RBAC through it); `None` (the test is skipped) when not.
async fn up_with_kubectl(name: &str, accelerator: &str) -> Option<Env> {
    if !kubectl_available() {
        return None;
    }
    let env = env().await;
    env.up_ok(name, json!({"accelerator": accelerator})).await;
    Some(env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_roster_becomes_iam_and_rbac_and_leaving_takes_it_away() {
    let Some(env) = up_with_kubectl("ka", "gpu-l4").await else {
        return;
    };
    // The sync that follows `up` grants the owner.
    let first = settled(&env).await;
    assert_eq!(first["metadata"]["state"], "SUCCEEDED", "{first}");
    assert_eq!(first["response"]["@type"], "AccessSyncReport", "{first}");
    let owner = format!("user:{OWNER}");
    assert!(
        project_members(&env, "roles/container.clusterViewer")
            .await
            .contains(&owner)
    );

    // Someone grants Carol objectAdmin on the jobs bucket by hand: hers to keep.
    let jobs = format!("{PROJECT}-kn-ka-jobs");
    let carol = format!("user:{CAROL}");
    env.gcp()
        .storage
        .add_bucket_bindings(
            &jobs,
            &[("roles/storage.objectAdmin", carol.as_str())],
            &Default::default(),
        )
        .await
        .expect("a grant by hand");

    assert_eq!(put_member(&env, BOB, "MEMBER").await, StatusCode::OK);
    assert_eq!(put_member(&env, CAROL, "VIEWER").await, StatusCode::OK);
    let done = settled(&env).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");

    // IAM as the table says: everyone views the cluster; Bob writes the buckets and may
    // build; Carol reads.
    let bob = format!("user:{BOB}");
    let viewers = project_members(&env, "roles/container.clusterViewer").await;
    assert!(
        viewers.contains(&bob) && viewers.contains(&carol),
        "{viewers:?}"
    );
    let builders = project_members(&env, "roles/cloudbuild.builds.editor").await;
    assert!(
        builders.contains(&bob) && !builders.contains(&carol),
        "{builders:?}"
    );
    let state = format!("{PROJECT}-kinetic-state");
    assert!(
        bucket_members(&env, &state, "roles/storage.objectAdmin")
            .await
            .contains(&bob)
    );
    assert!(
        bucket_members(&env, &jobs, "roles/storage.objectAdmin")
            .await
            .contains(&bob)
    );
    assert!(
        bucket_members(&env, &jobs, "roles/storage.objectViewer")
            .await
            .contains(&carol)
    );

    // RBAC through the real kubectl as each member.
    let admin = kubectl_as(&env, "ka", None);
    let as_bob = kubectl_as(&env, "ka", Some(BOB));
    let as_carol = kubectl_as(&env, "ka", Some(CAROL));
    assert!(can_i(&as_bob, &["create", "jobs"]));
    assert!(can_i(&as_bob, &["get", "pods", "--subresource=log"]));
    assert!(can_i(
        &as_bob,
        &["create", "leaderworkersets.leaderworkerset.x-k8s.io"]
    ));
    as_bob.ok(&["create", "-f", "-"], Some(JOB));
    assert!(can_i(&as_carol, &["get", "jobs"]));
    assert!(!can_i(&as_carol, &["create", "jobs"]));
    let (ok, _, err) = as_carol.run(&["delete", "job", "train"], None);
    assert!(!ok && err.contains("Forbidden"), "{err}");
    let managed = admin.ok(
        &[
            "get",
            "clusterrolebindings,rolebindings",
            "-A",
            "-l",
            "managed-by=kineticd",
            "-o",
            "name",
        ],
        None,
    );
    assert!(managed.contains("kineticd:edit:"), "{managed}");
    // A binding made by hand, without the label.
    let by_hand = format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: carol-by-hand\n\
         roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: view\n\
         subjects:\n- apiGroup: rbac.authorization.k8s.io\n  kind: User\n  name: {CAROL}\n"
    );
    admin.ok(&["apply", "-f", "-"], Some(&by_hand));

    // Bob leaves: his access is gone within seconds.
    remove_bob_and_see_him_lose_access(&env, &as_bob).await;
    let gone = settled(&env).await;
    assert_eq!(gone["metadata"]["state"], "SUCCEEDED", "{gone}");
    let revoked = gone["response"]["revoked"].as_array().expect("revoked");
    assert!(
        revoked.iter().all(|g| g["member"] == bob.as_str()),
        "{gone}"
    );
    assert!(
        !project_members(&env, "roles/container.clusterViewer")
            .await
            .contains(&bob)
    );
    assert!(
        !bucket_members(&env, &jobs, "roles/storage.objectAdmin")
            .await
            .contains(&bob)
    );
    let (ok, _, err) = as_bob.run(&["get", "pods"], None);
    assert!(!ok && err.contains("Forbidden"), "{err}");
    // What others made survives: Carol's grant by hand and her binding by hand.
    assert!(
        bucket_members(&env, &jobs, "roles/storage.objectAdmin")
            .await
            .contains(&carol)
    );
    admin.ok(&["get", "clusterrolebinding", "carol-by-hand"], None);
    let held = done["response"]["alreadyHeld"]
        .as_array()
        .expect("alreadyHeld");
    assert!(
        held.is_empty() || held.iter().all(|g| g["member"] == carol.as_str()),
        "{done}"
    );

    // A project where kineticd may not set IAM: the sync fails naming the permission,
    // and RBAC still converges (Carol, promoted, may now create Jobs).
    env.arm(
        "cloudresourcemanager",
        "projects.setIamPolicy",
        "HTTP_403",
        50,
    )
    .await;
    assert_eq!(put_member(&env, CAROL, "MEMBER").await, StatusCode::OK);
    let failed = settled(&env).await;
    assert_eq!(failed["metadata"]["state"], "FAILED", "{failed}");
    assert_eq!(
        failed["error"]["details"][0]["reason"], "ACCESS_SYNC_FORBIDDEN",
        "{failed}"
    );
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("resourcemanager.projects.setIamPolicy"),
        "{message}"
    );
    assert!(can_i(&as_carol, &["create", "jobs"]));
    assert!(
        project_members(&env, "roles/container.clusterViewer")
            .await
            .contains(&carol)
    );
}

#[tokio::test]
async fn a_group_is_a_member_only_in_its_group_form() {
    let env = env().await;
    for (who, status) in [
        ("group:ml-leads@example.com", StatusCode::OK),
        ("ml-leads@googlegroups.com", StatusCode::BAD_REQUEST),
        ("user:alice@example.com", StatusCode::BAD_REQUEST),
        ("domain:example.com", StatusCode::BAD_REQUEST),
    ] {
        let path = format!("/v1/teams/{TEAM}/members/{who}");
        let r = env.app.put(OWNER, &path, json!({"role": "VIEWER"})).await;
        assert_eq!(r.status, status, "{who}: {}", r.body);
        if status == StatusCode::BAD_REQUEST {
            assert_eq!(r.reason(), "INVALID_NAME", "{who}");
        }
    }
    let members = env
        .app
        .get(OWNER, &format!("/v1/teams/{TEAM}/members"))
        .await;
    let listed: Vec<&str> = members.body["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m["email"].as_str())
        .collect();
    assert!(listed.contains(&"group:ml-leads@example.com"), "{listed:?}");
}

#[tokio::test]
async fn sync_access_on_demand_coalesces_and_needs_a_member() {
    let env = env().await;
    env.up_ok("kb", json!({"accelerator": "cpu"})).await;
    settled(&env).await;
    let path = format!("{}:syncAccess", cluster_path("kb"));
    let r = env.app.post(OWNER, &path, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["metadata"]["type"], "SYNC_ACCESS");
    let done = env
        .app
        .wait_done(OWNER, r.body["name"].as_str().unwrap())
        .await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    // A VIEWER may not; an outsider does not see the project.
    env.app.member(OWNER, TEAM, CAROL, "VIEWER").await;
    let r = env.app.post(CAROL, &path, json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = env
        .app
        .post("eve@elsewhere.example", &path, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
}

/// A fault at each step's write (the bindings, the project policy, a bucket policy, the
/// builds account's policy) is ridden out: the sync succeeds and the member holds each
/// grant once; a sync run again changes nothing (no policy is written, no binding
/// applied).
#[tokio::test]
async fn a_fault_at_each_step_is_ridden_out_and_a_second_sync_changes_nothing() {
    let env = env().await;
    env.up_ok("kc", json!({"accelerator": "cpu"})).await;
    settled(&env).await;
    let faults = [
        ("kube", "kube.apply"),
        ("cloudresourcemanager", "projects.setIamPolicy"),
        ("storage", "buckets.setIamPolicy"),
        ("iam", "serviceAccounts.setIamPolicy"),
    ];
    for (i, (service, method)) in faults.iter().enumerate() {
        env.arm(service, method, "HTTP_503", 1).await;
        let who = format!("m{i}@example.com");
        assert_eq!(put_member(&env, &who, "MEMBER").await, StatusCode::OK);
        let done = settled(&env).await;
        assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{method}: {done}");
        let member = format!("user:{who}");
        let viewers = project_members(&env, "roles/container.clusterViewer").await;
        assert_eq!(
            viewers.iter().filter(|m| **m == member).count(),
            1,
            "{method}"
        );
        let failed = env
            .journal(service, method)
            .await
            .iter()
            .filter(|e| e["status"] == 503)
            .count();
        assert_eq!(failed, 1, "{method}: the fault fired once");
    }
    let writes = env.ok_calls("", "").await.len();
    let path = format!("{}:syncAccess", cluster_path("kc"));
    let r = env.app.post(OWNER, &path, json!({})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let again = env
        .app
        .wait_done(OWNER, r.body["name"].as_str().unwrap())
        .await;
    assert_eq!(again["metadata"]["state"], "SUCCEEDED", "{again}");
    let report = &again["response"];
    for field in ["granted", "revoked", "bindingsApplied", "bindingsDeleted"] {
        assert_eq!(report[field], json!([]), "{field}: {again}");
    }
    let after: Vec<Value> = env
        .ok_calls("", "")
        .await
        .into_iter()
        .skip(writes)
        .collect();
    assert!(
        after.iter().all(|e| {
            let m = e["method"].as_str().unwrap_or_default();
            !m.ends_with("setIamPolicy") && m != "kube.apply" && m != "kube.delete"
        }),
        "a second sync wrote: {after:?}"
    );
}

/// Removal does not wait for the cluster's other operations: with a pool add hung in
/// GKE's `nodePools.create`, a removed member's bindings are gone within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removal_does_not_wait_behind_a_long_operation_of_the_cluster() {
    let Some(env) = up_with_kubectl("kd", "cpu").await else {
        return;
    };
    assert_eq!(put_member(&env, BOB, "MEMBER").await, StatusCode::OK);
    settled(&env).await;
    let as_bob = kubectl_as(&env, "kd", Some(BOB));
    assert!(can_i(&as_bob, &["create", "jobs"]));

    env.arm("container", "nodePools.create", "TIMEOUT", 1).await;
    let r = env.post_pool("kd", json!({"accelerator": "gpu-l4"})).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let pool_op = r.body;
    let hung = Instant::now();
    // Its pool step is waiting on the hung `nodePools.create`.
    loop {
        let op = env.op(&pool_op).await;
        let waiting = op["metadata"]["progress"]["steps"]
            .as_array()
            .is_some_and(|steps| {
                steps.iter().any(|st| {
                    st["id"].as_str().is_some_and(|id| id.starts_with("pool:"))
                        && st["state"] == "RUNNING"
                })
            });
        if waiting {
            break;
        }
        assert!(
            hung.elapsed() < Duration::from_secs(30),
            "the pool add never reached GKE: {op}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    remove_bob_and_see_him_lose_access(&env, &as_bob).await;
    let pool = env.op(&pool_op).await;
    assert_eq!(
        pool["done"], false,
        "the pool add is still waiting on GKE: {pool}"
    );
    let name = pool_op["name"].as_str().expect("name");
    env.app.op_action(OWNER, name, "cancel").await;
}
