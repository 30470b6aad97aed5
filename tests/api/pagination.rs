//! AIP-158 pagination on every list: keyset pages, size coercion, token binding.

use serde_json::json;

use crate::clusters::add_pool;
use crate::common::{ADMIN, TestApp};
use crate::support::{
    acme_app, acme_cluster, expect_error, expect_invalid, ok, page_walk, with_query,
};

const ALICE: &str = "alice@example.com";
const KC: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Walk `path` with pageSize 3 and check 3,3,1 pages holding exactly `expect`, in order.
async fn three_three_one(
    app: &TestApp,
    user: &str,
    path: &str,
    items: &str,
    key: &str,
    expect: Vec<String>,
) {
    assert_eq!(expect.len(), 7);
    let (sizes, keys) = page_walk(app, user, path, items, 3, key).await;
    assert_eq!(sizes, [3, 3, 1], "{path}");
    assert_eq!(
        keys,
        sorted(expect),
        "{path}: every item once, in key order"
    );
    // The same list unpaged (default size) is the same sequence.
    let (sizes, all) = page_walk(app, user, path, items, 50, key).await;
    assert_eq!(sizes, [7]);
    assert_eq!(all, keys);
}

#[tokio::test]
async fn seven_of_everything_in_pages_of_three() {
    let app = TestApp::spawn().await;
    let mut teams = Vec::new();
    for i in 0..7 {
        let id = format!("team-{}", ["g", "c", "a", "f", "b", "e", "d"][i]);
        app.team(ALICE, &id, &[]).await;
        teams.push(id);
    }
    three_three_one(&app, ALICE, "/v1/teams", "teams", "teamId", teams).await;

    let mut members = vec![ALICE.to_owned()];
    for i in 0..6 {
        let email = format!("user{}@example.com", 6 - i);
        app.member(ALICE, "team-a", &email, "VIEWER").await;
        members.push(email);
    }
    three_three_one(
        &app,
        ALICE,
        "/v1/teams/team-a/members",
        "members",
        "email",
        members,
    )
    .await;

    let mut profiles = Vec::new();
    for i in 0..7 {
        let id = format!("prof-{}", 7 - i);
        let c = json!({"cluster": "projects/acme-project/zones/us-central1-a/clusters/kc"});
        ok(app.put(ALICE, &format!("/v1/profiles/{id}"), c).await);
        profiles.push(id);
    }
    three_three_one(
        &app,
        ALICE,
        "/v1/profiles",
        "profiles",
        "profileId",
        profiles,
    )
    .await;

    // Clusters across several projects and zones.
    ok(app
        .patch(
            ALICE,
            "/v1/teams/team-b",
            json!({"projects": ["acme-project", "zulu-project", "mid-project"]}),
        )
        .await);
    let spots = [
        ("zulu-project", "us-central1-a", "c1"),
        ("acme-project", "us-central1-b", "c2"),
        ("mid-project", "europe-west4-a", "c3"),
        ("acme-project", "us-central1-a", "kc"),
        ("mid-project", "asia-east1-c", "c5"),
        ("acme-project", "us-central1-a", "c6"),
        ("zulu-project", "us-central1-a", "c0"),
    ];
    let mut clusters = Vec::new();
    for (p, z, c) in spots {
        let rec = app.cluster("team-b", p, z, c).await;
        if c == "kc" {
            for pool in [
                "gpu-g", "gpu-c", "gpu-a", "gpu-f", "gpu-b", "gpu-e", "gpu-d",
            ] {
                add_pool(&app, rec.id, pool).await;
            }
        }
        clusters.push(format!("projects/{p}/zones/{z}/clusters/{c}"));
    }
    three_three_one(
        &app,
        ALICE,
        "/v1/clusters",
        "clusters",
        "name",
        clusters.clone(),
    )
    .await;
    three_three_one(
        &app,
        ALICE,
        "/v1/clusters?team=team-b&state=RUNNING",
        "clusters",
        "name",
        clusters,
    )
    .await;
    let pools = [
        "gpu-a", "gpu-b", "gpu-c", "gpu-d", "gpu-e", "gpu-f", "gpu-g",
    ]
    .map(String::from)
    .to_vec();
    three_three_one(
        &app,
        ALICE,
        &format!("{KC}/nodePools"),
        "nodePools",
        "poolId",
        pools,
    )
    .await;
    let (sizes, _) = page_walk(
        &app,
        ALICE,
        "/v1/projects/acme-project/zones/-/clusters",
        "clusters",
        2,
        "name",
    )
    .await;
    assert_eq!(sizes, [2, 1]);
}

/// Check a list holding 1001 items: default 50, 5000 coerced to 1000, 0 means default.
async fn coerced(app: &TestApp, user: &str, path: &str, items: &str) {
    let body = ok(app.get(user, path).await);
    assert_eq!(
        body[items].as_array().unwrap().len(),
        50,
        "{path}: default page size"
    );
    assert!(body["nextPageToken"].is_string());
    let body = ok(app.get(user, &with_query(path, "pageSize", "0")).await);
    assert_eq!(
        body[items].as_array().unwrap().len(),
        50,
        "{path}: 0 means default"
    );
    let body = ok(app.get(user, &with_query(path, "pageSize", "5000")).await);
    assert_eq!(
        body[items].as_array().unwrap().len(),
        1000,
        "{path}: coerced to 1000"
    );
    let token = body["nextPageToken"]
        .as_str()
        .expect("a token after 1000 of 1001")
        .to_owned();
    let next = with_query(&with_query(path, "pageSize", "5000"), "pageToken", &token);
    let body = ok(app.get(user, &next).await);
    assert_eq!(body[items].as_array().unwrap().len(), 1, "{path}");
    assert!(
        body.get("nextPageToken").is_none(),
        "{path}: last page has no token"
    );
}

#[tokio::test]
async fn page_size_is_coerced_to_1000() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &["acme-project", "acme-two"]).await;
    let db = &app.db;
    let exec = |sql: &'static str| async move { sqlx::query(sql).execute(db).await.expect(sql) };
    exec("INSERT INTO teams (team_id) SELECT 'bulk-' || lpad(i::text, 4, '0') FROM generate_series(1, 1000) i").await;
    exec(
        "INSERT INTO team_members (team_id, email, role) \
         SELECT 'acme', 'user' || lpad(i::text, 4, '0') || '@example.com', 'VIEWER' FROM generate_series(1, 1000) i",
    )
    .await;
    exec(
        "INSERT INTO profiles (owner_email, profile_id, cluster) \
         SELECT 'alice@example.com', 'p' || lpad(i::text, 4, '0'), 'projects/acme-project/zones/us-central1-a/clusters/kc' \
         FROM generate_series(1, 1001) i",
    )
    .await;
    exec(
        "INSERT INTO clusters (id, project_id, zone, name, team_id, state, created_by) \
         SELECT gen_random_uuid(), CASE WHEN i % 2 = 0 THEN 'acme-project' ELSE 'acme-two' END, \
                CASE WHEN i % 3 = 0 THEN 'us-central1-a' ELSE 'us-east1-b' END, \
                'c' || lpad(i::text, 4, '0'), 'acme', 'RUNNING', 'alice@example.com' \
         FROM generate_series(1, 1001) i",
    )
    .await;
    acme_cluster(&app).await;
    // A valid pool spec: one that does not decode is a corrupt record (500).
    exec(
        r#"INSERT INTO node_pools (cluster_id, pool_id, state, spec)
           SELECT id, 'pool-' || lpad(i::text, 4, '0'), 'RUNNING',
                  '{"accelerator": "gpu-l4", "kind": "GPU", "machineType": "g2-standard-8",
                    "minNodes": 0, "maxNodes": 4, "spot": false}'
           FROM clusters, generate_series(1, 1001) i WHERE name = 'kc'"#,
    )
    .await;

    coerced(&app, ADMIN, "/v1/teams", "teams").await; // 1000 bulk + acme
    coerced(&app, ALICE, "/v1/teams/acme/members", "members").await; // 1000 + the owner
    coerced(&app, ALICE, "/v1/profiles", "profiles").await;
    // 1001 bulk clusters + kc: filter kc out by team/state to keep 1001.
    sqlx::query("UPDATE clusters SET state = 'ERROR' WHERE name = 'kc'")
        .execute(db)
        .await
        .unwrap();
    coerced(&app, ALICE, "/v1/clusters?state=RUNNING", "clusters").await;
    coerced(&app, ALICE, &format!("{KC}/nodePools"), "nodePools").await;
}

#[tokio::test]
async fn bad_page_sizes_and_tokens() {
    let app = acme_app(ALICE).await;
    app.team(ALICE, "beta", &["beta-project"]).await;
    for t in ["team-c", "team-d", "team-e"] {
        app.team(ALICE, t, &[]).await;
    }
    let kc = acme_cluster(&app).await;
    let other = app
        .cluster("acme", "acme-project", "us-central1-a", "other")
        .await;
    for pool in ["gpu-a", "gpu-b"] {
        add_pool(&app, kc.id, pool).await;
        add_pool(&app, other.id, pool).await;
    }
    for who in ["bob@example.com", "carol@example.com"] {
        app.member(ALICE, "acme", who, "VIEWER").await;
        app.member(ALICE, "beta", who, "VIEWER").await;
    }
    for id in ["p1", "p2"] {
        let c = json!({"cluster": "projects/acme-project/zones/us-central1-a/clusters/kc"});
        ok(app.put(ALICE, &format!("/v1/profiles/{id}"), c).await);
    }
    app.cluster("acme", "acme-project", "us-central1-b", "third")
        .await;
    let lists = [
        "/v1/teams".to_owned(),
        "/v1/teams/acme/members".to_owned(),
        "/v1/profiles".to_owned(),
        "/v1/clusters".to_owned(),
        "/v1/projects/acme-project/zones/-/clusters".to_owned(),
        format!("{KC}/nodePools"),
    ];
    for path in &lists {
        let r = app.get(ALICE, &with_query(path, "pageSize", "-1")).await;
        expect_invalid(&r, "INVALID_PAGE_SIZE", "-1");
        let r = app.get(ALICE, &with_query(path, "pageSize", "ten")).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_QUERY");
        for garbage in ["garbage!!", "e30", "bm90LWpzb24", "eyJxIjoxLCJrIjoiYSJ9"] {
            let r = app
                .get(ALICE, &with_query(path, "pageToken", garbage))
                .await;
            expect_invalid(&r, "INVALID_PAGE_TOKEN", "nextPageToken");
        }
        // An empty token is the first page.
        ok(app.get(ALICE, &with_query(path, "pageToken", "")).await);
    }

    // A real token from one list is refused by every other list (and other filters).
    let token_of = |path: String| {
        let app = &app;
        async move {
            let body = ok(app.get(ALICE, &with_query(&path, "pageSize", "1")).await);
            body["nextPageToken"]
                .as_str()
                .unwrap_or_else(|| panic!("{path}: {body:#}"))
                .to_owned()
        }
    };
    let mut tokens = Vec::new();
    for path in lists.iter().cloned().chain([
        "/v1/teams/beta/members".to_owned(),
        "/v1/clusters?team=acme".to_owned(),
        "/v1/clusters?state=RUNNING".to_owned(),
        "/v1/projects/acme-project/zones/us-central1-a/clusters".to_owned(),
        "/v1/projects/acme-project/zones/us-central1-a/clusters/other/nodePools".to_owned(),
    ]) {
        tokens.push((path.clone(), token_of(path).await));
    }
    for (from, token) in &tokens {
        for (to, _) in &tokens {
            let r = app
                .get(
                    ALICE,
                    &with_query(&with_query(to, "pageSize", "1"), "pageToken", token),
                )
                .await;
            if from == to {
                ok(r);
            } else {
                expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_PAGE_TOKEN");
            }
        }
    }
}
