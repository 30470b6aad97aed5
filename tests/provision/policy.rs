//! Team guardrails (issue 29): the policy resource, the verdict plans carry, caps that
//! lower a default maximum or refuse, approvals, and caps that hold under concurrency.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::checks::strs;
use crate::common::{Resp, entry};
use crate::support::{
    BOB, CAROL, Env, OWNER, POLICY, TEAM, assert_error, assert_message_has, cluster_path, env,
    env_up, pool_path,
};

const ADA: &str = "ada@example.com";
const OUTSIDER: &str = "mallory@example.com";

async fn roster(env: &Env) {
    env.app.member(OWNER, TEAM, BOB, "MEMBER").await;
    env.app.member(OWNER, TEAM, CAROL, "VIEWER").await;
    env.app.member(OWNER, TEAM, ADA, "ADMIN").await;
    env.app
        .team(OUTSIDER, "outsiders", &["outsider-proj"])
        .await;
}

async fn set_policy(env: &Env, body: Value) -> Value {
    let r = env.app.patch(OWNER, POLICY, body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

fn metadata(r: &Resp) -> &Value {
    &r.body["error"]["details"][0]["metadata"]
}

#[tokio::test]
async fn the_policy_is_read_by_members_and_changed_by_admins_with_masks_and_etags() {
    let env = env().await;
    roster(&env).await;
    let empty = env.app.get(CAROL, POLICY).await;
    assert_eq!(empty.status, StatusCode::OK, "{}", empty.body);
    assert_eq!(empty.body["name"], "teams/ml-team/policy");
    assert!(empty.body.get("maxClusters").is_none(), "{}", empty.body);
    assert_error(&env.app.get(OUTSIDER, POLICY).await, 404, "TEAM_NOT_FOUND");
    let by_member = env.app.patch(BOB, POLICY, json!({"maxClusters": 1})).await;
    assert_error(&by_member, 403, "PERMISSION_DENIED");

    let p = set_policy(
        &env,
        json!({"maxAccelerators": {"gpu-l4": 16}, "allowedZones": ["us-central1-a"],
               "allowedProvisioning": ["ON_DEMAND", "SPOT"], "maxHourlyCostUsd": 100.5}),
    )
    .await;
    assert_eq!(p["maxAccelerators"]["gpu-l4"], 16);
    assert_eq!(p["maxHourlyCostUsd"], 100.5);
    // No mask: only the body's fields change.
    let q = env
        .app
        .patch(ADA, POLICY, json!({"maxClusters": 2, "etag": p["etag"]}))
        .await;
    assert_eq!(q.status, StatusCode::OK, "{}", q.body);
    assert_eq!(
        (
            q.body["maxClusters"].clone(),
            q.body["maxAccelerators"]["gpu-l4"].clone()
        ),
        (json!(2), json!(16))
    );
    // A stale etag is refused; nothing changes.
    let stale = env
        .app
        .patch(ADA, POLICY, json!({"maxClusters": 5, "etag": p["etag"]}))
        .await;
    assert_error(&stale, 409, "ETAG_MISMATCH");
    // A masked field absent from the body is cleared.
    let path = format!("{POLICY}?updateMask=allowedZones,maxHourlyCostUsd");
    let cleared = env.app.patch(OWNER, &path, json!({})).await;
    assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.body);
    assert!(
        cleared.body.get("allowedZones").is_none(),
        "{}",
        cleared.body
    );
    assert!(
        cleared.body.get("maxHourlyCostUsd").is_none(),
        "{}",
        cleared.body
    );
    assert_eq!(cleared.body["maxClusters"], 2);
    // Bad input names the field and changes nothing.
    for (body, field) in [
        (
            json!({"allowedAccelerators": ["gpu-l4x4"]}),
            "allowedAccelerators",
        ),
        (
            json!({"maxAccelerators": {"gpu-nope": 1}}),
            "maxAccelerators",
        ),
        (json!({"allowedZones": ["us-central1"]}), "allowedZones"),
        (json!({"monthlyBudgetUsd": -1}), "monthlyBudgetUsd"),
        (json!({"maxGpus": 1}), "maxGpus"),
    ] {
        let r = env.app.patch(OWNER, POLICY, body.clone()).await;
        assert_error(&r, 400, "INVALID_POLICY");
        assert_eq!(metadata(&r)["field"], field, "{body}: {}", r.body);
    }
    let bad_mask = env
        .app
        .patch(OWNER, &format!("{POLICY}?updateMask=nope"), json!({}))
        .await;
    assert_error(&bad_mask, 400, "INVALID_UPDATE_MASK");
    let now = env.app.get(BOB, POLICY).await.body;
    assert_eq!(
        now["etag"], cleared.body["etag"],
        "refusals changed nothing"
    );
    // Every change is in the audit trail, before and after.
    let changes = events(&env, "POLICY_CHANGED").await;
    assert_eq!(changes.len(), 3, "{changes:?}");
    let last = &changes[0];
    assert_eq!(last["actor"], OWNER);
    assert_eq!(
        last["details"]["before"]["allowedZones"],
        json!(["us-central1-a"])
    );
    assert!(
        last["details"]["after"].get("allowedZones").is_none(),
        "{last}"
    );
}

/// Bob's `pool add` of `body` at `pools` with validateOnly: the plan, whose policy
/// verdict must be `verdict`.
async fn preview_pool(env: &Env, pools: &str, body: &Value, verdict: &str) -> Value {
    let path = format!("{pools}?validateOnly=true");
    let preview = env.app.post(BOB, &path, body.clone()).await;
    assert_eq!(preview.status, StatusCode::OK, "{}", preview.body);
    assert_eq!(
        preview.body["policy"]["verdict"], verdict,
        "{}",
        preview.body
    );
    preview.body
}

/// The example: Bob asks for a pool of 8-GPU nodes whose default maximum (10
/// nodes) would hold 80 GPUs; the team allows 16.
#[tokio::test]
async fn a_default_maximum_is_lowered_to_the_cap_and_a_pool_past_it_is_refused() {
    let env = env_up("kc").await;
    roster(&env).await;
    set_policy(&env, json!({"maxAccelerators": {"gpu-l4": 16}})).await;
    let pools = format!("{}/nodePools", cluster_path("kc"));
    let ask = json!({"accelerator": "gpu-l4x8"});

    let preview = preview_pool(&env, &pools, &ask, "ALLOWED").await;
    let warnings = preview["warnings"].to_string();
    assert!(warnings.contains("lowered from 10 to 2"), "{warnings}");

    let r = env.app.post(BOB, &pools, ask.clone()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let done = env.ok(&r.body).await;
    let pool = crate::support::pool_of(&done);
    assert_eq!(env.pool("kc", &pool).await["maxNodes"], 2);
    let gke = env
        .gcp()
        .container
        .get_node_pool("ml-proj", "us-central1-a", "kc", &pool)
        .await;
    let autoscaling = gke.expect("GKE pool").autoscaling.expect("autoscaling");
    assert_eq!(
        autoscaling.max_node_count,
        Some(2),
        "GKE's limit holds the cap"
    );

    // 16 held: a pool of one more node does not fit even at its minimum.
    let more = json!({"accelerator": "gpu-l4x8", "minNodes": 1});
    let preview = preview_pool(&env, &pools, &more, "DENIED").await;
    let v = &preview["policy"]["violations"][0];
    assert_eq!(
        strs(v, ["rule", "limit", "current"]),
        [Some("maxAccelerators.gpu-l4"), Some("16"), Some("16")],
        "{v}"
    );
    let before = env.app.get(OWNER, "/v1/operations").await.body["operations"]
        .as_array()
        .map(Vec::len);
    let r = env.app.post(BOB, &pools, more).await;
    assert_error(&r, 403, "POLICY_VIOLATION");
    assert_eq!(metadata(&r)["rule"], "maxAccelerators.gpu-l4");
    assert_eq!(metadata(&r)["limit"], "16");
    let after = env.app.get(OWNER, "/v1/operations").await.body["operations"]
        .as_array()
        .map(Vec::len);
    assert_eq!(before, after, "nothing was enqueued");
    let refusals = events(&env, "REQUEST_REFUSED").await;
    let by_policy = refusals
        .iter()
        .find(|e| e["details"]["reason"] == "POLICY_VIOLATION");
    assert_eq!(
        by_policy.map(|e| e["actor"].clone()),
        Some(json!(BOB)),
        "{refusals:?}"
    );

    // A resize past the cap is refused too; shrinking is always allowed.
    let r = env
        .app
        .patch(BOB, &pool_path("kc", &pool), json!({"maxNodes": 3}))
        .await;
    assert_error(&r, 403, "POLICY_VIOLATION");
    let r = env
        .app
        .patch(BOB, &pool_path("kc", &pool), json!({"maxNodes": 1}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await;

    // A tightened policy reports what it leaves over, and destroys nothing.
    set_policy(
        &env,
        json!({"maxAccelerators": {"gpu-l4": 4}, "allowedAccelerators": ["gpu-t4"]}),
    )
    .await;
    let e = env.app.get(CAROL, &format!("{POLICY}:evaluate")).await;
    assert_eq!(e.status, StatusCode::OK, "{}", e.body);
    assert_eq!(e.body["usage"]["accelerators"]["gpu-l4"], 8, "{}", e.body);
    let cap = entry(&e.body, "limits", "rule", "maxAccelerators.gpu-l4");
    assert_eq!(
        (cap["exceeded"].clone(), cap["current"].clone()),
        (json!(true), json!("8"))
    );
    let allowed = entry(&e.body, "limits", "rule", "allowedAccelerators");
    assert!(
        allowed["current"]
            .as_str()
            .unwrap_or_default()
            .ends_with(&pool),
        "{allowed}"
    );
    assert_eq!(env.pool("kc", &pool).await["state"], "RUNNING");
    let up = env.app.put(BOB, &cluster_path("kc"), json!({})).await;
    assert_eq!(
        up.status,
        StatusCode::ACCEPTED,
        "a reconcile is never blocked: {}",
        up.body
    );
    assert_eq!(up.body["metadata"]["plan"]["policy"]["verdict"], "ALLOWED");
    env.done(&up.body).await;
}

/// The team's roster, and a policy that asks an approval above USD 1 an hour.
async fn approval_above_one_dollar(env: &Env) {
    roster(env).await;
    set_policy(env, json!({"approvalAboveHourlyCostUsd": 1.0})).await;
}

async fn pending_pool(env: &Env, who: &str) -> Value {
    let pools = format!("{}/nodePools", cluster_path("kc"));
    let r = env
        .app
        .post(who, &pools, json!({"accelerator": "gpu-l4"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["state"], "PENDING_APPROVAL",
        "{}",
        r.body
    );
    assert_eq!(
        r.body["metadata"]["plan"]["policy"]["verdict"],
        "NEEDS_APPROVAL"
    );
    r.body
}

fn name(op: &Value) -> &str {
    op["name"].as_str().expect("operation name")
}

#[tokio::test]
async fn requests_above_the_approval_line_wait_for_another_admin() {
    let env = env_up("kc").await;
    approval_above_one_dollar(&env).await;
    let op = pending_pool(&env, ADA).await;
    // It holds nothing: no pool record, no GKE call, and other work on the cluster runs.
    assert!(
        env.pools("kc").await["nodePools"]
            .as_array()
            .is_none_or(|p| p.is_empty())
    );
    let up = env.app.put(BOB, &cluster_path("kc"), json!({})).await;
    assert_eq!(up.status, StatusCode::ACCEPTED, "{}", up.body);
    assert_eq!(env.done(&up.body).await["metadata"]["state"], "SUCCEEDED");
    assert!(
        env.ok_calls("container", "nodePools.create")
            .await
            .is_empty()
    );
    assert_eq!(
        env.app.get(BOB, &format!("/v1/{}", name(&op))).await.body["metadata"]["state"],
        "PENDING_APPROVAL"
    );

    let approve = |who: &'static str| {
        let path = format!("/v1/{}:approve", name(&op));
        let app = &env.app;
        async move { app.post(who, &path, json!({"comment": "go"})).await }
    };
    assert_error(&approve(ADA).await, 403, "APPROVAL_BY_REQUESTER");
    assert_error(&approve(BOB).await, 403, "PERMISSION_DENIED");
    assert_error(&approve(CAROL).await, 403, "PERMISSION_DENIED");
    assert_error(&approve(OUTSIDER).await, 404, "OPERATION_NOT_FOUND");
    let ok = approve(OWNER).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    assert_eq!(ok.body["metadata"]["state"], "QUEUED", "{}", ok.body);
    let done = env.ok(&ok.body).await;
    assert_eq!(done["name"], op["name"], "the same operation ran");
    let pool = crate::support::pool_of(&done);
    assert_eq!(
        env.pool("kc", &pool).await["state"],
        "RUNNING",
        "its target is the pool made"
    );
    assert_eq!(env.ok_calls("container", "nodePools.create").await.len(), 1);
    assert_error(&approve(ADA).await, 409, "OPERATION_NOT_PENDING_APPROVAL");
    // The audit trail has the approval, by whom, and the refused self-approval.
    let approved = events(&env, "OPERATION_APPROVED").await;
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["actor"], OWNER);
    assert_eq!(approved[0]["target"], op["name"]);
    assert_eq!(approved[0]["details"]["comment"], "go");
    let refusals = events(&env, "REQUEST_REFUSED").await;
    let own = refusals
        .iter()
        .any(|e| e["actor"] == ADA && e["details"]["reason"] == "APPROVAL_BY_REQUESTER");
    assert!(own, "{refusals:?}");
}

/// The team's audit events of `kind`, newest first.
async fn events(env: &Env, kind: &str) -> Vec<Value> {
    env.events(kind).await
}

#[tokio::test]
async fn a_rejection_or_a_tightened_policy_ends_or_keeps_a_pending_request() {
    let env = env_up("kc").await;
    approval_above_one_dollar(&env).await;
    let op = pending_pool(&env, BOB).await;
    let r = env
        .app
        .post(
            ADA,
            &format!("/v1/{}:reject", name(&op)),
            json!({"comment": "use a T4"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["metadata"]["state"], "CANCELLED");
    assert_eq!(r.reason(), "APPROVAL_REJECTED", "{}", r.body);
    assert_message_has(&r, "use a T4");
    let rejected = events(&env, "OPERATION_REJECTED").await;
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0]["actor"], ADA);

    // Approval checks the policy again: a cap set since the request refuses it, and the
    // request keeps waiting.
    let op = pending_pool(&env, BOB).await;
    set_policy(&env, json!({"maxAccelerators": {"gpu-l4": 0}})).await;
    let r = env
        .app
        .post(OWNER, &format!("/v1/{}:approve", name(&op)), json!({}))
        .await;
    assert_error(&r, 403, "POLICY_VIOLATION");
    let still = env.app.get(BOB, &format!("/v1/{}", name(&op))).await;
    assert_eq!(
        still.body["metadata"]["state"], "PENDING_APPROVAL",
        "{}",
        still.body
    );
    // The requester may withdraw it.
    let c = env
        .app
        .post(BOB, &format!("/v1/{}:cancel", name(&op)), json!({}))
        .await;
    assert_eq!(c.status, StatusCode::OK, "{}", c.body);
    assert_eq!(c.body["metadata"]["state"], "CANCELLED");
}

#[tokio::test]
async fn an_approval_nobody_gives_expires() {
    let env = crate::support::env_with_settings(|mut s| {
        s.approval_ttl = std::time::Duration::from_secs(1);
        s
    })
    .await;
    env.up_ok("kc", json!({"accelerator": "cpu"})).await;
    approval_above_one_dollar(&env).await;
    let op = pending_pool(&env, BOB).await;
    let done = env.app.wait_done(BOB, name(&op)).await;
    assert_eq!(done["metadata"]["state"], "CANCELLED", "{done}");
    assert_eq!(
        done["error"]["details"][0]["reason"], "APPROVAL_EXPIRED",
        "{done}"
    );
}

/// Concurrent pool adds on two clusters of the team: each passes the cap alone, and
/// together exactly as many as fit are accepted.
#[tokio::test]
async fn concurrent_requests_cannot_together_pass_a_cap() {
    let env = env_up("kc").await;
    env.up_ok("kd", json!({"accelerator": "cpu"})).await;
    set_policy(&env, json!({"maxNodePools": 3})).await;
    let tries: Vec<_> = (0..8)
        .map(|i| {
            let path = format!(
                "{}/nodePools",
                cluster_path(if i % 2 == 0 { "kc" } else { "kd" })
            );
            let app = &env.app;
            async move {
                app.post(OWNER, &path, json!({"accelerator": "gpu-l4"}))
                    .await
            }
        })
        .collect();
    let answers = futures::future::join_all(tries).await;
    let accepted = answers
        .iter()
        .filter(|r| r.status == StatusCode::ACCEPTED)
        .count();
    for r in answers.iter().filter(|r| r.status != StatusCode::ACCEPTED) {
        assert_error(r, 403, "POLICY_VIOLATION");
        assert_eq!(metadata(r)["rule"], "maxNodePools");
    }
    assert_eq!(accepted, 3, "{answers:?}");
    let e = env.app.get(OWNER, &format!("{POLICY}:evaluate")).await;
    assert_eq!(e.body["usage"]["nodePools"], 3, "{}", e.body);
}
