//! AIP-154 on node pools (issue 26): a pool carries an `etag`; remove, resize and drill
//! with a stale `If-Match` are 409 ABORTED ETAG_MISMATCH and change nothing; the current
//! etag passes. Pool add takes the cluster's etag (it changes the cluster's pool list).

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::{Resp, TestApp};
use crate::support::*;

const STALE: &str = "\"0-0\"";

async fn with_if_match(
    app: &TestApp,
    method: Method,
    path: &str,
    etag: &str,
    body: Option<Value>,
) -> Resp {
    let mut req = app.request_as(OWNER, method, path).header("if-match", etag);
    if let Some(b) = body {
        req = req.json(&b);
    }
    TestApp::read(req.send().await.expect("request")).await
}

fn assert_stale(r: &Resp) {
    assert_eq!(r.status, StatusCode::CONFLICT, "{:#}", r.body);
    assert_eq!(r.body["error"]["status"], "ABORTED", "{:#}", r.body);
    assert_eq!(r.reason(), "ETAG_MISMATCH", "{:#}", r.body);
}

#[tokio::test]
async fn stale_pool_etags_are_refused_and_current_ones_pass() {
    let env = env_up("etags").await;
    let cluster = cluster_path("etags");
    // Pool add: the cluster's etag.
    let r = with_if_match(
        &env.app,
        Method::POST,
        &format!("{cluster}/nodePools"),
        STALE,
        Some(json!({"accelerator": "gpu-l4", "failover": true})),
    )
    .await;
    assert_stale(&r);
    let etag = env.app.get(OWNER, &cluster).await.body["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = with_if_match(
        &env.app,
        Method::POST,
        &format!("{cluster}/nodePools"),
        &etag,
        Some(json!({"accelerator": "gpu-l4", "failover": true})),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:#}", r.body);
    env.ok(&r.body).await;
    let spot = pool_of(&r.body);
    let pool = env.pool("etags", &spot).await;
    let current = pool["etag"]
        .as_str()
        .expect("a pool has an etag")
        .to_owned();
    assert_ne!(current, STALE);
    let path = pool_path("etags", &spot);
    // Stale: refused before anything is queued.
    let before = env.operations_of("UPDATE_NODE_POOL").await;
    assert_stale(
        &with_if_match(
            &env.app,
            Method::PATCH,
            &path,
            STALE,
            Some(json!({"maxNodes": 5})),
        )
        .await,
    );
    assert_stale(
        &with_if_match(
            &env.app,
            Method::POST,
            &format!("{path}:drill"),
            STALE,
            None,
        )
        .await,
    );
    assert_stale(&with_if_match(&env.app, Method::DELETE, &path, STALE, None).await);
    assert_eq!(env.operations_of("UPDATE_NODE_POOL").await, before);
    assert_eq!(env.pool("etags", &spot).await["etag"], current.as_str());
    // Current: accepted (a preview, so the pool stays as it is).
    let r = with_if_match(
        &env.app,
        Method::PATCH,
        &format!("{path}?validateOnly=true"),
        &current,
        Some(json!({"maxNodes": 5})),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{:#}", r.body);
    let r = with_if_match(&env.app, Method::DELETE, &path, &current, None).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{:#}", r.body);
    env.ok(&r.body).await;
}
