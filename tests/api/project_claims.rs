//! Who may bind a GCP project to a team (issue 24, finding 1): a service admin, or a
//! caller whom the project's IAM policy, as kineticd reads it from Resource Manager,
//! makes an owner or lets set that policy. Policies here are set explicitly through the
//! simulator's `setIamPolicy` (with the production client), which it honours exactly as
//! written; projects nobody set a policy on keep the simulator's dev convenience (every
//! caller owns them), which the rest of the suite relies on.

use kineticd::cloud::gcp::GcpClients;
use kineticd::cloud::gcp::types::iam::{Binding, Expr, Policy};
use kineticd::sim::Sim;
use serde_json::{Value, json};

use crate::common::{ADMIN, BOB, Resp, TestApp};
use crate::support::{expect_error, expect_not_found, message, meta, ok};

const ALICE: &str = "alice@example.com";
const PROJECT: &str = "proj-alpha2";

/// A binding of `role` to `members`; `conditional`: only until 2030.
fn binding(&(role, members, conditional): &(&str, &[&str], bool)) -> Binding {
    let until_2030 = Expr {
        expression: "request.time < timestamp(\"2030-01-01T00:00:00Z\")".into(),
        title: "until 2030".into(),
        ..Expr::default()
    };
    Binding {
        role: role.to_owned(),
        members: members.iter().map(|m| (*m).to_owned()).collect(),
        condition: conditional.then_some(until_2030),
    }
}

/// Replace `project`'s policy by `bindings` (role, members, conditional).
async fn set_policy(gcp: &GcpClients, project: &str, bindings: &[(&str, &[&str], bool)]) {
    let current = gcp.resource_manager.get_iam_policy(project).await.unwrap();
    let policy = Policy {
        version: Some(3),
        bindings: bindings.iter().map(binding).collect(),
        etag: current.etag,
        ..Policy::default()
    };
    gcp.resource_manager
        .set_iam_policy(project, &policy)
        .await
        .unwrap();
}

/// Create custom role `projects/{project}/roles/{id}` in the simulator as `gcloud iam
/// roles create` does (IAM v1 `projects.roles.create`).
async fn custom_role(sim: &Sim, project: &str, id: &str, permissions: &[&str], stage: &str) {
    let r = kineticd::app::http_client()
        .unwrap()
        .post(format!("{}/iam/v1/projects/{project}/roles", sim.url()))
        .json(&json!({"roleId": id, "role": {"title": id, "includedPermissions": permissions, "stage": stage}}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
}

async fn claim(app: &TestApp, who: &str, team: &str, project: &str) -> Resp {
    app.post(
        who,
        "/v1/teams",
        json!({"teamId": team, "projects": [project]}),
    )
    .await
}

/// The created team (asserts 201).
fn created(r: Resp) -> Value {
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.body
}

fn refused(r: &Resp, project: &str) {
    expect_error(r, 403, "PERMISSION_DENIED", "PROJECT_OWNERSHIP_REQUIRED");
    assert_eq!(meta(r, "project"), project);
    assert_eq!(
        meta(r, "permission"),
        "resourcemanager.projects.setIamPolicy"
    );
    let m = message(r);
    assert!(m.contains("roles/owner"), "{m}");
    assert!(m.contains("service admin"), "{m}");
}

/// `project`'s policy: `member` its only (unconditional) owner.
async fn owned_by(gcp: &GcpClients, project: &str, member: &str) {
    set_policy(gcp, project, &[("roles/owner", &[member], false)]).await;
}

/// How many times kineticd read `project`'s policy.
async fn policy_reads(sim: &Sim, project: &str) -> usize {
    let query = [
        ("service", "cloudresourcemanager"),
        ("method", "projects.getIamPolicy"),
    ];
    let http = kineticd::app::http_client().unwrap();
    let of_project = format!("/projects/{project}:");
    crate::sim_journal::sim_journal(&http, &sim.url(), &query)
        .await
        .iter()
        .filter(|e| e["path"].as_str().is_some_and(|p| p.contains(&of_project)))
        .count()
}

#[tokio::test]
async fn only_an_owner_or_an_admin_binds_a_project() {
    let (app, _sim) = TestApp::spawn_sim().await;
    let gcp = app.state.cloud.gcp.clone();
    owned_by(&gcp, PROJECT, "user:alice@example.com").await;

    // Bob squats Alice's project: refused, nothing created.
    let r = claim(&app, BOB, "bobs", PROJECT).await;
    refused(&r, PROJECT);
    assert!(message(&r).contains("gives you no role"), "{}", message(&r));
    expect_not_found(&app.get(ADMIN, "/v1/teams/bobs").await, "TEAM_NOT_FOUND");
    assert_eq!(ok(app.get(BOB, "/v1/me").await)["teams"], json!([]));

    // Alice, an owner of the project, binds it.
    let alpha = created(claim(&app, ALICE, "alpha", PROJECT).await);
    assert_eq!(alpha["projects"], json!([PROJECT]));

    // Alice's team releases it; Bob still cannot take it, neither by a new team nor by
    // adding it to one of his own.
    ok(app
        .patch(ALICE, "/v1/teams/alpha", json!({"projects": []}))
        .await);
    refused(&claim(&app, BOB, "bobs", PROJECT).await, PROJECT);
    let bobs = app.team(BOB, "bobs", &[]).await;
    let r = app
        .patch(BOB, "/v1/teams/bobs", json!({"projects": [PROJECT]}))
        .await;
    refused(&r, PROJECT);
    let after = ok(app.get(BOB, "/v1/teams/bobs").await);
    assert_eq!(after["projects"], json!([]));
    assert_eq!(
        after["etag"], bobs["etag"],
        "a refused claim changes nothing"
    );

    // A service admin may bind any project, policy or not.
    let r = app
        .post(
            ADMIN,
            "/v1/teams",
            json!({"teamId": "platform", "projects": ["proj-nobody1"]}),
        )
        .await;
    set_policy(&gcp, "proj-nobody2", &[]).await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    ok(app
        .patch(
            ADMIN,
            "/v1/teams/platform",
            json!({"projects": ["proj-nobody1", "proj-nobody2"]}),
        )
        .await);

    // The refusals are counted.
    let metrics = app
        .http
        .get(app.url_of("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let refused_count: f64 = metrics
        .lines()
        .find(|l| l.starts_with("kineticd_project_claims_total{outcome=\"REFUSED\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .expect("kineticd_project_claims_total{outcome=REFUSED}");
    assert!(refused_count >= 3.0, "{refused_count}");
}

#[tokio::test]
async fn roles_domains_groups_and_conditions_read_as_iam_would() {
    let (app, sim) = TestApp::spawn_sim().await;
    let gcp = app.state.cloud.gcp.clone();
    // Project IAM Admin through the caller's domain allows it.
    set_policy(
        &gcp,
        "proj-domain",
        &[(
            "roles/resourcemanager.projectIamAdmin",
            &["domain:corp.example.com"],
            false,
        )],
    )
    .await;
    created(claim(&app, "carol@corp.example.com", "carols", "proj-domain").await);
    refused(
        &claim(&app, BOB, "bobs", "proj-domain").await,
        "proj-domain",
    );

    // Editor is not enough; a group's or a conditional owner grant is not visible to
    // kineticd, and the refusal says so.
    set_policy(
        &gcp,
        "proj-groups",
        &[
            ("roles/editor", &["user:bob@example.com"], false),
            ("roles/owner", &["group:admins@example.com"], false),
            ("roles/owner", &["user:bob@example.com"], true),
        ],
    )
    .await;
    let r = claim(&app, BOB, "bobs", "proj-groups").await;
    refused(&r, "proj-groups");
    assert!(message(&r).contains("roles/editor"), "{}", message(&r));
    assert!(message(&r).contains("group"), "{}", message(&r));

    // Custom roles count when IAM says they grant setIamPolicy now.
    let p = "proj-custom";
    custom_role(
        &sim,
        p,
        "binder",
        &[
            "resourcemanager.projects.getIamPolicy",
            "resourcemanager.projects.setIamPolicy",
        ],
        "GA",
    )
    .await;
    custom_role(
        &sim,
        p,
        "reader",
        &["resourcemanager.projects.getIamPolicy"],
        "GA",
    )
    .await;
    custom_role(
        &sim,
        p,
        "retired",
        &["resourcemanager.projects.setIamPolicy"],
        "DISABLED",
    )
    .await;
    set_policy(
        &gcp,
        p,
        &[
            (
                "projects/proj-custom/roles/binder",
                &["user:erin@example.com"],
                false,
            ),
            (
                "projects/proj-custom/roles/reader",
                &["user:frank@example.com"],
                false,
            ),
            (
                "projects/proj-custom/roles/retired",
                &["user:frank@example.com"],
                false,
            ),
        ],
    )
    .await;
    refused(&claim(&app, "frank@example.com", "franks", p).await, p);
    created(claim(&app, "erin@example.com", "erins", p).await);
}

#[tokio::test]
async fn an_unreadable_policy_refuses_and_an_unavailable_one_is_503() {
    let (app, sim) = TestApp::spawn_sim().await;
    let arm = |kind: &'static str| {
        let url = format!("{}/sim/v1/faults", sim.url());
        async move {
            let r = kineticd::app::http_client()
                .unwrap()
                .post(url)
                .json(&json!({"service": "cloudresourcemanager", "method": "projects.getIamPolicy", "kind": kind, "count": 1}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.text().await.unwrap());
        }
    };
    arm("HTTP_403").await;
    let r = claim(&app, ALICE, "alpha", PROJECT).await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PROJECT_POLICY_UNREADABLE");
    assert_eq!(
        meta(&r, "permission"),
        "resourcemanager.projects.getIamPolicy"
    );
    assert!(message(&r).contains("service account"), "{}", message(&r));
    arm("HTTP_503").await;
    let r = claim(&app, ALICE, "alpha", PROJECT).await;
    expect_error(&r, 503, "UNAVAILABLE", "CLOUD_UNAVAILABLE");
    expect_not_found(&app.get(ALICE, "/v1/teams/alpha").await, "TEAM_NOT_FOUND");
    // With Google back, the same request goes through.
    created(claim(&app, ALICE, "alpha", PROJECT).await);
}

#[tokio::test]
async fn bindings_made_before_stay_and_are_not_checked_again() {
    let (app, sim) = TestApp::spawn_sim().await;
    let gcp = app.state.cloud.gcp.clone();
    app.team(ALICE, "alpha", &[PROJECT]).await;
    // The project's policy changes afterwards; the team keeps its project, and changes
    // that do not add a project read no policy.
    owned_by(&gcp, PROJECT, "user:someone@example.com").await;
    let reads = policy_reads(&sim, PROJECT).await;
    ok(app
        .patch(
            ALICE,
            "/v1/teams/alpha",
            json!({"displayName": "Alpha", "projects": [PROJECT]}),
        )
        .await);
    assert_eq!(policy_reads(&sim, PROJECT).await, reads);
    assert_eq!(
        ok(app.get(ALICE, "/v1/teams/alpha").await)["projects"],
        json!([PROJECT])
    );
    // Adding another project checks only that one.
    owned_by(&gcp, "proj-beta22", "user:someone@example.com").await;
    let r = app
        .patch(
            ALICE,
            "/v1/teams/alpha",
            json!({"projects": [PROJECT, "proj-beta22"]}),
        )
        .await;
    refused(&r, "proj-beta22");
    assert_eq!(policy_reads(&sim, PROJECT).await, reads);
}
