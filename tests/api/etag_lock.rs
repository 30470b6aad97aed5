//! The cluster etag of `up` and `down` is checked under the cluster's row lock, in the
//! transaction that enqueues the operation (issue 12): a change committed between
//! reading the request and enqueuing it is refused with 409 ABORTED ETAG_MISMATCH.

use std::time::{Duration, Instant};

use futures::future::join_all;
use kineticd::store::{self, Db};
use reqwest::Method;

use crate::common::{Resp, TestApp};
use crate::support::{acme_app, acme_cluster, expect_error, ok};

const ALICE: &str = "alice@example.com";
const PATH: &str = "/v1/projects/acme-project/zones/us-central1-a/clusters/kc";

/// A team with a RUNNING cluster `kc`; its current etag.
async fn app_with_cluster() -> (TestApp, store::clusters::ClusterRecord, String) {
    let app = acme_app(ALICE).await;
    let rec = acme_cluster(&app).await;
    let etag = ok(app.get(ALICE, PATH).await)["etag"]
        .as_str()
        .expect("etag")
        .to_owned();
    (app, rec, etag)
}

async fn delete_if_match(http: reqwest::Client, url: String, etag: String) -> Resp {
    let req = http
        .request(Method::DELETE, url)
        .header("x-kinetic-user", ALICE)
        .header("if-match", etag);
    TestApp::read(req.send().await.expect("request")).await
}

/// Wait until some session of this test's database waits for a row lock.
async fn until_a_request_waits_for_the_lock(db: &Db) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(db)
        .await
        .expect("pg_stat_activity");
        if waiting > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no request came to wait for the cluster's row lock"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Deterministic interleaving: the request reads the cluster (its etag still matches),
/// then waits for the row another writer holds; the writer commits a change; the
/// request, once it holds the row, sees the new version and is refused.
#[tokio::test]
async fn a_change_committed_while_a_request_waits_for_the_row_lock_is_caught() {
    let (app, rec, etag) = app_with_cluster().await;
    let mut writer = app.db.begin().await.expect("begin");
    store::clusters::by_name(
        &mut *writer,
        store::clusters::Pick::LockLive,
        ["acme-project", "us-central1-a", "kc"],
    )
    .await
    .expect("lock")
    .expect("live record");
    let spec = store::ClusterSpecRecord {
        accelerator: Some("gpu-l4".into()),
        force_destroy: false,
        ..Default::default()
    };
    store::clusters::set_spec(&mut *writer, rec.id, &spec)
        .await
        .expect("change the cluster");

    let request = tokio::spawn(delete_if_match(
        app.http.clone(),
        app.url_of(PATH),
        etag.clone(),
    ));
    until_a_request_waits_for_the_lock(&app.db).await;
    writer.commit().await.expect("commit the change");

    let r = request.await.expect("request task");
    expect_error(&r, 409, "ABORTED", "ETAG_MISMATCH");
    let now = ok(app.get(ALICE, PATH).await);
    assert_eq!(now["state"], "RUNNING", "{now:#}");
    assert_ne!(
        now["etag"],
        etag.as_str(),
        "the writer's change is the cluster's"
    );
    let ops = ok(app.get(ALICE, "/v1/operations").await);
    let enqueued = ops["operations"].as_array().map_or(0, Vec::len);
    assert_eq!(enqueued, 0, "nothing was enqueued: {ops:#}");
}

/// Concurrent deletes made against the same etag: exactly one is accepted (the first
/// to hold the row changes the cluster, which every other one then sees).
#[tokio::test]
async fn of_concurrent_requests_with_one_etag_exactly_one_is_accepted() {
    let (app, _rec, etag) = app_with_cluster().await;
    let requests =
        (0..8).map(|_| delete_if_match(app.http.clone(), app.url_of(PATH), etag.clone()));
    let answers = join_all(requests).await;
    let accepted = answers.iter().filter(|r| r.status == 202).count();
    assert_eq!(accepted, 1, "{answers:#?}");
    for r in answers.iter().filter(|r| r.status != 202) {
        expect_error(r, 409, "ABORTED", "ETAG_MISMATCH");
    }
    let now = ok(app.get(ALICE, PATH).await);
    assert_eq!(now["state"], "DELETING", "{now:#}");
}
