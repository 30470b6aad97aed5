//! Profiles: per-caller pointers at clusters, one active, `stale` computed at read time.

use serde_json::{Value, json};

use crate::common::{ADMIN, BOB, TestApp};
use crate::support::{
    acme_app, acme_cluster, expect_error, expect_invalid, expect_not_found, message, names, ok,
};

const ALICE: &str = "alice@example.com";
const KC: &str = "projects/acme-project/zones/us-central1-a/clusters/kc";

async fn put(app: &TestApp, user: &str, id: &str, body: Value) -> Value {
    ok(app.put(user, &format!("/v1/profiles/{id}"), body).await)
}

/// [`put`] of a profile of `cluster` and `namespace`.
async fn put_in(app: &TestApp, user: &str, id: &str, cluster: &str, namespace: &str) -> Value {
    put(
        app,
        user,
        id,
        json!({"cluster": cluster, "namespace": namespace}),
    )
    .await
}

async fn activate(app: &TestApp, user: &str, id: &str) -> Value {
    ok(app
        .post(user, &format!("/v1/profiles/{id}:activate"), json!({}))
        .await)
}

fn active_ids(list: &Value) -> Vec<String> {
    list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["active"] == true)
        .map(|p| p["profileId"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn put_get_list_delete() {
    let app = TestApp::spawn().await;
    let p = put(&app, ALICE, "research", json!({"cluster": KC})).await;
    assert_eq!(p["name"], "profiles/research");
    assert_eq!(p["profileId"], "research");
    assert_eq!(p["cluster"], KC);
    assert_eq!(p["namespace"], "default");
    assert_eq!(p["active"], false);
    assert_eq!(p["stale"], true, "no such cluster");
    for k in ["createTime", "updateTime"] {
        chrono::DateTime::parse_from_rfc3339(p[k].as_str().unwrap()).unwrap();
    }
    assert_eq!(ok(app.get(ALICE, "/v1/profiles/research").await), p);

    // Replace: new cluster and namespace, same profile.
    let other = "projects/acme-project/zones/europe-west4-b/clusters/other";
    let p2 = put_in(&app, ALICE, "research", other, "team-a").await;
    assert_eq!(p2["cluster"], other);
    assert_eq!(p2["namespace"], "team-a");
    assert_eq!(p2["createTime"], p["createTime"]);
    put(&app, ALICE, "Alpha_1", json!({"cluster": KC})).await;
    let list = ok(app.get(ALICE, "/v1/profiles").await);
    assert_eq!(
        names(&list, "profiles", "profileId"),
        ["Alpha_1", "research"]
    );
    assert!(list.get("nextPageToken").is_none());

    // Profiles are the caller's own: others (admins included) see none of them.
    for who in [BOB, ADMIN] {
        assert_eq!(
            ok(app.get(who, "/v1/profiles").await)["profiles"],
            json!([])
        );
        let r = app.get(who, "/v1/profiles/research").await;
        expect_not_found(&r, "PROFILE_NOT_FOUND");
        expect_not_found(
            &app.delete(who, "/v1/profiles/research").await,
            "PROFILE_NOT_FOUND",
        );
    }
    // Bob's profile of the same id is separate.
    put_in(&app, BOB, "research", KC, "bob").await;
    assert_eq!(
        ok(app.get(ALICE, "/v1/profiles/research").await)["namespace"],
        "team-a"
    );

    let r = app.delete(ALICE, "/v1/profiles/research").await;
    assert_eq!(r.status, 204, "{:#}", r.body);
    let r = app.get(ALICE, "/v1/profiles/research").await;
    expect_not_found(&r, "PROFILE_NOT_FOUND");
    assert!(message(&r).contains("profiles/research"), "{}", message(&r));
    expect_not_found(
        &app.delete(ALICE, "/v1/profiles/research").await,
        "PROFILE_NOT_FOUND",
    );
    assert_eq!(
        ok(app.get(BOB, "/v1/profiles/research").await)["namespace"],
        "bob"
    );
}

#[tokio::test]
async fn only_one_profile_is_active() {
    let app = TestApp::spawn().await;
    put(&app, ALICE, "one", json!({"cluster": KC})).await;
    put(&app, ALICE, "two", json!({"cluster": KC})).await;
    assert_eq!(
        ok(app.get(ALICE, "/v1/me").await)["activeProfile"],
        Value::Null
    );

    let a = activate(&app, ALICE, "one").await;
    assert_eq!(a["profileId"], "one");
    assert_eq!(a["active"], true);
    assert_eq!(
        active_ids(&ok(app.get(ALICE, "/v1/profiles").await)),
        ["one"]
    );
    let me = ok(app.get(ALICE, "/v1/me").await);
    assert_eq!(me["activeProfile"]["name"], "profiles/one");
    assert_eq!(me["activeProfile"]["active"], true);

    // Activating another deactivates the first.
    activate(&app, ALICE, "two").await;
    assert_eq!(
        active_ids(&ok(app.get(ALICE, "/v1/profiles").await)),
        ["two"]
    );
    assert_eq!(
        ok(app.get(ALICE, "/v1/profiles/one").await)["active"],
        false
    );
    assert_eq!(
        ok(app.get(ALICE, "/v1/me").await)["activeProfile"]["profileId"],
        "two"
    );
    // Activating the active one again is harmless.
    assert_eq!(activate(&app, ALICE, "two").await["active"], true);
    assert_eq!(
        active_ids(&ok(app.get(ALICE, "/v1/profiles").await)),
        ["two"]
    );
    // Replacing keeps the active flag.
    let p = put_in(&app, ALICE, "two", KC, "ns2").await;
    assert_eq!(p["active"], true);

    // Unknown profile: 404, and the active one stays active.
    let r = app
        .post(ALICE, "/v1/profiles/three:activate", json!({}))
        .await;
    expect_not_found(&r, "PROFILE_NOT_FOUND");
    assert_eq!(
        active_ids(&ok(app.get(ALICE, "/v1/profiles").await)),
        ["two"]
    );
    // Someone else's activation does not touch alice's.
    put(&app, BOB, "one", json!({"cluster": KC})).await;
    activate(&app, BOB, "one").await;
    assert_eq!(
        active_ids(&ok(app.get(ALICE, "/v1/profiles").await)),
        ["two"]
    );
    assert_eq!(
        ok(app.get(BOB, "/v1/me").await)["activeProfile"]["profileId"],
        "one"
    );
    // Deleting the active profile leaves none active.
    assert_eq!(app.delete(ALICE, "/v1/profiles/two").await.status, 204);
    assert_eq!(
        ok(app.get(ALICE, "/v1/me").await)["activeProfile"],
        Value::Null
    );
}

#[tokio::test]
async fn stale_follows_the_cluster_record() {
    let app = acme_app(ALICE).await;
    app.team(BOB, "bobs", &["bob-project"]).await;
    let live = acme_cluster(&app).await;
    app.cluster("bobs", "bob-project", "us-central1-a", "bc")
        .await;
    crate::teams::deleted_cluster(
        &app,
        "acme",
        "acme-project",
        "gone",
        json!({"accelerator": "cpu"}),
    )
    .await;

    let fresh = put(&app, ALICE, "live", json!({"cluster": KC})).await;
    assert_eq!(fresh["stale"], false, "a live cluster of the caller's team");
    let missing = "projects/acme-project/zones/us-central1-a/clusters/never";
    let deleted = "projects/acme-project/zones/us-central1-a/clusters/gone";
    // Another team's live cluster is not visible to alice: stale for her.
    let foreign = "projects/bob-project/zones/us-central1-a/clusters/bc";
    // Same name in another zone is another cluster.
    let zone_b = "projects/acme-project/zones/us-central1-b/clusters/kc";
    for (who, profile, cluster, stale) in [
        (ALICE, "missing", missing, true),
        (ALICE, "deleted", deleted, true),
        (ALICE, "foreign", foreign, true),
        (BOB, "mine", foreign, false),
        (ALICE, "zone-b", zone_b, true),
    ] {
        let body = put(&app, who, profile, json!({"cluster": cluster})).await;
        assert_eq!(body["stale"], stale, "{who} {profile}: {body}");
    }

    let list = ok(app.get(ALICE, "/v1/profiles").await);
    let stale: Vec<(String, bool)> = list["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["profileId"].as_str().unwrap().to_owned(),
                p["stale"].as_bool().unwrap(),
            )
        })
        .collect();
    let expect = [
        ("deleted", true),
        ("foreign", true),
        ("live", false),
        ("missing", true),
        ("zone-b", true),
    ];
    assert_eq!(stale, expect.map(|(a, b)| (a.to_owned(), b)));

    // Stale is computed at read time: the cluster goes, the profile turns stale.
    activate(&app, ALICE, "live").await;
    assert_eq!(
        ok(app.get(ALICE, "/v1/me").await)["activeProfile"]["stale"],
        false
    );
    sqlx::query("UPDATE clusters SET state = 'DELETED' WHERE id = $1")
        .bind(live.id)
        .execute(&app.db)
        .await
        .unwrap();
    assert_eq!(ok(app.get(ALICE, "/v1/profiles/live").await)["stale"], true);
    assert_eq!(
        ok(app.get(ALICE, "/v1/me").await)["activeProfile"]["stale"],
        true
    );
}

#[tokio::test]
async fn invalid_profile_requests() {
    let app = TestApp::spawn().await;
    let long = "a".repeat(65);
    for bad in ["_x", "-x", "a.b", "a%20b", long.as_str()] {
        let r = app
            .put(
                ALICE,
                &format!("/v1/profiles/{bad}"),
                json!({"cluster": KC}),
            )
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
        assert_eq!(crate::support::meta(&r, "field"), "profile id");
        let r = app.get(ALICE, &format!("/v1/profiles/{bad}")).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
    }
    let r = app.post(ALICE, "/v1/profiles/_x:activate", json!({})).await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
    // The longest valid id.
    put(&app, ALICE, &"a".repeat(64), json!({"cluster": KC})).await;

    for cluster in [
        "",
        "kc",
        "projects/acme-project/zones/us-central1-a",
        "projects/acme-project/zones/us-central1-a/clusters/kc/nodePools/p",
        "projects/acme-project/regions/us-central1/clusters/kc",
        "projects/x/zones/us-central1-a/clusters/kc",
        "projects/acme-project/zones/uscentral1/clusters/kc",
        "projects/acme-project/zones/us-central1-a/clusters/KC",
        "projects/acme-project/zones/us-central1-a/clusters/kc-",
    ] {
        let r = app
            .put(ALICE, "/v1/profiles/work", json!({"cluster": cluster}))
            .await;
        expect_invalid(
            &r,
            "INVALID_CLUSTER_NAME",
            "projects/PROJECT/zones/ZONE/clusters/CLUSTER",
        );
    }
    let long_ns = "n".repeat(64);
    for ns in [
        "",
        "Default",
        "my_ns",
        "-ns",
        "ns-",
        "a.b",
        long_ns.as_str(),
    ] {
        let r = app
            .put(
                ALICE,
                "/v1/profiles/work",
                json!({"cluster": KC, "namespace": ns}),
            )
            .await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAMESPACE");
    }
    // None of the refused requests created a profile.
    let list = ok(app.get(ALICE, "/v1/profiles").await);
    assert_eq!(list["profiles"].as_array().unwrap().len(), 1);
    assert_eq!(
        put_in(&app, ALICE, "work", KC, &"n".repeat(63)).await["namespace"],
        "n".repeat(63)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_activations_leave_exactly_one_active() {
    let app = TestApp::spawn().await;
    let ids: Vec<String> = (0..8).map(|i| format!("p{i}")).collect();
    for id in &ids {
        put(&app, ALICE, id, json!({"cluster": KC})).await;
    }
    for _round in 0..3 {
        let calls = ids.iter().map(|id| {
            let path = format!("/v1/profiles/{id}:activate");
            let app = &app;
            async move { app.post(ALICE, &path, json!({})).await }
        });
        for r in futures::future::join_all(calls).await {
            assert_eq!(r.status, 200, "{:#}", r.body);
            assert_eq!(r.body["active"], true);
        }
        let list = ok(app.get(ALICE, "/v1/profiles").await);
        assert_eq!(active_ids(&list).len(), 1, "{list:#}");
    }
}
