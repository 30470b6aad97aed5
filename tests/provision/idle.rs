//! Idle rules and TTLs that act (issue 30 item 2): a warning first, then a normal
//! operation whose `createdBy` names the rule; snoozes within the policy's maximum; a
//! busy pool is never touched; a TTL brings its cluster down. Time moves on the
//! simulator's virtual clock.

use reqwest::StatusCode;
use serde_json::{Value, json};

use kineticd::ops::usage::Collector;
use kineticd::service::idle::{self, IDLE_RULE, TTL_RULE};

use crate::common::Resp;
use crate::support::{
    BOB, CAROL, Env, OWNER, POLICY, TEAM, cluster_path, env, l4_cluster, pool_path, start_gpu_pod,
    usage_collector,
};

const HOUR: f64 = 3600.0;

/// `who` snoozes the cluster or pool at `path` for `duration`.
async fn snooze(env: &Env, who: &str, path: &str, duration: &str) -> Resp {
    let body = json!({ "duration": duration });
    env.app.post(who, &format!("{path}:snooze"), body).await
}

/// Advance the virtual clock, sample, and run one pass of the rules.
async fn tick(env: &Env, c: &Collector, seconds: f64) -> idle::Pass {
    if seconds > 0.0 {
        env.advance(seconds).await;
    }
    c.round().await.expect("usage round");
    idle::pass(&env.app.state.services)
        .await
        .expect("idle pass")
}

async fn policy(env: &Env, idle: Value) {
    let r = env.app.patch(OWNER, POLICY, json!({ "idle": idle })).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

/// A fresh environment with an L4 pool on cluster `cluster` under the team's idle
/// rules `idle`; the pool.
async fn idle_pool(cluster: &str, idle: Value) -> (Env, String) {
    let env = env().await;
    let pool = l4_cluster(&env, cluster).await;
    policy(&env, idle).await;
    (env, pool)
}

/// The team's events of `kind`, oldest first.
async fn events(env: &Env, kind: &str) -> Vec<Value> {
    let mut e = env.events(kind).await;
    e.reverse();
    e
}

async fn operation(env: &Env, name: &str) -> Value {
    let r = env.app.get(OWNER, &format!("/v1/{name}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

#[tokio::test]
async fn an_idle_pool_is_warned_then_scaled_to_zero_by_the_rule() {
    let rules = json!({"poolIdleAfter": "7200s", "warnBefore": "1800s", "action": "SCALE_TO_ZERO"});
    let (env, pool) = idle_pool("ia", rules).await;
    let c = usage_collector(&env);
    let first = tick(&env, &c, 0.0).await;
    assert_eq!(first, idle::Pass::default());
    // 1.5 h idle: within the warning lead of the 2 h rule.
    let warned = tick(&env, &c, 1.5 * HOUR).await;
    let target = format!("projects/ml-proj/zones/us-central1-a/clusters/ia/nodePools/{pool}");
    assert_eq!(warned.warned, vec![target.clone()], "{warned:?}");
    assert!(warned.acted.is_empty());
    let w = events(&env, "IDLE_WARNING").await;
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["actor"], IDLE_RULE);
    assert_eq!(w[0]["target"], target);
    assert_eq!(w[0]["details"]["action"], "SCALE_TO_ZERO");
    // Warned once, not on every pass.
    assert_eq!(tick(&env, &c, 60.0).await, idle::Pass::default());

    let acted = tick(&env, &c, 0.5 * HOUR).await;
    assert_eq!(acted.acted.len(), 1, "{acted:?}");
    let op = operation(&env, &acted.acted[0].1).await;
    assert_eq!(op["metadata"]["type"], "UPDATE_NODE_POOL", "{op}");
    assert_eq!(
        op["metadata"]["createdBy"], IDLE_RULE,
        "the rule, not a person"
    );
    let done = env.run_out(&op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let p = env.pool("ia", &pool).await;
    assert_eq!(p["minNodes"], 0, "{p}");
    let a = events(&env, "IDLE_ACTION").await;
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["details"]["operation"], op["name"]);
    // Acted once per idle episode.
    assert!(tick(&env, &c, 60.0).await.acted.is_empty());
}

#[tokio::test]
async fn a_busy_pool_is_never_idle() {
    let rules = json!({"poolIdleAfter": "3600s", "action": "REMOVE_POOL", "warnBefore": "600s"});
    let (env, pool) = idle_pool("ib", rules).await;
    let pods = start_gpu_pod(&env, "ib", &pool, "train").await;
    let c = usage_collector(&env);
    for _ in 0..4 {
        assert_eq!(tick(&env, &c, HOUR).await, idle::Pass::default());
    }
    // The pod ends: the pool is idle from the last sample that saw it busy.
    pods.delete("train", &Default::default())
        .await
        .expect("delete pod");
    let w = tick(&env, &c, 0.9 * HOUR).await;
    assert_eq!(w.warned.len(), 1, "{w:?}");
    let a = tick(&env, &c, 0.1 * HOUR).await;
    assert_eq!(a.acted.len(), 1, "{a:?}");
    let op = operation(&env, &a.acted[0].1).await;
    assert_eq!(op["metadata"]["type"], "REMOVE_NODE_POOL", "{op}");
}

#[tokio::test]
async fn members_snooze_within_the_policy_maximum_and_each_snooze_is_audited() {
    let env = env().await;
    env.app.member(OWNER, TEAM, BOB, "MEMBER").await;
    env.app.member(OWNER, TEAM, CAROL, "VIEWER").await;
    let pool = l4_cluster(&env, "ic").await;
    policy(
        &env,
        json!({"poolIdleAfter": "7200s", "warnBefore": "1800s", "maxSnooze": "7200s"}),
    )
    .await;
    let c = usage_collector(&env);
    tick(&env, &c, 0.0).await;
    tick(&env, &c, HOUR).await;
    let path = pool_path("ic", &pool);
    // Past the maximum, by a viewer, or not a duration: refused.
    for (who, duration, status, reason) in [
        (BOB, "10800s", 400, "SNOOZE_TOO_LONG"),
        (CAROL, "3600s", 403, "PERMISSION_DENIED"),
        (BOB, "1.5h", 400, "INVALID_SNOOZE"),
    ] {
        let r = snooze(&env, who, &path, duration).await;
        let got = (r.status.as_u16(), r.reason());
        assert_eq!(got, (status, reason), "{who} {duration}: {}", r.body);
    }
    // Bob snoozes 1.5 h at 1 h: the action moves from 2 h to 2.5 h.
    let ok = snooze(&env, BOB, &path, "5400s").await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.body);
    assert!(ok.body["snoozedUntil"].is_string(), "{}", ok.body);
    let s = events(&env, "IDLE_SNOOZED").await;
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["actor"], BOB);
    let at_two = tick(&env, &c, HOUR).await;
    assert!(at_two.acted.is_empty(), "snoozed: {at_two:?}");
    assert_eq!(
        at_two.warned.len(),
        1,
        "warned before the snooze ends: {at_two:?}"
    );
    let after = tick(&env, &c, 0.5 * HOUR).await;
    assert_eq!(after.acted.len(), 1, "{after:?}");
}

#[tokio::test]
async fn a_ttl_warns_can_be_snoozed_and_brings_the_cluster_down() {
    let env = env().await;
    policy(&env, json!({"warnBefore": "600s"})).await;
    let path = cluster_path("it");
    for (body, field) in [
        (json!({"accelerator": "cpu", "ttl": "1h"}), "ttl"),
        (json!({"accelerator": "cpu", "ttl": "10s"}), "ttl"),
        (
            json!({"accelerator": "cpu", "ttl": "3600s", "expireTime": "2030-01-01T00:00:00Z"}),
            "ttl",
        ),
        (
            json!({"accelerator": "cpu", "expireTime": "2001-01-01T00:00:00Z"}),
            "expireTime",
        ),
    ] {
        let r = env.app.put(OWNER, &path, body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
        let d = &r.body["error"]["details"][0];
        assert_eq!(
            (d["reason"].as_str(), d["metadata"]["field"].as_str()),
            (Some("INVALID_TTL"), Some(field)),
            "{body}"
        );
    }
    let up = env
        .up_ok("it", json!({"accelerator": "cpu", "ttl": "3600s"}))
        .await;
    assert!(up["error"].is_null());
    let cluster = env.app.get(OWNER, &path).await.body;
    let expire = cluster["expireTime"]
        .as_str()
        .expect("expireTime")
        .to_owned();

    let c = usage_collector(&env);
    assert_eq!(tick(&env, &c, 0.0).await, idle::Pass::default());
    let w = tick(&env, &c, 3000.0).await;
    assert_eq!(w.warned.len(), 1, "{w:?}");
    let t = events(&env, "TTL_WARNING").await;
    assert_eq!(t[0]["actor"], TTL_RULE);
    assert_eq!(t[0]["details"]["expireTime"], expire);
    // A snooze of the cluster postpones its expiry (the default maximum is a day).
    let s = snooze(&env, OWNER, &path, "1800s").await;
    assert_eq!(s.status, StatusCode::OK, "{}", s.body);
    let later = s.body["expireTime"]
        .as_str()
        .expect("new expiry")
        .to_owned();
    assert!(later > expire, "{later} after {expire}");
    assert_eq!(env.app.get(OWNER, &path).await.body["expireTime"], later);
    assert_eq!(tick(&env, &c, 1000.0).await, idle::Pass::default());
    let again = tick(&env, &c, 700.0).await;
    assert_eq!(
        again.warned.len(),
        1,
        "the new expiry is warned of too: {again:?}"
    );
    let down = tick(&env, &c, 200.0).await;
    assert_eq!(down.acted.len(), 1, "{down:?}");
    let op = operation(&env, &down.acted[0].1).await;
    assert_eq!(op["metadata"]["type"], "DOWN_CLUSTER", "{op}");
    assert_eq!(op["metadata"]["createdBy"], TTL_RULE);
    let done = env.run_out(&op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    assert_eq!(events(&env, "TTL_EXPIRED").await.len(), 1);
}

#[tokio::test]
async fn bad_idle_rules_are_refused_with_the_field() {
    let env = env().await;
    for (idle, field) in [
        (json!({"poolIdleAfter": "2h"}), "idle.poolIdleAfter"),
        (
            json!({"poolIdleAfter": "600s", "warnBefore": "900s"}),
            "idle.warnBefore",
        ),
        (json!({"action": "REMOVE_POOL"}), "idle.action"),
        (
            json!({"poolIdleAfter": "600s", "action": "DELETE_EVERYTHING"}),
            "policy",
        ),
        (json!({"idleAfter": "600s"}), "policy"),
    ] {
        let r = env.app.patch(OWNER, POLICY, json!({ "idle": idle })).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{idle}: {}", r.body);
        let d = &r.body["error"]["details"][0];
        assert_eq!(d["reason"], "INVALID_POLICY", "{idle}");
        assert_eq!(d["metadata"]["field"], field, "{idle}");
    }
}
