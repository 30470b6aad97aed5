//! Cluster and node-pool records: get, the list filters, validation, team isolation.

use serde_json::{Value, json};

use crate::common::{ADMIN, BOB, TestApp};
use crate::support::{
    NOPE, acme_app, acme_cluster, expect_error, expect_not_found, meta, names, ok,
};

const ALICE: &str = "alice@example.com";
const KC: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";

/// A NodePool spec as the operation engine stores it (camelCase NodePool fields).
pub fn pool_spec(accelerator: &str) -> Value {
    json!({
        "accelerator": accelerator,
        "kind": "GPU",
        "machineType": "g2-standard-8",
        "gkeAcceleratorType": "nvidia-l4",
        "acceleratorCount": 1,
        "minNodes": 0,
        "maxNodes": 4,
        "spot": true,
        "reservation": null,
        "zones": ["us-central1-a"],
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "labels": {"kinetic.dev/accelerator": accelerator},
        "maxRunDuration": null,
        "driverVersion": "LATEST",
        "failover": {"role": "SPOT", "pairedPool": "gpu-l4-od12"},
        "estimatedHourlyCost": {"currency": "USD", "perNode": 0.85, "atMin": 0.0, "atMax": 3.4}
    })
}

pub async fn add_pool(app: &TestApp, cluster: uuid::Uuid, pool: &str) {
    app.pool(cluster, pool, pool_spec("gpu-l4")).await;
}

#[tokio::test]
async fn get_cluster_with_pools() {
    let app = acme_app(ALICE).await;
    let rec = acme_cluster(&app).await;
    add_pool(&app, rec.id, "gpu-l4-ab12").await;
    add_pool(&app, rec.id, "gpu-l4-od12").await;

    let c = ok(app.get(ALICE, KC).await);
    assert_eq!(
        c["name"],
        "projects/acme-project/zones/us-central1-a/clusters/kc"
    );
    assert_eq!(c["project"], "acme-project");
    assert_eq!(c["zone"], "us-central1-a");
    assert_eq!(c["region"], "us-central1");
    assert_eq!(c["clusterId"], rec.id.to_string());
    assert_eq!(c["team"], "teams/acme");
    assert_eq!(c["state"], "RUNNING");
    assert_eq!(c["forceDestroy"], true);
    assert_eq!(c["reconciling"], false);
    assert_eq!(c["createdBy"], "owner@example.com");
    assert_eq!(c["endpoint"], Value::Null);
    assert!(!c["etag"].as_str().unwrap().is_empty());
    let res = c["resources"].as_object().unwrap();
    let mut keys: Vec<&str> = res.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "artifactRepository",
            "buildServiceAccount",
            "buildsBucket",
            "gkeCluster",
            "jobsBucket",
            "nat",
            "network",
            "nodeServiceAccount",
            "router",
            "stateBucket"
        ]
    );
    assert_eq!(
        res["gkeCluster"],
        "projects/acme-project/locations/us-central1-a/clusters/kc"
    );
    assert_eq!(
        names(&c, "nodePools", "poolId"),
        ["gpu-l4-ab12", "gpu-l4-od12"]
    );

    // One pool, every NodePool field.
    let p = ok(app.get(ALICE, &format!("{KC}/nodePools/gpu-l4-ab12")).await);
    assert_eq!(p, c["nodePools"][0]);
    assert_eq!(
        p["name"],
        "projects/acme-project/zones/us-central1-a/clusters/kc/nodePools/gpu-l4-ab12"
    );
    assert_eq!(p["poolId"], "gpu-l4-ab12");
    assert_eq!(p["state"], "RUNNING");
    chrono::DateTime::parse_from_rfc3339(p["createTime"].as_str().unwrap()).unwrap();
    for (k, v) in pool_spec("gpu-l4").as_object().unwrap() {
        assert_eq!(&p[k.as_str()], v, "pool field {k}");
    }
    let list = ok(app.get(ALICE, &format!("{KC}/nodePools")).await);
    assert_eq!(list["nodePools"], c["nodePools"]);
    assert!(list.get("nextPageToken").is_none());

    let r = app.get(ALICE, &format!("{KC}/nodePools/gpu-l4-zz99")).await;
    expect_not_found(&r, "NODE_POOL_NOT_FOUND");
    let r = app.get(ALICE, NOPE).await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
    assert_eq!(
        meta(&r, "cluster"),
        "projects/acme-project/zones/us-central1-a/clusters/nope"
    );
    // The cluster exists in another zone only.
    let r = app
        .get(
            ALICE,
            "/v1/projects/acme-project/zones/us-central1-b/clusters/kc",
        )
        .await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
    let r = app.get(ALICE, &format!("{NOPE}/nodePools")).await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
    // A project nobody owns.
    let r = app
        .get(
            ALICE,
            "/v1/projects/free-project/zones/us-central1-a/clusters/kc",
        )
        .await;
    expect_not_found(&r, "PROJECT_NOT_FOUND");
    assert_eq!(meta(&r, "project"), "free-project");
}

#[tokio::test]
async fn list_filters() {
    let app = TestApp::spawn().await;
    app.team(ALICE, "acme", &["acme-project", "acme-two"]).await;
    app.team(ALICE, "beta", &["beta-project"]).await;
    let a = app
        .cluster("acme", "acme-project", "us-central1-a", "a1")
        .await;
    app.cluster("acme", "acme-project", "us-central1-b", "a2")
        .await;
    app.cluster("acme", "acme-two", "us-central1-a", "a3").await;
    app.cluster("beta", "beta-project", "us-central1-a", "b1")
        .await;
    add_pool(&app, a.id, "gpu-l4-ab12").await;
    sqlx::query("UPDATE clusters SET state = 'ERROR' WHERE name = 'a2'")
        .execute(&app.db)
        .await
        .unwrap();
    let list = |q: &'static str| {
        let app = &app;
        async move { names(&ok(app.get(ALICE, q).await), "clusters", "name") }
    };
    let n = |p: &str, z: &str, c: &str| format!("projects/{p}/zones/{z}/clusters/{c}");
    let all = vec![
        n("acme-project", "us-central1-a", "a1"),
        n("acme-project", "us-central1-b", "a2"),
        n("acme-two", "us-central1-a", "a3"),
        n("beta-project", "us-central1-a", "b1"),
    ];
    assert_eq!(list("/v1/clusters").await, all);
    assert_eq!(list("/v1/clusters?team=acme").await, all[..3]);
    assert_eq!(list("/v1/clusters?team=teams/beta").await, all[3..]);
    assert_eq!(list("/v1/clusters?state=ERROR").await, all[1..2]);
    assert_eq!(
        list("/v1/clusters?team=acme&state=RUNNING").await,
        [all[0].clone(), all[2].clone()]
    );
    assert_eq!(
        list("/v1/clusters?team=beta&state=ERROR").await,
        Vec::<String>::new()
    );
    assert_eq!(
        list("/v1/projects/acme-project/zones/-/clusters").await,
        all[..2]
    );
    assert_eq!(
        list("/v1/projects/acme-project/zones/us-central1-b/clusters").await,
        all[1..2]
    );
    assert_eq!(
        list("/v1/projects/acme-two/zones/us-central1-b/clusters").await,
        Vec::<String>::new()
    );
    // Lists embed node pools.
    let body = ok(app.get(ALICE, "/v1/clusters?team=acme").await);
    assert_eq!(
        names(&body["clusters"][0], "nodePools", "poolId"),
        ["gpu-l4-ab12"]
    );
    assert_eq!(body["clusters"][1]["nodePools"], json!([]));
    assert_eq!(body["clusters"][1]["state"], "ERROR");
    // A service admin sees them all; a stranger sees none.
    assert_eq!(
        names(
            &ok(app.get(ADMIN, "/v1/clusters").await),
            "clusters",
            "name"
        ),
        all
    );
    assert_eq!(
        ok(app.get(BOB, "/v1/clusters").await)["clusters"],
        json!([])
    );

    let r = app.get(ALICE, "/v1/clusters?state=running").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FILTER");
    let r = app.get(ALICE, "/v1/clusters?state=BOGUS").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FILTER");
    let r = app.get(ALICE, "/v1/clusters?team=nope-team").await;
    expect_not_found(&r, "TEAM_NOT_FOUND");
    // An empty team means "no filter"; an empty state is not one of the document's
    // enum: refused, not ignored.
    assert_eq!(list("/v1/clusters?team=").await, all);
    let r = app.get(ALICE, "/v1/clusters?state=").await;
    expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_FILTER");

    // DELETED records are listed only when asked for.
    sqlx::query("UPDATE clusters SET state = 'DELETED' WHERE name = 'a3'")
        .execute(&app.db)
        .await
        .unwrap();
    assert_eq!(
        list("/v1/clusters").await,
        [all[0].clone(), all[1].clone(), all[3].clone()]
    );
    assert_eq!(list("/v1/clusters?state=DELETED").await, all[2..3]);
}

#[tokio::test]
async fn invalid_names_in_cluster_paths() {
    let app = acme_app(ALICE).await;
    let rec = acme_cluster(&app).await;
    add_pool(&app, rec.id, "gpu-l4-ab12").await;
    let long = "c".repeat(41);
    let cases = [
        (
            "zone",
            "/v1/projects/acme-project/zones/us-central1/clusters/kc".to_owned(),
        ),
        (
            "zone",
            "/v1/projects/acme-project/zones/US-CENTRAL1-A/clusters/kc".to_owned(),
        ),
        (
            "zone",
            "/v1/projects/acme-project/zones/-/clusters/kc".to_owned(),
        ),
        (
            "cluster name",
            "/v1/projects/acme-project/zones/us-central1-a/clusters/KC".to_owned(),
        ),
        (
            "cluster name",
            "/v1/projects/acme-project/zones/us-central1-a/clusters/kc-".to_owned(),
        ),
        (
            "cluster name",
            "/v1/projects/acme-project/zones/us-central1-a/clusters/1kc".to_owned(),
        ),
        (
            "cluster name",
            format!("/v1/projects/acme-project/zones/us-central1-a/clusters/{long}"),
        ),
        (
            "cluster name",
            "/v1/projects/acme-project/zones/us-central1-a/clusters/k_c/nodePools".to_owned(),
        ),
        ("node pool id", format!("{KC}/nodePools/GPU")),
        ("node pool id", format!("{KC}/nodePools/gpu_l4")),
        (
            "project id",
            "/v1/projects/short/zones/us-central1-a/clusters/kc".to_owned(),
        ),
        (
            "project id",
            "/v1/projects/Acme-Project/zones/-/clusters".to_owned(),
        ),
        (
            "zone",
            "/v1/projects/acme-project/zones/nowhere/clusters".to_owned(),
        ),
    ];
    for (field, path) in cases {
        let r = app.get(ALICE, &path).await;
        expect_error(&r, 400, "INVALID_ARGUMENT", "INVALID_NAME");
        assert_eq!(meta(&r, "field"), field, "{path}");
    }
}

#[tokio::test]
async fn teams_cannot_see_each_others_clusters() {
    let app = acme_app(ALICE).await;
    app.team(BOB, "bobs", &["bob-project"]).await;
    let a = acme_cluster(&app).await;
    let b = app
        .cluster("bobs", "bob-project", "us-central1-a", "kc")
        .await;
    add_pool(&app, a.id, "gpu-l4-ab12").await;
    add_pool(&app, b.id, "gpu-l4-ab12").await;

    for (me, mine, theirs, my_id) in [
        (ALICE, "acme-project", "bob-project", a.id),
        (BOB, "bob-project", "acme-project", b.id),
    ] {
        let list = ok(app.get(me, "/v1/clusters").await);
        assert_eq!(
            names(&list, "clusters", "clusterId"),
            [my_id.to_string()],
            "{me}"
        );
        let base = |p: &str| format!("/v1/projects/{p}/zones/us-central1-a/clusters/kc");
        assert_eq!(
            ok(app.get(me, &base(mine)).await)["clusterId"],
            my_id.to_string()
        );
        // Theirs: 404 everywhere, never 403, and the same answer as for a project
        // that belongs to nobody (existence is not disclosed).
        let probes = [
            base(theirs),
            format!("{}/nodePools", base(theirs)),
            format!("{}/nodePools/gpu-l4-ab12", base(theirs)),
            format!("/v1/projects/{theirs}/zones/-/clusters"),
            format!("/v1/projects/{theirs}/zones/us-central1-a/clusters"),
        ];
        for path in probes {
            let r = app.get(me, &path).await;
            expect_not_found(&r, "PROJECT_NOT_FOUND");
            let unowned = app.get(me, &path.replace(theirs, "unowned-project")).await;
            expect_not_found(&unowned, "PROJECT_NOT_FOUND");
            assert_eq!(
                crate::support::message(&r).replace(theirs, "P"),
                crate::support::message(&unowned).replace("unowned-project", "P"),
                "{path}"
            );
        }
        let other_team = if me == ALICE { "bobs" } else { "acme" };
        let r = app
            .get(me, &format!("/v1/clusters?team={other_team}"))
            .await;
        expect_not_found(&r, "TEAM_NOT_FOUND");
    }
    // A record whose project has since moved to another team stays hidden from the new
    // team (it belongs to the old one).
    sqlx::query("UPDATE team_projects SET team_id = 'bobs' WHERE project_id = 'acme-project'")
        .execute(&app.db)
        .await
        .unwrap();
    let r = app
        .get(
            BOB,
            "/v1/projects/acme-project/zones/us-central1-a/clusters/kc",
        )
        .await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
    let list = ok(app
        .get(BOB, "/v1/projects/acme-project/zones/-/clusters")
        .await);
    assert_eq!(list["clusters"], json!([]));
}
