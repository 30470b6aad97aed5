//! Team members: list, add, change role, remove, the last-OWNER rule.

use serde_json::{Value, json};

use crate::common::{ADMIN, BOB, CAROL, TestApp};
use crate::support::{
    expect_error, expect_error_saying, expect_invalid, expect_not_found, message, meta, ok,
    put_role,
};

const ALICE: &str = "alice@example.com";

fn roles(body: &Value) -> Vec<(String, String)> {
    body["members"]
        .as_array()
        .unwrap_or_else(|| panic!("no members in {body:#}"))
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn add_change_list_remove_members() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    let list = ok(app.get(ALICE, "/v1/teams/acme/members").await);
    assert_eq!(roles(&list), pairs(&[(ALICE, "OWNER")]));
    let owner = &list["members"][0];
    chrono::DateTime::parse_from_rfc3339(owner["addTime"].as_str().unwrap()).unwrap();
    assert_eq!(owner.as_object().unwrap().len(), 3, "{owner}");

    // Add (email normalised to lower case).
    let m = ok(put_role(&app, ALICE, "Bob@Example.COM", "VIEWER").await);
    assert_eq!(m["email"], BOB);
    assert_eq!(m["role"], "VIEWER");
    let added = m["addTime"].clone();
    // Change the role: same member, same addTime.
    let m = ok(put_role(&app, ALICE, BOB, "ADMIN").await);
    assert_eq!(m["role"], "ADMIN");
    assert_eq!(m["addTime"], added);
    // Putting the same role again is a no-op success.
    ok(put_role(&app, ALICE, BOB, "ADMIN").await);
    // An ADMIN adds someone.
    app.member(BOB, "acme", CAROL, "MEMBER").await;
    let list = ok(app.get(CAROL, "/v1/teams/acme/members").await);
    assert_eq!(
        roles(&list),
        pairs(&[(ALICE, "OWNER"), (BOB, "ADMIN"), (CAROL, "MEMBER")])
    );
    assert_eq!(
        ok(app.get(CAROL, "/v1/me").await)["teams"],
        json!([{"team": "teams/acme", "role": "MEMBER"}])
    );

    // Remove.
    let r = app
        .delete(BOB, &format!("/v1/teams/acme/members/{CAROL}"))
        .await;
    assert_eq!(r.status, 204, "{:#}", r.body);
    assert_eq!(r.body, Value::Null);
    assert_eq!(
        roles(&ok(app.get(ALICE, "/v1/teams/acme/members").await)),
        pairs(&[(ALICE, "OWNER"), (BOB, "ADMIN")])
    );
    // The removed member lost access at once.
    expect_not_found(&app.get(CAROL, "/v1/teams/acme").await, "TEAM_NOT_FOUND");
    // Removing someone who is not a member.
    let r = app
        .delete(ALICE, &format!("/v1/teams/acme/members/{CAROL}"))
        .await;
    expect_not_found(&r, "MEMBER_NOT_FOUND");
    assert!(message(&r).contains(CAROL), "{}", message(&r));
}

#[tokio::test]
async fn members_may_remove_themselves() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    for role in ["VIEWER", "MEMBER", "ADMIN"] {
        app.member(ALICE, "acme", BOB, role).await;
        let r = app
            .delete(BOB, &format!("/v1/teams/acme/members/{BOB}"))
            .await;
        assert_eq!(r.status, 204, "{role}: {:#}", r.body);
        expect_not_found(&app.get(BOB, "/v1/teams/acme").await, "TEAM_NOT_FOUND");
    }
    // A non-member "removing themselves" learns nothing about the team.
    let r = app
        .delete(BOB, &format!("/v1/teams/acme/members/{BOB}"))
        .await;
    expect_not_found(&r, "TEAM_NOT_FOUND");
}

#[tokio::test]
async fn the_last_owner_cannot_leave_or_be_demoted() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    let me = format!("/v1/teams/acme/members/{ALICE}");
    for role in ["ADMIN", "MEMBER", "VIEWER"] {
        let r = app.put(ALICE, &me, json!({"role": role})).await;
        expect_error_saying(&r, 409, "FAILED_PRECONDITION", "LAST_OWNER", "OWNER");
    }
    expect_error(
        &app.delete(ALICE, &me).await,
        409,
        "FAILED_PRECONDITION",
        "LAST_OWNER",
    );
    // Not even a service admin can orphan a team.
    expect_error(
        &app.delete(ADMIN, &me).await,
        409,
        "FAILED_PRECONDITION",
        "LAST_OWNER",
    );
    let r = app.put(ADMIN, &me, json!({"role": "VIEWER"})).await;
    expect_error(&r, 409, "FAILED_PRECONDITION", "LAST_OWNER");
    // Re-affirming OWNER is fine.
    ok(app.put(ALICE, &me, json!({"role": "OWNER"})).await);

    // With a second OWNER, the first may step down, then the second is the last.
    app.member(ALICE, "acme", BOB, "OWNER").await;
    let m = ok(app.put(ALICE, &me, json!({"role": "ADMIN"})).await);
    assert_eq!(m["role"], "ADMIN");
    let bob = format!("/v1/teams/acme/members/{BOB}");
    expect_error(
        &app.delete(BOB, &bob).await,
        409,
        "FAILED_PRECONDITION",
        "LAST_OWNER",
    );
    // Promote alice back, then bob may leave.
    ok(app.put(BOB, &me, json!({"role": "OWNER"})).await);
    assert_eq!(app.delete(BOB, &bob).await.status, 204);
    let list = ok(app.get(ALICE, "/v1/teams/acme/members").await);
    assert_eq!(roles(&list), pairs(&[(ALICE, "OWNER")]));
}

#[tokio::test]
async fn owner_changes_need_an_owner() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    app.member(ALICE, "acme", BOB, "ADMIN").await;
    app.member(ALICE, "acme", CAROL, "OWNER").await;
    // An ADMIN can neither grant OWNER, nor demote or remove an OWNER.
    let r = put_role(&app, BOB, "dave@example.com", "OWNER").await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    assert_eq!(meta(&r, "requiredRole"), "OWNER");
    assert_eq!(meta(&r, "role"), "ADMIN");
    let r = put_role(&app, BOB, BOB, "OWNER").await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    let r = put_role(&app, BOB, CAROL, "VIEWER").await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    let r = app
        .delete(BOB, &format!("/v1/teams/acme/members/{CAROL}"))
        .await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    // Nothing changed.
    let list = ok(app.get(ALICE, "/v1/teams/acme/members").await);
    assert_eq!(
        roles(&list),
        pairs(&[(ALICE, "OWNER"), (BOB, "ADMIN"), (CAROL, "OWNER")])
    );
    // An OWNER can; so can a service admin.
    ok(put_role(&app, CAROL, BOB, "OWNER").await);
    assert_eq!(
        app.delete(ADMIN, &format!("/v1/teams/acme/members/{CAROL}"))
            .await
            .status,
        204
    );
    let list = ok(app.get(ADMIN, "/v1/teams/acme/members").await);
    assert_eq!(roles(&list), pairs(&[(ALICE, "OWNER"), (BOB, "OWNER")]));
}

#[tokio::test]
async fn invalid_roles_and_emails() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    for role in [json!("KING"), json!("viewer"), json!(""), json!(null)] {
        let r = put_role(&app, ALICE, "bob@example.com", role).await;
        expect_invalid(&r, "INVALID_FIELD", "role");
    }
    for email in [
        "not-an-email",
        "@example.com",
        "bob@",
        "bob%20smith@example.com",
    ] {
        let r = put_role(&app, ALICE, email, "VIEWER").await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
        assert_eq!(meta(&r, "field"), "email");
        let r = app
            .delete(ALICE, &format!("/v1/teams/acme/members/{email}"))
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
    }
    assert_eq!(
        roles(&ok(app.get(ALICE, "/v1/teams/acme/members").await)).len(),
        1
    );
    // Unknown team.
    let r = app
        .put(
            ALICE,
            "/v1/teams/nope-team/members/bob@example.com",
            json!({"role": "VIEWER"}),
        )
        .await;
    expect_not_found(&r, "TEAM_NOT_FOUND");
    expect_not_found(
        &app.get(ADMIN, "/v1/teams/nope-team/members").await,
        "TEAM_NOT_FOUND",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_owners_demoting_each_other_at_once_keep_one_owner() {
    let app = TestApp::spawn().await;
    for round in 0..5 {
        let team = format!("race-{round}");
        app.team(ALICE, &team, &[]).await;
        app.member(ALICE, &team, BOB, "OWNER").await;
        let (bob_path, alice_path) = (
            format!("/v1/teams/{team}/members/{BOB}"),
            format!("/v1/teams/{team}/members/{ALICE}"),
        );
        let demote_bob = app.put(ALICE, &bob_path, json!({"role": "ADMIN"}));
        let demote_alice = app.put(BOB, &alice_path, json!({"role": "ADMIN"}));
        let (a, b) = tokio::join!(demote_bob, demote_alice);
        let mut statuses = [a.status.as_u16(), b.status.as_u16()];
        statuses.sort_unstable();
        // One wins; the other is either the last OWNER's refusal or, having lost its
        // own OWNER role first, a permission error. Never two demotions.
        assert_eq!(statuses[0], 200, "{:#} {:#}", a.body, b.body);
        assert!(
            statuses[1] == 409 || statuses[1] == 403,
            "{:#} {:#}",
            a.body,
            b.body
        );
        let list = ok(app.get(ALICE, &format!("/v1/teams/{team}/members")).await);
        let owners = roles(&list)
            .into_iter()
            .filter(|(_, r)| r == "OWNER")
            .count();
        assert_eq!(owners, 1, "{list:#}");
    }
}
