//! Usage from the nodes that ran (issue 30 item 1): the collector samples a RUNNING
//! cluster's nodes and pods through the simulator's Kubernetes API on the simulator's
//! virtual clock; the usage API sums node, accelerator, busy and idle hours and cost;
//! restarts and a second collector never count time twice; an unreadable cluster is a
//! gap, not zero.

use reqwest::StatusCode;
use serde_json::{Value, json};

use kineticd::domain::accelerators::{self, Choice};
use kineticd::domain::provisioning::Provisioning;
use kineticd::ops::usage::Collector;

use crate::common::checks::assert_content_type;
use crate::support::{Env, OWNER, env, kube, l4_cluster, pool_of, start_gpu_pod, usage_collector};

const HOUR: f64 = 3600.0;
const USAGE: &str = "/v1/teams/ml-team/usage";

async fn round(c: &Collector) -> kineticd::ops::usage::Round {
    let r = c.round().await.expect("a usage round");
    assert!(r.round.is_some(), "this collector holds the task: {r:?}");
    r
}

/// The row of `pool` in a groupBy=pool answer.
fn pool_row<'a>(usage: &'a Value, pool: &str) -> &'a Value {
    usage["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["pool"] == pool))
        .unwrap_or_else(|| panic!("no row for {pool}: {usage}"))
}

/// The usage by pool, and its row for `pool`.
async fn by_pool(env: &Env, pool: &str) -> (Value, Value) {
    let u = usage(env, "groupBy=pool").await;
    let row = pool_row(&u, pool).clone();
    (u, row)
}

async fn usage(env: &Env, query: &str) -> Value {
    let r = env.app.get(OWNER, &format!("{USAGE}?{query}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

/// The usage by pool from `start` to `end` (RFC 3339).
async fn pool_usage_between(env: &Env, start: &str, end: &str) -> Value {
    let q = format!(
        "groupBy=pool&startTime={}&endTime={}",
        urlencode(start),
        urlencode(end)
    );
    usage(env, &q).await
}

/// The collector's round `seconds` (virtual) later.
async fn later(env: &Env, c: &Collector, seconds: f64) -> kineticd::ops::usage::Round {
    env.advance(seconds).await;
    round(c).await
}

/// A fresh environment with an L4 pool on cluster `cluster`, and a collector that has
/// sampled it at the start and at the end of an hour; the pool.
async fn sampled_hour(cluster: &str) -> (Env, String, Collector) {
    let env = env().await;
    let pool = l4_cluster(&env, cluster).await;
    let c = usage_collector(&env);
    round(&c).await;
    later(&env, &c, HOUR).await;
    (env, pool, c)
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-6)
}

async fn run_gpu_pod(env: &Env, cluster: &str, pool: &str, name: &str) {
    start_gpu_pod(env, cluster, pool, name).await;
    let k = kube(env, cluster);
    let running = k
        .pods(Some("default"))
        .await
        .expect("pods")
        .into_iter()
        .any(|p| p.name == name && p.phase == "Running" && p.node.is_some());
    assert!(running, "the GPU pod runs at once on an existing node");
}

#[tokio::test]
async fn usage_counts_node_busy_and_idle_hours_and_cost_on_the_virtual_clock() {
    let env = env().await;
    let pool = l4_cluster(&env, "uc").await;
    let c = usage_collector(&env);
    let first = round(&c).await;
    assert_eq!((first.sampled, first.unreachable), (1, 0), "{first:?}");
    later(&env, &c, HOUR).await;
    // One of the two GPUs busy from the sample that first sees its pod (the third) on:
    // one hour of the three.
    run_gpu_pod(&env, "uc", &pool, "train").await;
    later(&env, &c, HOUR).await;
    let last = later(&env, &c, HOUR).await;
    assert_eq!(last.stale, 0);

    let (u, row) = by_pool(&env, &pool).await;
    assert!(
        close(&row["nodeHours"], 6.0),
        "two nodes for three hours: {row}"
    );
    assert!(close(&row["acceleratorHours"], 6.0), "{row}");
    assert!(close(&row["busyAcceleratorHours"], 1.0), "{row}");
    assert!(close(&row["idleAcceleratorHours"], 5.0), "{row}");
    assert_eq!(row["cluster"], "uc");
    let Ok(Choice::Accelerator(l4)) = accelerators::parse("l4") else {
        panic!("l4 is in the catalogue")
    };
    let price = env
        .app
        .state
        .prices
        .per_node_in(&l4, Provisioning::OnDemand)
        .expect("an L4 price")
        .0;
    assert!(price > 0.0);
    let cost = row["costUsd"].as_f64().expect("cost");
    assert!((cost - 6.0 * price).abs() < 0.01, "{cost} vs 6 x {price}");
    assert_eq!(u["gaps"], json!([]), "{u}");

    // Every grouping sums to the same accelerator hours.
    for g in ["cluster", "accelerator", "provisioning", "member", "day"] {
        let by = usage(&env, &format!("groupBy={g}")).await;
        assert!(close(&by["total"]["acceleratorHours"], 6.0), "{g}: {by}");
    }
    let by = usage(&env, "groupBy=accelerator").await;
    let gpu = by["rows"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["accelerator"] == "gpu-l4"))
        .expect("an L4 row");
    assert!(close(&gpu["busyAcceleratorHours"], 1.0), "{by}");
    let by = usage(&env, "groupBy=member").await;
    assert!(
        by["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .any(|r| r["member"] == OWNER),
        "the pool is booked to who added it: {by}"
    );

    // A range inside the samples counts only its part, exactly: the last hour (both GPUs'
    // hours, one busy the whole hour) and the hour before (none busy).
    let end = u["endTime"].as_str().expect("endTime").to_owned();
    let end_t = chrono::DateTime::parse_from_rfc3339(&end).expect("rfc3339");
    let start = (end_t - chrono::Duration::hours(1)).to_rfc3339();
    let last_hour = pool_usage_between(&env, &start, &end).await;
    let row = pool_row(&last_hour, &pool);
    assert!(close(&row["nodeHours"], 2.0), "{row}");
    assert!(close(&row["busyAcceleratorHours"], 1.0), "{row}");
    let before = (end_t - chrono::Duration::hours(2)).to_rfc3339();
    let hour_before = pool_usage_between(&env, &before, &start).await;
    let row = pool_row(&hour_before, &pool);
    assert!(close(&row["busyAcceleratorHours"], 0.0), "{row}");
    assert!(close(&row["idleAcceleratorHours"], 2.0), "{row}");

    // CSV for spreadsheets.
    let csv = env
        .app
        .request_as(
            OWNER,
            reqwest::Method::GET,
            &format!("{USAGE}?groupBy=pool"),
        )
        .header("accept", "text/csv")
        .send()
        .await
        .expect("csv");
    assert_eq!(csv.status(), StatusCode::OK);
    assert_content_type(csv.headers(), "text/csv");
    let text = csv.text().await.expect("body");
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .expect("header")
            .starts_with("cluster,pool,accelerator")
    );
    assert!(
        lines.any(|l| l.starts_with(&format!("uc,{pool},,,,,6,6,1,5,"))),
        "{text}"
    );
}

#[tokio::test]
async fn the_console_draws_usage_per_day_without_script() {
    let env = env().await;
    let pool = l4_cluster(&env, "uf").await;
    let c = usage_collector(&env);
    round(&c).await;
    run_gpu_pod(&env, "uf", &pool, "train").await;
    later(&env, &c, HOUR).await;
    let page = env
        .app
        .request_as(OWNER, reqwest::Method::GET, "/console/teams/ml-team/usage")
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.expect("html");
    let doc = scraper::Html::parse_document(&html);
    let sel = |s: &str| scraper::Selector::parse(s).expect("selector");
    assert!(
        doc.select(&sel("svg[data-testid=usage-chart]"))
            .next()
            .is_some()
    );
    assert!(
        doc.select(&sel("g[data-testid=usage-bar] rect")).count() >= 2,
        "{html}"
    );
    // Drawn on the server: the busy bar has its height in the HTML itself.
    let drawn = doc
        .select(&sel("g[data-testid=usage-bar] rect"))
        .filter_map(|r| r.value().attr("height")?.parse::<f64>().ok())
        .any(|h| h > 0.0);
    assert!(drawn, "{html}");
    let rows: Vec<String> = doc
        .select(&sel("tr[data-testid=usage-row]"))
        .map(|r| r.text().collect::<String>())
        .collect();
    assert!(rows.iter().any(|r| r.contains(&pool)), "{rows:?}");
    let outsider = env
        .app
        .request_as(
            "mallory@example.com",
            reqwest::Method::GET,
            "/console/teams/ml-team/usage",
        )
        .send()
        .await
        .expect("page");
    assert_eq!(outsider.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_budget_counts_measured_spend_and_tells_each_threshold_once() {
    let (env, pool, c) = sampled_hour("ug").await;
    let spent = usage(&env, "groupBy=pool").await;
    let hour_cost = pool_row(&spent, &pool)["costUsd"].as_f64().expect("cost");
    assert!(hour_cost > 0.0, "{spent}");
    // A budget of four such hours: the first hour is 25%, the second 50%, the fourth 100%.
    let budget = (hour_cost * 4.0 * 100.0).round() / 100.0;
    let p = env
        .app
        .patch(
            OWNER,
            "/v1/teams/ml-team/policy",
            json!({"monthlyBudgetUsd": budget}),
        )
        .await;
    assert_eq!(p.status, StatusCode::OK, "{}", p.body);
    let eval = env
        .app
        .get(OWNER, "/v1/teams/ml-team/policy:evaluate")
        .await;
    let mtd = eval.body["usage"]["monthToDateUsd"]
        .as_f64()
        .expect("monthToDateUsd");
    assert!(
        (mtd - hour_cost).abs() < 0.01,
        "measured, not estimated: {}",
        eval.body
    );
    let forecast = eval.body["usage"]["monthSpendUsd"]
        .as_f64()
        .expect("forecast");
    assert!(
        forecast > mtd,
        "the forecast adds the rest of the month: {}",
        eval.body
    );

    assert_eq!(budget_events(&env).await, Vec::<i64>::new());
    later(&env, &c, HOUR).await;
    assert_eq!(budget_events(&env).await, vec![50]);
    later(&env, &c, 2.0 * HOUR).await;
    assert_eq!(budget_events(&env).await, vec![50, 80, 100]);
    later(&env, &c, HOUR).await;
    assert_eq!(
        budget_events(&env).await,
        vec![50, 80, 100],
        "each threshold once a month"
    );
}

#[tokio::test]
async fn busy_spot_nodes_that_vanish_are_reported_reclaimed() {
    let env = env().await;
    env.up_ok("uh", json!({"accelerator": "cpu"})).await;
    let add = env
        .add_pool(
            "uh",
            json!({"accelerator": "l4", "minNodes": 2, "spot": true}),
        )
        .await;
    assert_eq!(env.run_out(&add).await["metadata"]["state"], "SUCCEEDED");
    let pool = pool_of(&add);
    run_gpu_pod(&env, "uh", &pool, "train").await;
    let c = usage_collector(&env);
    round(&c).await;
    later(&env, &c, 60.0).await;
    let r = env
        .app
        .http
        .post(format!(
            "{}/sim/v1/kube/{}/pools/{pool}:reclaim",
            env.sim.url(),
            crate::support::kube_key("uh")
        ))
        .send()
        .await
        .expect("reclaim");
    assert!(r.status().is_success(), "{}", r.status());
    later(&env, &c, 60.0).await;
    let events = team_events(&env, "SPOT_RECLAIMED").await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(
        events[0]["target"]
            .as_str()
            .unwrap_or("")
            .ends_with(&format!("/nodePools/{pool}")),
        "{events:?}"
    );
    assert_eq!(events[0]["details"]["busyAccelerators"], 1, "{events:?}");
    assert_eq!(
        events[0]["details"]["nodes"].as_array().map(Vec::len),
        Some(1)
    );
}

/// The thresholds of the team's BUDGET_THRESHOLD events, sorted.
async fn budget_events(env: &Env) -> Vec<i64> {
    let mut t: Vec<i64> = team_events(env, "BUDGET_THRESHOLD")
        .await
        .iter()
        .map(|e| {
            e["details"]["thresholdPercent"]
                .as_i64()
                .expect("threshold")
        })
        .collect();
    t.sort();
    t
}

/// The team's audit events of type `kind`.
async fn team_events(env: &Env, kind: &str) -> Vec<Value> {
    let path = format!("/v1/teams/ml-team/events?filter=type%3D%22{kind}%22");
    let r = env.app.get(OWNER, &path).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["events"].as_array().expect("events").clone()
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

#[tokio::test]
async fn a_second_collector_or_a_restart_never_counts_time_twice() {
    let (env, pool, a) = sampled_hour("ud").await;
    // Another replica's collector finds the task held: it samples nothing.
    let b = usage_collector(&env);
    let idle = b.round().await.expect("round");
    assert_eq!(idle.round, None, "{idle:?}");
    // The first process stops (its lease given up); the second takes over an hour later:
    // it does not know what ran in between, so that hour is a gap, not usage.
    kineticd::store::task_leases::release(&env.app.db, kineticd::ops::usage::TASK, &holder(&a))
        .await
        .expect("release");
    let r = later(&env, &b, HOUR).await;
    assert_eq!(r.sampled, 1);
    later(&env, &b, HOUR).await;
    let (u, row) = by_pool(&env, &pool).await;
    assert!(
        close(&row["nodeHours"], 4.0),
        "two nodes for the first and the last hour only: {u}"
    );
    let gaps = u["gaps"].as_array().expect("gaps");
    assert_eq!(gaps.len(), 1, "{u}");
    assert_eq!(gaps[0]["cluster"], "ud");
    assert!(gaps[0]["endTime"].is_string(), "{u}");
}

/// The holder name of `c` (read back from the lease it holds).
fn holder(c: &Collector) -> String {
    c.holder().to_owned()
}

#[tokio::test]
async fn an_unreadable_cluster_is_a_gap_not_zero() {
    let (env, pool, c) = sampled_hour("ue").await;
    // The Kubernetes API refuses (403, not retried) for the next sample.
    env.arm("kube", "kube.list", "HTTP_403", 1).await;
    let r = later(&env, &c, HOUR).await;
    assert_eq!(r.unreachable, 1, "{r:?}");
    let during = usage(&env, "groupBy=pool").await;
    let gap = &during["gaps"][0];
    assert_eq!(gap["cluster"], "ue", "{during}");
    assert!(gap.get("endTime").is_none(), "still open: {during}");
    assert!(
        gap["reason"].as_str().unwrap_or("").contains("Kubernetes"),
        "{during}"
    );
    later(&env, &c, HOUR).await;
    later(&env, &c, HOUR).await;
    let (u, row) = by_pool(&env, &pool).await;
    assert!(
        close(&row["nodeHours"], 4.0),
        "the two unknown hours are not counted: {u}"
    );
    assert!(u["gaps"][0]["endTime"].is_string(), "closed: {u}");
}

#[tokio::test]
async fn bad_usage_questions_are_refused_with_the_parameter() {
    let env = env().await;
    for (query, field) in [
        ("groupBy=team", "groupBy"),
        (
            "startTime=2026-02-01T00:00:00Z&endTime=2026-01-01T00:00:00Z",
            "endTime",
        ),
        (
            "startTime=2024-01-01T00:00:00Z&endTime=2026-01-01T00:00:00Z",
            "endTime",
        ),
        ("startTime=yesterday", "startTime"),
    ] {
        let r = env.app.get(OWNER, &format!("{USAGE}?{query}")).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{query}: {}", r.body);
        let d = &r.body["error"]["details"][0];
        assert_eq!(d["reason"], "INVALID_USAGE_QUERY", "{query}");
        assert_eq!(d["metadata"]["field"], field, "{query}");
    }
    let outsider = env.app.get("mallory@example.com", USAGE).await;
    assert_eq!(outsider.status, StatusCode::NOT_FOUND, "{}", outsider.body);
}
