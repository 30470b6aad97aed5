//! The `:preview…` custom methods (one success type per route for generated clients):
//! each answers 200 with the plan its mutation's `validateOnly=true` form answers,
//! enqueues nothing (a request id only names the pools), and is published while
//! `validateOnly` is not.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Resp, ids};
use crate::support::{Env, OWNER, cluster_path, env, pool_path};

/// What a plan says, without the ids a new pool is given afresh on each call.
fn gist(plan: &Value) -> (Vec<String>, Value) {
    let actions = ids(plan, "actions", "id")
        .into_iter()
        .map(|id| id.split('-').take(2).collect::<Vec<_>>().join("-"))
        .collect();
    (actions, plan["warnings"].clone())
}

async fn send(env: &Env, method: reqwest::Method, path: &str, body: Option<Value>) -> Resp {
    env.app.call(OWNER, method, path, body).await
}

/// A POST with no body (a custom method).
async fn post(env: &Env, path: &str) -> Resp {
    send(env, reqwest::Method::POST, path, None).await
}

/// `preview` (a `:preview…` POST) and `legacy` (the mutation with `validateOnly=true`)
/// both answer 200 with the same plan.
async fn same_plan(env: &Env, preview: &str, legacy: (reqwest::Method, String), body: Value) {
    let p = send(env, reqwest::Method::POST, preview, Some(body.clone())).await;
    assert_eq!(p.status, StatusCode::OK, "{preview}: {}", p.body);
    let (method, path) = legacy;
    let validate_only = format!("{path}?validateOnly=true");
    let l = send(env, method, &validate_only, Some(body)).await;
    assert_eq!(l.status, StatusCode::OK, "{path}: {}", l.body);
    assert!(
        !p.body["actions"].as_array().unwrap().is_empty(),
        "{}",
        p.body
    );
    assert_eq!(gist(&p.body), gist(&l.body), "{preview}");
}

#[tokio::test]
async fn every_preview_method_answers_its_mutations_plan_and_enqueues_nothing() {
    let env = env().await;
    let c = cluster_path("kp");
    // Before the cluster exists: the plan of creating it.
    let up = json!({"accelerator": "l4"});
    let put = (reqwest::Method::PUT, c.clone());
    same_plan(&env, &format!("{c}:previewApply"), put.clone(), up.clone()).await;
    assert_eq!(env.app.get(OWNER, &c).await.status, StatusCode::NOT_FOUND);
    env.up_ok("kp", json!({"accelerator": "cpu"})).await;
    let pair = env
        .added_pool("kp", json!({"accelerator": "l4", "failover": true}))
        .await;
    let before = env.app.get(OWNER, "/v1/operations").await.body["operations"].clone();

    let pools = format!("{c}/nodePools");
    let pool = pool_path("kp", &pair);
    let cases = [
        (format!("{c}:previewApply"), put, up),
        (
            format!("{c}:previewDelete"),
            (reqwest::Method::DELETE, c.clone()),
            json!(null),
        ),
        (
            format!("{pools}:previewCreate"),
            (reqwest::Method::POST, pools.clone()),
            json!({"accelerator": "t4"}),
        ),
        (
            format!("{pool}:previewDelete"),
            (reqwest::Method::DELETE, pool.clone()),
            json!(null),
        ),
        (
            format!("{pool}:previewUpdate"),
            (reqwest::Method::PATCH, pool.clone()),
            json!({"maxNodes": 7}),
        ),
        (
            format!("{pool}:previewDrill"),
            (reqwest::Method::POST, format!("{pool}:drill")),
            json!({}),
        ),
    ];
    for (preview, legacy, body) in cases {
        same_plan(&env, &preview, legacy, body).await;
    }
    let after = env.app.get(OWNER, "/v1/operations").await.body["operations"].clone();
    assert_eq!(before, after, "a preview enqueued an operation");
}

#[tokio::test]
async fn a_preview_with_a_request_id_names_the_pools_that_request_creates_and_records_nothing() {
    let env = env().await;
    env.up_ok("kq", json!({"accelerator": "cpu"})).await;
    let c = cluster_path("kq");
    let body = json!({"accelerator": "t4"});
    let preview = format!("{c}/nodePools:previewCreate?requestId=add-1");
    let p = send(&env, reqwest::Method::POST, &preview, Some(body.clone())).await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    let named = ids(&p.body, "actions", "id").join(",");
    // Previewed twice: the same names, and nothing was recorded under the id.
    let again = send(&env, reqwest::Method::POST, &preview, Some(body.clone())).await;
    assert_eq!(ids(&again.body, "actions", "id").join(","), named);
    let r = send(
        &env,
        reqwest::Method::POST,
        &format!("{c}/nodePools?requestId=add-1"),
        Some(body),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = env.ok(&r.body).await;
    assert_eq!(
        ids(&done["metadata"]["plan"], "actions", "id").join(","),
        named
    );
}

#[tokio::test]
async fn previews_refuse_other_verbs_unknown_methods_and_what_the_mutation_refuses() {
    let env = env().await;
    env.up_ok("kq", json!({"accelerator": "cpu"})).await;
    let c = cluster_path("kq");
    // `validateOnly` is the mutation's; a preview does not take it.
    let r = post(&env, &format!("{c}:previewApply?validateOnly=true")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "UNKNOWN_QUERY_PARAMETER");
    // A custom method is POST only.
    let r = env
        .app
        .get(OWNER, &format!("{c}/nodePools:previewCreate"))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{}", r.body);
    // A misspelt verb is not a preview.
    let r = post(&env, &format!("{c}:previewDown")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.reason(), "METHOD_NOT_FOUND");
    let r = post(&env, &format!("{}:previewResize", pool_path("kq", "nope"))).await;
    assert_eq!(r.reason(), "METHOD_NOT_FOUND", "{}", r.body);
    // A preview's refusal is the mutation's: a pool that is not there.
    let r = post(&env, &format!("{}:previewDelete", pool_path("kq", "nope"))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    assert_eq!(r.reason(), "NODE_POOL_NOT_FOUND");
}

#[test]
fn the_published_document_has_one_success_type_per_route_and_no_validate_only() {
    let doc: Value = serde_json::from_str(&kineticd::api::openapi::document_json()).unwrap();
    let mut previews = vec![];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let Some(responses) = op.get("responses").and_then(Value::as_object) else {
                continue;
            };
            let ok: Vec<_> = responses.keys().filter(|s| s.starts_with('2')).collect();
            assert_eq!(ok.len(), 1, "{method} {path}: success statuses {ok:?}");
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            assert!(
                params.iter().all(|p| p["name"] != "validateOnly"),
                "{method} {path} publishes validateOnly"
            );
            let id = op["operationId"].as_str().unwrap();
            if id.starts_with("preview") {
                assert_eq!(method, "post", "{id}");
                previews.push(id.to_owned());
            }
        }
    }
    previews.sort();
    assert_eq!(
        previews,
        [
            "previewApplyCluster",
            "previewCreateNodePool",
            "previewDeleteCluster",
            "previewDeleteNodePool",
            "previewDrillNodePool",
            "previewUpdateNodePool"
        ]
    );
}
