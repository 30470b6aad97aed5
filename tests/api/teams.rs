//! Teams: create, list, get, patch, delete, project claims, and `/v1/me`.

use chrono::DateTime;
use serde_json::{Value, json};

use crate::common::{ADMIN, BOB, TestApp};
use crate::support::{
    acme_app, acme_cluster, expect_error, expect_error_saying, expect_not_found, message, meta,
    names, ok,
};

const ALICE: &str = "alice@example.com";

#[track_caller]
fn assert_rfc3339(v: &Value) {
    let s = v
        .as_str()
        .unwrap_or_else(|| panic!("timestamp not a string: {v}"));
    DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("{s}: {e}"));
}

#[tokio::test]
async fn create_get_list_team() {
    let app = TestApp::spawn().await;
    let r = app
        .post(
            ALICE,
            "/v1/teams",
            json!({"teamId": "ml-research", "displayName": "ML Research",
                   "projects": ["zeta-project", "alpha-project", "zeta-project"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{:#}", r.body);
    let t = r.body;
    assert_eq!(t["name"], "teams/ml-research");
    assert_eq!(t["teamId"], "ml-research");
    assert_eq!(t["displayName"], "ML Research");
    assert_eq!(
        t["projects"],
        json!(["alpha-project", "zeta-project"]),
        "sorted, de-duplicated"
    );
    assert_rfc3339(&t["createTime"]);
    assert_rfc3339(&t["updateTime"]);
    assert!(!t["etag"].as_str().unwrap_or("").is_empty());

    assert_eq!(ok(app.get(ALICE, "/v1/teams/ml-research").await), t);
    let list = ok(app.get(ALICE, "/v1/teams").await);
    assert_eq!(list["teams"], json!([t]));
    assert!(list.get("nextPageToken").is_none(), "{list:#}");

    // Others see nothing of it; service admins see everything.
    app.team(BOB, "bob-team", &[]).await;
    assert_eq!(
        names(&ok(app.get(BOB, "/v1/teams").await), "teams", "teamId"),
        ["bob-team"]
    );
    assert_eq!(
        names(&ok(app.get(ADMIN, "/v1/teams").await), "teams", "teamId"),
        ["bob-team", "ml-research"]
    );
    assert_eq!(
        ok(app.get(ADMIN, "/v1/teams/ml-research").await)["teamId"],
        "ml-research"
    );
    // A team with no displayName and no projects.
    let bare = ok(app.get(BOB, "/v1/teams/bob-team").await);
    assert_eq!(bare["displayName"], "");
    assert_eq!(bare["projects"], json!([]));
}

#[tokio::test]
async fn me_reports_identity_roles_and_admin() {
    let app = TestApp::spawn().await;
    let me = ok(app.get(ALICE, "/v1/me").await);
    assert_eq!(
        me,
        json!({"email": ALICE, "admin": false, "teams": [], "activeProfile": null})
    );
    app.team(ALICE, "zebra-team", &[]).await;
    app.team(BOB, "apple-team", &[]).await;
    app.member(BOB, "apple-team", ALICE, "VIEWER").await;
    let me = ok(app.get(ALICE, "/v1/me").await);
    assert_eq!(
        me["teams"],
        json!([{"team": "teams/apple-team", "role": "VIEWER"}, {"team": "teams/zebra-team", "role": "OWNER"}])
    );
    let admin = ok(app.get(ADMIN, "/v1/me").await);
    assert_eq!(admin["email"], ADMIN);
    assert_eq!(admin["admin"], true);
    assert_eq!(admin["teams"], json!([]));
}

#[tokio::test]
async fn invalid_team_ids_and_projects() {
    let app = TestApp::spawn().await;
    let long = "a".repeat(41);
    for bad in ["ab", "1abc", "Abc", "ab_c", "abc!", "", long.as_str()] {
        let r = app.post(ALICE, "/v1/teams", json!({"teamId": bad})).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
        assert_eq!(meta(&r, "field"), "team id");
        assert!(
            message(&r).contains("^[a-z][a-z0-9-]{2,39}$"),
            "{}",
            message(&r)
        );
    }
    for bad in [
        "short",
        "My-Project",
        "my-project-",
        "9project",
        "my_project",
    ] {
        let r = app
            .post(
                ALICE,
                "/v1/teams",
                json!({"teamId": "abc", "projects": ["good-project", bad]}),
            )
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PROJECT");
        assert_eq!(meta(&r, "project"), bad);
    }
    for bad in ["a\u{7}b".to_owned(), "x".repeat(101)] {
        let body = json!({"teamId": "abc", "displayName": bad});
        let r = app.post(ALICE, "/v1/teams", body).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_DISPLAY_NAME");
    }
    // None of these created anything; the boundary values are fine.
    assert_eq!(ok(app.get(ALICE, "/v1/teams").await)["teams"], json!([]));
    app.team(ALICE, "abc", &[]).await;
    app.team(
        ALICE,
        &"a".repeat(40),
        &["a23456", &format!("p{}", "1".repeat(29))],
    )
    .await;
}

#[tokio::test]
async fn duplicate_team_and_claimed_project() {
    let app = acme_app(ALICE).await;
    for who in [ALICE, BOB] {
        let r = app.post(who, "/v1/teams", json!({"teamId": "acme"})).await;
        expect_error(&r, 409, "ALREADY_EXISTS", "TEAM_EXISTS");
    }
    // The project is taken: the whole create is refused, the id stays free.
    let r = app
        .post(
            BOB,
            "/v1/teams",
            json!({"teamId": "bobs", "projects": ["bob-project", "acme-project"]}),
        )
        .await;
    expect_error(&r, 409, "ALREADY_EXISTS", "PROJECT_CLAIMED");
    assert_eq!(meta(&r, "project"), "acme-project");
    assert!(message(&r).contains("acme-project"), "{}", message(&r));
    expect_not_found(&app.get(BOB, "/v1/teams/bobs").await, "TEAM_NOT_FOUND");
    assert_eq!(ok(app.get(BOB, "/v1/me").await)["teams"], json!([]));
    // bob-project was not claimed by the failed request.
    app.team(BOB, "bobs", &["bob-project"]).await;
    // PATCH cannot take a claimed project either.
    let r = app
        .patch(
            BOB,
            "/v1/teams/bobs",
            json!({"projects": ["bob-project", "acme-project"]}),
        )
        .await;
    expect_error(&r, 409, "ALREADY_EXISTS", "PROJECT_CLAIMED");
    assert_eq!(meta(&r, "project"), "acme-project");
    assert_eq!(
        ok(app.get(BOB, "/v1/teams/bobs").await)["projects"],
        json!(["bob-project"])
    );
    // The original team is untouched by all of this.
    let acme = ok(app.get(ALICE, "/v1/teams/acme").await);
    assert_eq!(acme["projects"], json!(["acme-project"]));
    let members = ok(app.get(ALICE, "/v1/teams/acme/members").await);
    assert_eq!(names(&members, "members", "email"), [ALICE]);
}

#[tokio::test]
async fn patch_team() {
    let app = TestApp::spawn().await;
    let before = app
        .team(ALICE, "acme", &["acme-project", "old-project"])
        .await;
    let t = ok(app
        .patch(ALICE, "/v1/teams/acme", json!({"displayName": "Acme Inc"}))
        .await);
    assert_eq!(t["displayName"], "Acme Inc");
    assert_eq!(
        t["projects"], before["projects"],
        "projects untouched when absent"
    );
    assert_eq!(t["createTime"], before["createTime"]);
    assert_ne!(t["etag"], before["etag"]);
    let updated = DateTime::parse_from_rfc3339(t["updateTime"].as_str().unwrap()).unwrap();
    let created = DateTime::parse_from_rfc3339(before["updateTime"].as_str().unwrap()).unwrap();
    assert!(updated >= created);

    let t = ok(app
        .patch(
            ALICE,
            "/v1/teams/acme",
            json!({"projects": ["new-project", "acme-project"]}),
        )
        .await);
    assert_eq!(t["projects"], json!(["acme-project", "new-project"]));
    assert_eq!(
        t["displayName"], "Acme Inc",
        "displayName untouched when absent"
    );
    assert_eq!(ok(app.get(ALICE, "/v1/teams/acme").await), t);
    // The removed project is free for another team now.
    app.team(BOB, "bobs", &["old-project"]).await;
    // An empty patch changes nothing but is fine; an empty list removes every project.
    let same = ok(app.patch(ALICE, "/v1/teams/acme", json!({})).await);
    assert_eq!(same["projects"], t["projects"]);
    let none = ok(app
        .patch(ALICE, "/v1/teams/acme", json!({"projects": []}))
        .await);
    assert_eq!(none["projects"], json!([]));
    // Bad values are refused with the field's reason.
    for (body, reason) in [
        (json!({"projects": ["BAD"]}), "INVALID_PROJECT"),
        (
            json!({"displayName": "y".repeat(101)}),
            "INVALID_DISPLAY_NAME",
        ),
    ] {
        let r = app.patch(ALICE, "/v1/teams/acme", body).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", reason);
    }
    // Unknown team, even for a service admin.
    let r = app
        .patch(ADMIN, "/v1/teams/nope-team", json!({"displayName": "x"}))
        .await;
    expect_not_found(&r, "TEAM_NOT_FOUND");
}

#[tokio::test]
async fn patch_cannot_remove_a_project_with_live_clusters() {
    let app = TestApp::spawn().await;
    app.team(
        ALICE,
        "acme",
        &["acme-project", "spare-project", "done-project"],
    )
    .await;
    acme_cluster(&app).await;
    let r = app
        .patch(
            ALICE,
            "/v1/teams/acme",
            json!({"projects": ["spare-project"]}),
        )
        .await;
    expect_error_saying(
        &r,
        409,
        "FAILED_PRECONDITION",
        "PROJECT_HAS_CLUSTERS",
        "acme-project",
    );
    // Nothing changed, not even the display name sent alongside.
    let r2 = app
        .patch(
            ALICE,
            "/v1/teams/acme",
            json!({"displayName": "X", "projects": []}),
        )
        .await;
    expect_error(&r2, 409, "FAILED_PRECONDITION", "PROJECT_HAS_CLUSTERS");
    let t = ok(app.get(ALICE, "/v1/teams/acme").await);
    assert_eq!(
        t["projects"],
        json!(["acme-project", "done-project", "spare-project"])
    );
    assert_eq!(t["displayName"], "");
    // A project whose clusters are all DELETED can go; so can one with none.
    deleted_cluster(
        &app,
        "acme",
        "done-project",
        "old",
        json!({"accelerator": "cpu"}),
    )
    .await;
    let t = ok(app
        .patch(
            ALICE,
            "/v1/teams/acme",
            json!({"projects": ["acme-project"]}),
        )
        .await);
    assert_eq!(t["projects"], json!(["acme-project"]));
}

/// Insert a cluster record in state DELETED with `spec` (as JSON).
pub async fn deleted_cluster(app: &TestApp, team: &str, project: &str, name: &str, spec: Value) {
    kineticd::store::clusters::insert(
        &app.db,
        kineticd::store::clusters::NewCluster {
            project_id: project,
            zone: "us-central1-a",
            name,
            team_id: team,
            state: kineticd::domain::ClusterState::Deleted,
            spec: serde_json::from_value(spec).unwrap(),
            resources: json!({}),
            created_by: ALICE,
        },
    )
    .await
    .expect("insert deleted cluster");
}

#[tokio::test]
async fn delete_team() {
    let app = acme_app(ALICE).await;
    app.member(ALICE, "acme", BOB, "ADMIN").await;
    let r = app.delete(ALICE, "/v1/teams/acme").await;
    assert_eq!(r.status, 204, "{:#}", r.body);
    assert_eq!(r.body, Value::Null, "204 has no body");
    expect_not_found(&app.get(ALICE, "/v1/teams/acme").await, "TEAM_NOT_FOUND");
    expect_not_found(&app.get(ADMIN, "/v1/teams/acme").await, "TEAM_NOT_FOUND");
    assert_eq!(ok(app.get(BOB, "/v1/me").await)["teams"], json!([]));
    expect_not_found(&app.delete(ALICE, "/v1/teams/acme").await, "TEAM_NOT_FOUND");
    // Its id and projects are free again.
    app.team(BOB, "acme", &["acme-project"]).await;
    assert_eq!(
        ok(app.get(BOB, "/v1/teams/acme/members").await)["members"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "no members carried over"
    );
}

#[tokio::test]
async fn delete_team_refused_while_it_has_clusters() {
    let app = acme_app(ALICE).await;
    let c = acme_cluster(&app).await;
    let r = app.delete(ALICE, "/v1/teams/acme").await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "TEAM_HAS_CLUSTERS");
    assert_eq!(meta(&r, "clusters"), "1");
    let r = app.delete(ADMIN, "/v1/teams/acme").await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "TEAM_HAS_CLUSTERS");
    ok(app.get(ALICE, "/v1/teams/acme").await);
    // Once every cluster is DELETED (kept for history), the team can go.
    sqlx::query("UPDATE clusters SET state = 'DELETED' WHERE id = $1")
        .bind(c.id)
        .execute(&app.db)
        .await
        .unwrap();
    deleted_cluster(
        &app,
        "acme",
        "acme-project",
        "older",
        json!({"accelerator": "cpu"}),
    )
    .await;
    let r = app.delete(ALICE, "/v1/teams/acme").await;
    assert_eq!(r.status, 204, "{:#}", r.body);
    expect_not_found(&app.get(ALICE, "/v1/teams/acme").await, "TEAM_NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_have_one_winner() {
    let app = TestApp::spawn().await;
    // Same team id, different projects.
    let calls = (0..6).map(|i| {
        let app = &app;
        let body = json!({"teamId": "contested", "projects": [format!("project-{i:03}")]});
        async move {
            app.post(&format!("user{i}@example.com"), "/v1/teams", body)
                .await
        }
    });
    let results = futures::future::join_all(calls).await;
    let won: Vec<_> = results.iter().filter(|r| r.status == 201).collect();
    assert_eq!(won.len(), 1, "{results:#?}");
    for r in results.iter().filter(|r| r.status != 201) {
        expect_error(r, 409, "ALREADY_EXISTS", "TEAM_EXISTS");
    }
    let t = ok(app.get(ADMIN, "/v1/teams/contested").await);
    assert_eq!(t["projects"], won[0].body["projects"]);
    // Different team ids, same project.
    let calls = (0..6).map(|i| {
        let app = &app;
        let body = json!({"teamId": format!("team-{i}"), "projects": ["shared-project"]});
        async move { app.post(ALICE, "/v1/teams", body).await }
    });
    let results = futures::future::join_all(calls).await;
    assert_eq!(
        results.iter().filter(|r| r.status == 201).count(),
        1,
        "{results:#?}"
    );
    for r in results.iter().filter(|r| r.status != 201) {
        expect_error(r, 409, "ALREADY_EXISTS", "PROJECT_CLAIMED");
    }
    let teams = ok(app.get(ALICE, "/v1/teams").await);
    assert_eq!(
        teams["teams"].as_array().unwrap().len(),
        1,
        "losers left nothing behind"
    );
}
