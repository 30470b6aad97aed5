//! The audit trail (issue 29): requests accepted and refused, membership changes and
//! operation states recorded with their actor, target and request id; the team's list
//! (members only) and every team's (service admins only), filtered and paged; the table
//! append-only; retention.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{ADMIN, BOB, OUTSIDER, TestApp};
use crate::support::{expect_error, expect_not_found, ok, page_walk, put_role, with_query};

const ALICE: &str = "alice@example.com";

/// The team's events, newest first, as `user`, with an optional filter.
async fn events(app: &TestApp, user: &str, filter: &str) -> Vec<Value> {
    let mut path = "/v1/teams/acme/events?pageSize=1000".to_owned();
    if !filter.is_empty() {
        path = with_query(&path, "filter", &urlencode(filter));
    }
    ok(app.get(user, &path).await)["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events"))
        .clone()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The one event of `kind` on `target` (panics showing the list when there is not
/// exactly one).
#[track_caller]
fn one<'a>(list: &'a [Value], kind: &str, target: &str) -> &'a Value {
    let found: Vec<&Value> = list
        .iter()
        .filter(|e| e["type"] == kind && e["target"] == target)
        .collect();
    assert_eq!(found.len(), 1, "{kind} on {target} in {list:#?}");
    found[0]
}

/// A request as `user` with our own `x-request-id`.
async fn put_member_as(
    app: &TestApp,
    user: &str,
    email: &str,
    role: &str,
    rid: &str,
) -> StatusCode {
    app.request_as(
        user,
        Method::PUT,
        &format!("/v1/teams/acme/members/{email}"),
    )
    .header("x-request-id", rid)
    .json(&json!({"role": role}))
    .send()
    .await
    .unwrap()
    .status()
}

#[tokio::test]
async fn member_changes_and_requests_are_recorded_with_actor_target_and_request_id() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    assert_eq!(
        put_member_as(&app, ALICE, BOB, "VIEWER", "rid-add").await,
        StatusCode::OK
    );
    assert_eq!(
        put_member_as(&app, ALICE, BOB, "ADMIN", "rid-role").await,
        StatusCode::OK
    );
    assert_eq!(
        put_member_as(&app, ALICE, BOB, "VIEWER", "rid-down").await,
        StatusCode::OK
    );
    // Refused by role: a VIEWER may not add members.
    let carol = "carol@example.com";
    let status = put_member_as(&app, BOB, carol, "MEMBER", "rid-refused").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Refused by validation: no team to speak of, as anyone.
    let r = put_role(&app, ALICE, "not-an-email", "MEMBER").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // Reads are not recorded, nor are previews.
    ok(app.get(ALICE, "/v1/teams/acme/members").await);
    let list = events(&app, BOB, "").await;
    let bob = format!("teams/acme/members/{BOB}");

    let added = one(&list, "MEMBER_ADDED", &bob);
    assert_eq!(added["actor"], ALICE);
    assert_eq!(added["requestId"], "rid-add");
    assert_eq!(added["details"], json!({"before": null, "after": "VIEWER"}));
    assert!(
        added["name"]
            .as_str()
            .unwrap()
            .starts_with("teams/acme/events/"),
        "{added}"
    );
    chrono::DateTime::parse_from_rfc3339(added["time"].as_str().unwrap()).unwrap();
    let changes: Vec<&Value> = list
        .iter()
        .filter(|e| e["type"] == "MEMBER_ROLE_CHANGED")
        .collect();
    assert_eq!(
        changes
            .iter()
            .map(|e| e["details"].clone())
            .collect::<Vec<_>>(),
        // Newest first.
        vec![
            json!({"before": "ADMIN", "after": "VIEWER"}),
            json!({"before": "VIEWER", "after": "ADMIN"}),
        ]
    );
    assert_eq!(changes[0]["requestId"], "rid-down");

    let accepted: Vec<&Value> = list
        .iter()
        .filter(|e| e["type"] == "REQUEST_ACCEPTED" && e["target"] == bob.as_str())
        .collect();
    assert_eq!(accepted.len(), 3, "{list:#?}");
    let first = accepted.last().unwrap();
    assert_eq!(first["actor"], ALICE);
    assert_eq!(first["requestId"], "rid-add");
    assert_eq!(
        first["details"],
        json!({"method": "PUT", "path": format!("/v1/teams/acme/members/{BOB}"), "status": 200})
    );

    let refused = one(
        &list,
        "REQUEST_REFUSED",
        &format!("teams/acme/members/{carol}"),
    );
    assert_eq!(refused["actor"], BOB);
    assert_eq!(refused["requestId"], "rid-refused");
    assert_eq!(refused["details"]["status"], 403);
    assert_eq!(refused["details"]["reason"], "PERMISSION_DENIED");
    let invalid = one(&list, "REQUEST_REFUSED", "teams/acme/members/not-an-email");
    assert_eq!(invalid["actor"], ALICE);
    assert_eq!(invalid["details"]["status"], 400);
    assert!(
        invalid["requestId"].as_str().is_some_and(|r| !r.is_empty()),
        "{invalid}"
    );
    assert!(
        !list.iter().any(|e| e["details"]["method"] == "GET"),
        "{list:#?}"
    );

    // The team's creation is the team's first event (newest first: the last).
    let created = list.last().unwrap();
    assert_eq!(created["type"], "TEAM_CREATED");
    assert_eq!(created["target"], "teams/acme");

    // Removing a member.
    let r = app
        .delete(ALICE, &format!("/v1/teams/acme/members/{BOB}"))
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let list = events(&app, ALICE, "type=MEMBER_REMOVED").await;
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(
        list[0]["details"],
        json!({"before": "VIEWER", "after": null})
    );
    assert_eq!(list[0]["actor"], ALICE);
}

#[tokio::test]
async fn operation_states_are_recorded() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    let op = app.noop(ALICE, json!({"team": "acme", "steps": 1})).await;
    let name = op["name"].as_str().unwrap().to_owned();
    let r = app.op_action(ALICE, &name, "cancel").await;
    assert_eq!(r.status, StatusCode::OK, "{:#}", r.body);
    let list = events(&app, ALICE, "type=OPERATION_STATE_CHANGED").await;
    let states: Vec<(Value, Value, Value)> = list
        .iter()
        .filter(|e| e["target"] == name.as_str())
        .map(|e| {
            (
                e["actor"].clone(),
                e["details"]["from"].clone(),
                e["details"]["to"].clone(),
            )
        })
        .collect();
    assert_eq!(
        states,
        vec![
            (json!("kineticd"), json!("QUEUED"), json!("CANCELLED")),
            (json!(ALICE), Value::Null, json!("QUEUED")),
        ]
    );
    assert_eq!(list[0]["details"]["operationType"], "NOOP");
    assert!(list[0]["details"]["reason"].is_string(), "{:#}", list[0]);
    // The cancel request itself, found through the operation's team.
    let all = events(&app, ALICE, "type=REQUEST_ACCEPTED").await;
    let cancel = one(&all, "REQUEST_ACCEPTED", &name);
    assert_eq!(cancel["details"]["path"], format!("/v1/{name}:cancel"));
}

#[tokio::test]
async fn filters_on_type_actor_target_and_time() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    app.member(ALICE, "acme", BOB, "ADMIN").await;
    let before = chrono::Utc::now();
    app.member(BOB, "acme", "carol@example.com", "VIEWER").await;
    let added = events(&app, ALICE, r#"type="MEMBER_ADDED""#).await;
    assert_eq!(added.len(), 2, "{added:#?}");
    assert!(added.iter().all(|e| e["type"] == "MEMBER_ADDED"));
    let since = before.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let recent = events(
        &app,
        ALICE,
        &format!(r#"type=MEMBER_ADDED AND time >= "{since}""#),
    )
    .await;
    assert_eq!(recent.len(), 1, "{recent:#?}");
    assert_eq!(recent[0]["actor"], BOB);
    let older = events(&app, ALICE, &format!(r#"time < "{since}""#)).await;
    assert!(older.iter().all(|e| e["actor"] == ALICE), "{older:#?}");
    let by_bob = events(&app, ALICE, &format!(r#"actor="{BOB}""#)).await;
    assert!(!by_bob.is_empty() && by_bob.iter().all(|e| e["actor"] == BOB));
    let on_team = events(&app, ALICE, r#"target="teams/acme""#).await;
    assert_eq!(on_team.len(), 1, "{on_team:#?}");
    for bad in ["type=NOPE", "time >= yesterday", "color=red", "actor>b"] {
        let r = app
            .get(
                ALICE,
                &format!("/v1/teams/acme/events?filter={}", urlencode(bad)),
            )
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FILTER");
    }
    let r = app.get(ALICE, "/v1/teams/acme/events?fliter=x").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "UNKNOWN_QUERY_PARAMETER");
}

#[tokio::test]
async fn events_are_paged_newest_first() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    for i in 0..6 {
        ok(put_role(&app, ALICE, &format!("m{i}@example.com"), "VIEWER").await);
    }
    let filter = urlencode("type=MEMBER_ADDED");
    let path = format!("/v1/teams/acme/events?filter={filter}");
    let (sizes, names) = page_walk(&app, ALICE, &path, "events", 4, "name").await;
    assert_eq!(sizes, vec![4, 2]);
    let all = events(&app, ALICE, "type=MEMBER_ADDED").await;
    let want: Vec<String> = all
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, want);
    assert_eq!(all[0]["target"], "teams/acme/members/m5@example.com");
    // A token continues only the list it came from.
    let first = ok(app.get(ALICE, &format!("{path}&pageSize=4")).await);
    let token = first["nextPageToken"].as_str().unwrap();
    let r = app
        .get(ALICE, &format!("/v1/teams/acme/events?pageToken={token}"))
        .await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PAGE_TOKEN");
}

#[tokio::test]
async fn outsiders_get_404_and_every_teams_events_are_for_admins() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    app.team(BOB, "other", &[]).await;
    expect_not_found(
        &app.get(OUTSIDER, "/v1/teams/acme/events").await,
        "TEAM_NOT_FOUND",
    );
    expect_not_found(
        &app.get(BOB, "/v1/teams/acme/events").await,
        "TEAM_NOT_FOUND",
    );
    expect_not_found(
        &app.get(ALICE, "/v1/teams/nope/events").await,
        "TEAM_NOT_FOUND",
    );
    let r = app.get(ALICE, "/v1/events").await;
    expect_error(&r, 403, "PERMISSION_DENIED", "PERMISSION_DENIED");
    // A refused team creation has no team: only admins see it.
    let r = app
        .post(OUTSIDER, "/v1/teams", json!({"teamId": "acme"}))
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let all = ok(app.get(ADMIN, "/v1/events?pageSize=1000").await);
    let all = all["events"].as_array().unwrap();
    let created: Vec<&str> = all
        .iter()
        .filter(|e| e["type"] == "TEAM_CREATED")
        .map(|e| e["target"].as_str().unwrap())
        .collect();
    assert_eq!(created, vec!["teams/other", "teams/acme"]);
    let refused = one(all, "REQUEST_REFUSED", "teams");
    assert_eq!(refused["actor"], OUTSIDER);
    assert_eq!(refused["details"]["reason"], "TEAM_EXISTS");
    assert!(
        refused["name"].as_str().unwrap().starts_with("events/"),
        "{refused}"
    );
    let f = urlencode(r#"type=TEAM_CREATED AND actor="bob@example.com""#);
    let mine = ok(app.get(ADMIN, &format!("/v1/events?filter={f}")).await);
    assert_eq!(mine["events"].as_array().unwrap().len(), 1, "{mine:#}");
    // An unauthenticated mutation is recorded as anonymous (IAP refuses it; in dev mode
    // a bad identity header does).
    let r = app
        .request_as("not an email", Method::DELETE, "/v1/teams/acme")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let list = events(
        &app,
        ALICE,
        r#"type=REQUEST_REFUSED AND target="teams/acme""#,
    )
    .await;
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["actor"], "anonymous");
}

#[tokio::test]
async fn the_trail_is_append_only_and_retention_purges_old_events() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    let e = sqlx::query("UPDATE events SET actor = 'mallory@example.com'")
        .execute(&app.db)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    // Age the team's creation past 400 days; a recent event stays.
    sqlx::query("DELETE FROM events WHERE type = 'TEAM_CREATED'")
        .execute(&app.db)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO events (team_id, time, actor, type, target) VALUES \
         ('acme', now() - interval '401 days', 'alice@example.com', 'TEAM_CREATED', 'teams/acme')",
    )
    .execute(&app.db)
    .await
    .unwrap();
    let before = events(&app, ALICE, "").await.len();
    let removed =
        kineticd::ops::retention::purge_events_once(&app.db, Duration::from_secs(400 * 86_400))
            .await
            .unwrap();
    assert_eq!(removed, 1);
    let after = events(&app, ALICE, "").await;
    assert_eq!(after.len(), before - 1);
    assert!(
        after.iter().all(|e| e["type"] != "TEAM_CREATED"),
        "{after:#?}"
    );
}

#[tokio::test]
async fn console_posts_are_recorded_and_the_console_shows_the_trail() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &[]).await;
    // A console POST without its form token is refused (CSRF): recorded as refused.
    let r = app
        .request_as(ALICE, Method::POST, "/console/teams/acme/members")
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("email={}&role=VIEWER", urlencode(BOB)))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let list = events(&app, ALICE, "type=REQUEST_REFUSED").await;
    let refused = one(&list, "REQUEST_REFUSED", "teams/acme/members");
    assert_eq!(refused["details"]["reason"], "CSRF_CHECK_FAILED");
    assert_eq!(refused["details"]["path"], "/console/teams/acme/members");
    // The pages.
    let page = app
        .request_as(ALICE, Method::GET, "/console/teams/acme/events")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("data-testid=\"event-row\" data-type=\"REQUEST_REFUSED\""),
        "{html}"
    );
    let team = app
        .request_as(ALICE, Method::GET, "/console/teams/acme")
        .send()
        .await
        .unwrap();
    assert!(
        team.text()
            .await
            .unwrap()
            .contains("/console/teams/acme/events")
    );
    for (user, path, status) in [
        (
            OUTSIDER,
            "/console/teams/acme/events",
            StatusCode::NOT_FOUND,
        ),
        (ALICE, "/console/events", StatusCode::FORBIDDEN),
        (ADMIN, "/console/events", StatusCode::OK),
    ] {
        let r = app
            .request_as(user, Method::GET, path)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{user} {path}");
    }
}

#[tokio::test]
async fn credentials_issued_are_recorded_without_the_kubeconfig() {
    let (app, _sim, _, _) = crate::credentials::acme_kc().await;
    let path = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc/credentials";
    let r = app
        .request_as(BOB, Method::GET, path)
        .header("x-request-id", "rid-creds")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let kubeconfig = r.text().await.unwrap();
    let list = events(&app, ALICE, "type=CREDENTIALS_ISSUED").await;
    let cluster = "projects/acme-project/zones/us-central1-a/clusters/kc";
    let e = one(&list, "CREDENTIALS_ISSUED", cluster);
    assert_eq!(e["actor"], BOB);
    assert_eq!(e["requestId"], "rid-creds");
    assert_eq!(e["details"], json!({"cluster": cluster}));
    assert!(!e.to_string().contains("gke-gcloud-auth-plugin"), "{e}");
    assert!(kubeconfig.contains("gke-gcloud-auth-plugin"));
}

#[tokio::test]
async fn rate_limited_requests_are_not_recorded() {
    let app = crate::support::app_with_rate(0.001, 2).await;
    app.team(ALICE, "acme", &[]).await;
    let patch = json!({"displayName": "Acme"});
    assert_eq!(
        app.patch(ALICE, "/v1/teams/acme", patch.clone())
            .await
            .status,
        StatusCode::OK
    );
    let r = app.patch(ALICE, "/v1/teams/acme", patch).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    // The admin's own bucket reads them.
    let all = ok(app.get(ADMIN, "/v1/events?pageSize=1000").await);
    let statuses: Vec<&Value> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("REQUEST_"))
        .map(|e| &e["details"]["status"])
        .collect();
    assert_eq!(statuses, vec![&json!(200), &json!(201)]);
}
