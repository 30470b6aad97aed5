//! The scenario (`up` of a cpu cluster, a GPU pool at 0 nodes, status, pool remove,
//! `down`) and its cost guard.
//!
//! Invariant: nothing is created before the guard passed on the `up` preview, and no pool
//! before it passed on the pool preview.

use reqwest::Method;
use serde_json::{Value, json};

use crate::run::{Config, Run, Step};

/// Hourly cost of a `cpu` cluster that the service does not estimate (its estimates cover
/// accelerator pools only), us-central1 list prices: the default pool's one e2-standard-4
/// node ($0.134), GKE's cluster management fee ($0.10; the free tier's monthly credit
/// covers one zonal cluster per billing account), the 50 GB boot disk ($0.007) and Cloud
/// NAT for one VM ($0.0014), rounded up.
pub const UNESTIMATED_HOURLY_USD: f64 = 0.25;

/// The service's estimate in a plan: (atMin, atMax) in USD; `None` when it has none (it
/// prices accelerator pools only).
fn plan_cost(plan: &Value, what: &str) -> Step<Option<(f64, f64)>> {
    let c = &plan["estimatedHourlyCost"];
    if c.is_null() {
        return Ok(None);
    }
    if c["currency"] != "USD" {
        return Err(format!(
            "{what}: an estimate in {}, not USD: {c}",
            c["currency"]
        ));
    }
    let num = |f: &str| c[f].as_f64().ok_or(format!("{what}: no {f} in {c}"));
    Ok(Some((num("atMin")?, num("atMax")?)))
}

/// The cost guard: `hourly` (what runs so far) plus the plan's `atMin` (what it adds,
/// as created: the test runs no workload, so no autoscaler adds nodes) must stay within
/// the limit; the new hourly figure. Prints the autoscaling ceiling (`atMax`) too.
fn cost_guard(cfg: &Config, hourly: f64, plan: &Value, what: &str) -> Step<f64> {
    let estimate = plan_cost(plan, what)?;
    let (at_min, at_max) = estimate.unwrap_or_default();
    let expected = hourly + at_min;
    let said = match estimate {
        Some(_) => format!("the service estimates {at_min:.2}-{at_max:.2} USD/h"),
        None => "the service gives no estimate".to_owned(),
    };
    println!(
        "  cost guard, {what}: {said}; with what runs already, {expected:.2} USD/h (at most \
         {:.2} if autoscaling filled it); limit {:.2} (KINETIC_E2E_MAX_HOURLY_USD)",
        hourly + at_max,
        cfg.max_hourly_usd
    );
    if expected > cfg.max_hourly_usd {
        return Err(format!(
            "cost guard: {what} would run at {expected:.2} USD/h, above KINETIC_E2E_MAX_HOURLY_USD={:.2}; refused",
            cfg.max_hourly_usd
        ));
    }
    Ok(expected)
}

/// How far the scenario goes (the gcloud rehearsal stops after `up`).
#[derive(PartialEq, PartialOrd)]
pub enum Until {
    Up,
    Down,
}

/// up (cpu), a GPU pool at 0 nodes, status, pool remove, down.
pub async fn scenario(run: &Run, until: Until) -> Step<()> {
    let cfg = &run.cfg;
    let c = run.cluster_name();
    println!(
        "e2e: cluster {c}, team {}, serve log {}",
        run.team, run.log_path
    );
    run.expect(
        Method::POST,
        "teams",
        Some(json!({"teamId": run.team, "displayName": "kineticd e2e", "projects": [cfg.project]})),
        201,
    )
    .await?;

    // The accelerator resolves (and has a price) before anything is created.
    let acc = run
        .expect(
            Method::GET,
            &format!("accelerators/{}", cfg.accelerator),
            None,
            200,
        )
        .await?;
    let acc_name = acc["name"]
        .as_str()
        .ok_or(format!("no name in {acc}"))?
        .to_owned();
    println!(
        "  pool accelerator {acc_name}: {} USD per node-hour on demand",
        acc["prices"]["onDemandPerNodeHour"]
    );

    // Cost guard on the preview: nothing exists yet, and nothing is created if it refuses.
    let up_body = json!({"accelerator": "cpu", "forceDestroy": true});
    let plan = run.preview(Method::PUT, &c, &up_body).await?;
    let creates_cluster = plan["actions"].as_array().is_some_and(|a| {
        a.iter()
            .any(|x| x["type"] == "container.cluster" && x["action"] == "CREATE")
    });
    if !creates_cluster {
        return Err(format!("the up preview creates no cluster: {plan}"));
    }
    let hourly = cost_guard(cfg, UNESTIMATED_HOURLY_USD, &plan, "up (cpu)")?;

    let op = run.expect(Method::PUT, &c, Some(up_body), 202).await?;
    run.wait(&op, "up").await?;
    let cluster = run.expect(Method::GET, &c, None, 200).await?;
    if cluster["state"] != "RUNNING" {
        return Err(format!(
            "after up the cluster is {}: {cluster}",
            cluster["state"]
        ));
    }
    // `up` saved a profile named after the cluster for its caller, and activated it.
    let profile = run
        .expect(Method::GET, &format!("profiles/{}", run.cluster), None, 200)
        .await?;
    if profile["cluster"] != c.as_str() || profile["active"] != true {
        return Err(format!("the profile up saved: {profile}"));
    }
    if until == Until::Up {
        return Ok(());
    }

    let pool_body = json!({"accelerator": acc_name, "minNodes": 0});
    let pools = format!("{c}/nodePools");
    let plan = run.preview(Method::POST, &pools, &pool_body).await?;
    cost_guard(cfg, hourly, &plan, &format!("a {acc_name} pool at 0 nodes"))?;
    let op = run
        .expect(Method::POST, &pools, Some(pool_body), 202)
        .await?;
    let target = op["metadata"]["target"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let pool = target
        .strip_prefix(&format!("{c}/nodePools/"))
        .ok_or(format!("pool add's target {target:?} is not a pool of {c}"))?
        .to_owned();
    run.wait(&op, &format!("pool add {pool}")).await?;

    let status = run
        .expect(Method::GET, &format!("{c}/status"), None, 200)
        .await?;
    check_status(&status, &pool)?;

    let op = run
        .expect(Method::DELETE, &format!("{c}/nodePools/{pool}"), None, 202)
        .await?;
    run.wait(&op, &format!("pool remove {pool}")).await?;
    let pools = run
        .expect(Method::GET, &format!("{c}/nodePools"), None, 200)
        .await?;
    if pools["nodePools"]
        .as_array()
        .is_some_and(|p| p.iter().any(|p| p["poolId"] == pool.as_str()))
    {
        return Err(format!(
            "pool {pool} is still listed after its removal: {pools}"
        ));
    }

    let op = run.expect(Method::DELETE, &c, None, 202).await?;
    run.wait(&op, "down").await?;
    *run.down.lock().expect("down flag") = true;
    let cluster = run.expect(Method::GET, &c, None, 200).await?;
    if cluster["state"] != "DELETED" {
        return Err(format!("after down the cluster is {}", cluster["state"]));
    }
    Ok(())
}

/// The live status after the pool add: GKE has the cluster RUNNING and the pool, which
/// has no nodes; nothing recorded is missing.
fn check_status(status: &Value, pool: &str) -> Step<()> {
    let gke = &status["cluster"]["gke"];
    println!(
        "  status: GKE {} {}, kubernetes reachable {}, {} pools, drift {}",
        gke["status"],
        gke["currentMasterVersion"],
        status["kubernetes"]["reachable"],
        status["nodePools"].as_array().map_or(0, Vec::len),
        status["drift"]
    );
    if gke["exists"] != true || gke["status"] != "RUNNING" {
        return Err(format!("GKE's cluster is not RUNNING: {gke}"));
    }
    let p = status["nodePools"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["poolId"] == pool))
        .ok_or(format!("pool {pool} is not in the status: {status}"))?;
    if p["recorded"] != true || p["gkeStatus"] != "RUNNING" {
        return Err(format!("pool {pool} in the status: {p}"));
    }
    if p["nodes"]["total"].as_u64().is_some_and(|n| n > 0) {
        return Err(format!("pool {pool} has nodes, not 0: {p}"));
    }
    let missing: Vec<&Value> = status["drift"]
        .as_array()
        .map(|d| d.iter().filter(|d| d["problem"] == "MISSING").collect())
        .unwrap_or_default();
    if !missing.is_empty() {
        return Err(format!("recorded but missing in the cloud: {missing:?}"));
    }
    Ok(())
}
