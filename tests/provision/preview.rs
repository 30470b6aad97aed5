//! Previews that tell the truth: zones and accelerators checked against Compute before
//! anything is previewed or written, preview and apply naming the same pools, the spot
//! flag never guessed, money in cents, and a second `up` that KEEPs what exists.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::Resp;
use crate::support::*;

fn path_in(zone: &str, cluster: &str) -> String {
    format!("/v1/projects/{PROJECT}/zones/{zone}/clusters/{cluster}")
}

fn metadata(r: &Value) -> &Value {
    &r["error"]["details"][0]["metadata"]
}

/// `PUT path body` as the owner, which must be refused with 400; the response.
async fn refused(env: &Env, path: &str, body: Value) -> Resp {
    let r = env.app.put(OWNER, path, body).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{path}: {}", r.body);
    r
}

/// Every journal entry that is not a read.
async fn writes(env: &Env) -> Vec<Value> {
    env.journal("", "")
        .await
        .into_iter()
        .filter(|e| e["httpMethod"] != "GET")
        .collect()
}

#[tokio::test]
async fn a_zone_compute_does_not_have_is_refused_before_the_preview_and_any_write() {
    let env = env().await;
    for q in ["?validateOnly=true", ""] {
        // A region that does not exist: the regions there are are listed.
        let path = format!("{}{q}", path_in("xx-fake9-z", "kz"));
        let r = refused(&env, &path, json!({"accelerator": "l4"})).await;
        assert_eq!(r.reason(), "INVALID_ZONE");
        assert_eq!(r.body["error"]["status"], "INVALID_ARGUMENT");
        let m = metadata(&r.body);
        assert_eq!(m["zone"], "xx-fake9-z");
        assert_eq!(m["zones"], "");
        let regions = m["regions"].as_str().unwrap_or_default();
        assert!(regions.split(',').any(|x| x == "us-central1"), "{m}");
        // A zone letter its region does not have: the region's zones are listed.
        let path = format!("{}{q}", path_in("us-central1-z", "kz"));
        let r = refused(&env, &path, json!({"accelerator": "cpu"})).await;
        assert_eq!(r.reason(), "INVALID_ZONE");
        assert_eq!(
            metadata(&r.body)["zones"],
            "us-central1-a,us-central1-b,us-central1-c,us-central1-f"
        );
        assert_message_has(&r, "us-central1-f");
    }
    assert_eq!(writes(&env).await, Vec::<Value>::new());
    assert_eq!(
        env.app
            .get(OWNER, &path_in("xx-fake9-z", "kz"))
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let ops = env.app.get(OWNER, "/v1/operations").await.body;
    assert_eq!(ops["operations"], json!([]), "{ops}");
}

#[tokio::test]
async fn an_accelerator_the_zone_does_not_offer_is_refused_with_the_zones_that_do() {
    let env = env().await;
    // H100s are only in zones -a, -b and -c of the simulated regions; v5e in us-central1-a.
    let cases = [
        ("h100", "us-central1-a,us-central1-b,us-central1-c"),
        ("tpu-v5litepod-4", "us-central1-a"),
    ];
    for (acc, zones) in cases {
        for q in ["?validateOnly=true", ""] {
            let path = format!("{}{q}", path_in("us-central1-f", "kf"));
            let r = refused(&env, &path, json!({"accelerator": acc})).await;
            assert_eq!(r.reason(), "ACCELERATOR_NOT_IN_ZONE");
            let m = metadata(&r.body);
            assert_eq!(m["zone"], "us-central1-f");
            assert_eq!(m["zones"], zones, "{acc}: {m}");
        }
    }
    // v4 TPUs are in no zone of us-central1.
    let path = path_in("us-central1-a", "kf");
    let r = refused(&env, &path, json!({"accelerator": "tpu-v4-8"})).await;
    assert_eq!(metadata(&r.body)["zones"], "");
    assert_message_has(&r, "another accelerator or region");
    assert_eq!(writes(&env).await, Vec::<Value>::new());

    // A pool spread over a zone without the GPU is refused too.
    env.up_ok("kp", json!({"accelerator": "cpu"})).await;
    let before = writes(&env).await.len();
    let r = env
        .post_pool(
            "kp",
            json!({"accelerator": "h100", "zones": ["us-central1-a", "us-central1-f"]}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "ACCELERATOR_NOT_IN_ZONE");
    assert_eq!(metadata(&r.body)["zone"], "us-central1-f");
    assert_eq!(writes(&env).await.len(), before);
}

#[tokio::test]
async fn a_cloud_failure_while_checking_the_zone_is_unavailable_not_a_pass() {
    let env = env().await;
    for (method, body) in [
        ("zones.get", json!({"accelerator": "l4"})),
        ("acceleratorTypes.get", json!({"accelerator": "l4"})),
        (
            "machineTypes.get",
            json!({"accelerator": "tpu-v5litepod-4"}),
        ),
    ] {
        // More failures in a row than a request's call rides out.
        env.arm(
            "compute",
            method,
            "HTTP_503",
            kineticd::cloud::retry::MAX_TRIES,
        )
        .await;
        let r = env
            .app
            .put(
                OWNER,
                &format!("{}?validateOnly=true", cluster_path("ku")),
                body,
            )
            .await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
        assert_eq!(r.body["error"]["status"], "UNAVAILABLE");
        assert_eq!(r.reason(), "CLOUD_UNAVAILABLE");
        assert_eq!(metadata(&r.body)["method"], method);
    }
    // Once Compute answers, the same preview goes through.
    env.preview_up("ku", json!({"accelerator": "l4"})).await;
    assert_eq!(writes(&env).await, Vec::<Value>::new());
}

#[tokio::test]
async fn spot_false_with_a_spot_accelerator_is_refused() {
    let env = env().await;
    let body = json!({"accelerator": "l4:spot", "spot": false});
    let r = env.app.put(OWNER, &cluster_path("ks"), body.clone()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.body["error"]["status"], "INVALID_ARGUMENT");
    assert_eq!(r.reason(), "SPOT_CONFLICT");
    env.up_ok("ks", json!({"accelerator": "cpu"})).await;
    let r = env.post_pool("ks", body).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "SPOT_CONFLICT");
    // Agreeing spellings are fine, and the pool is spot.
    let r = env
        .preview_pool("ks", json!({"accelerator": "l4:spot", "spot": true}))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["actions"][0]["details"]["spot"], true);
}

#[tokio::test]
async fn money_is_in_cents_in_plans_and_pools() {
    let env = env_up("km").await;
    let path = format!("{}/nodePools", cluster_path("km"));
    // a100x4 failover: spot 10 x 5.88 + on demand 10 x 14.68, which floats make 205.60000000000002.
    let body = json!({"accelerator": "a100x4", "failover": true});
    let r = env
        .app
        .post(OWNER, &format!("{path}?validateOnly=true"), body.clone())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let text = r.body.to_string();
    assert!(text.contains(r#""atMax":205.6"#), "{text}");
    assert!(!text.contains("0000000"), "{text}");
    let op = env.add_pool("km", body).await;
    env.ok(&op).await;
    let pools = env.app.get(OWNER, &path).await.body;
    let text = pools.to_string();
    assert!(text.contains(r#""perNode":5.88"#), "{text}");
    assert!(!text.contains("0000000"), "{text}");
}

/// (id, action, type, name) of every action.
fn actions(plan: &Value) -> Vec<(String, String, String, String)> {
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let s = |k: &str| a[k].as_str().unwrap_or_default().to_owned();
            (s("id"), s("action"), s("type"), s("name"))
        })
        .collect()
}

fn pool_ids(plan: &Value) -> Vec<String> {
    actions(plan)
        .into_iter()
        .filter(|a| a.2 == "container.nodePool")
        .map(|a| a.3.rsplit('/').next().unwrap().to_owned())
        .collect()
}

/// `method path?validateOnly=true&requestId=id` with `body`, as the owner: the plan.
async fn preview_with_id(env: &Env, method: &Method, path: &str, id: &str, body: &Value) -> Value {
    let q = format!("{path}?validateOnly=true&requestId={id}");
    let r = env
        .app
        .call(OWNER, method.clone(), &q, Some(body.clone()))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

/// `method path?requestId=id` with `body`, as the owner, run to its end: it succeeds
/// having carried out the `preview`'s actions. The finished operation.
async fn apply_with_id(env: &Env, method: Method, path: &str, id: &str, body: Value) -> Value {
    let q = format!("{path}?requestId={id}");
    let r = env.app.call(OWNER, method, &q, Some(body)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await
}

#[tokio::test]
async fn a_preview_with_a_request_id_names_the_pools_its_apply_creates() {
    let env = env().await;
    let up = cluster_path("ka");
    let body = json!({"accelerator": "l4"});
    let preview = preview_with_id(&env, &Method::PUT, &up, "req-up-1", &body).await;
    let again = preview_with_id(&env, &Method::PUT, &up, "req-up-1", &body).await;
    assert_eq!(pool_ids(&preview), pool_ids(&again), "stable");
    let done = apply_with_id(&env, Method::PUT, &up, "req-up-1", body).await;
    assert_eq!(actions(&done["metadata"]["plan"]), actions(&preview));
    let ids = pool_ids(&preview);
    assert_eq!(ids.len(), 1);
    let pool = env
        .app
        .get(OWNER, &format!("{up}/nodePools/{}", ids[0]))
        .await;
    assert_eq!(pool.status, StatusCode::OK, "{}", pool.body);

    // pool add: the same, for a failover pair.
    let add = format!("{up}/nodePools");
    let body = l4_failover_pair();
    let preview = preview_with_id(&env, &Method::POST, &add, "req-add-1", &body).await;
    let done = apply_with_id(&env, Method::POST, &add, "req-add-1", body).await;
    assert_eq!(actions(&done["metadata"]["plan"]), actions(&preview));
    let ids = pool_ids(&preview);
    assert_eq!(ids.len(), 2);
    assert!(
        done["metadata"]["target"]
            .as_str()
            .unwrap()
            .ends_with(&ids[0]),
        "{done}"
    );

    // Without a request id the preview does not pretend: the id is assigned at apply.
    let preview = env
        .app
        .post(
            OWNER,
            &format!("{add}?validateOnly=true"),
            json!({"accelerator": "t4"}),
        )
        .await;
    assert_eq!(pool_ids(&preview.body), ["gpu-t4-xxxx"]);
    let pool = &preview.body["actions"][0];
    assert!(
        pool["reason"]
            .as_str()
            .unwrap()
            .contains("assigned when the request is applied"),
        "{pool}"
    );
}

#[tokio::test]
async fn a_second_up_keeps_the_apis_and_kubernetes_objects_that_exist() {
    let env = env().await;
    env.up_ok("k2", json!({"accelerator": "l4"})).await;
    let plan = env.preview_up("k2", json!({})).await;
    let by = |plan: &Value, id: &str| {
        plan["actions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no {id} in {plan}"))
    };
    for a in plan["actions"].as_array().unwrap() {
        let expected = if a["id"] == "profile" {
            "UPDATE"
        } else {
            "KEEP"
        };
        assert_eq!(a["action"], expected, "{a}");
    }
    assert_eq!(by(&plan, "apis")["type"], "serviceusage.service");
    assert_eq!(by(&plan, "nvidia-driver")["type"], "kubernetes.object");

    // The LWS controller deleted behind kineticd's back: the preview says CREATE.
    let lws = format!(
        "{}/kube/{PROJECT}.{ZONE}.k2/apis/apps/v1/namespaces/lws-system/deployments/lws-controller-manager",
        env.sim.url()
    );
    let r = env.app.http.delete(&lws).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let plan = env.preview_up("k2", json!({})).await;
    let lws = by(&plan, "lws");
    assert_eq!(lws["action"], "CREATE", "{lws}");
    assert_eq!(by(&plan, "ksa")["action"], "KEEP");

    // The apply plans the same, and puts it back.
    let op = env.up("k2", json!({})).await;
    let done = env.done(&op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    assert_eq!(actions(&done["metadata"]["plan"]), actions(&plan));
    assert_eq!(
        by(&env.preview_up("k2", json!({})).await, "lws")["action"],
        "KEEP"
    );
}
