//! The real-cloud end-to-end test (issue 15, "Past this machine"): `kineticd serve` in
//! production mode (no `--dev`: Google's endpoints, Application Default Credentials, a
//! fresh PostgreSQL database as every test here gets) runs `up` of a `cpu` cluster, adds
//! a GPU pool at 0 nodes, reads the live status, removes the pool and runs `down`, all
//! through the REST API. Ignored by default; with `KINETIC_E2E_PROJECT` and ADC set,
//! `cargo test --test e2e_real -- --ignored --nocapture` runs it (README, "Real-cloud
//! end-to-end test", says what it creates and costs). With `KINETIC_E2E_IMPERSONATE`
//! naming kineticd's own service account, `serve` calls Google as that account, which
//! holds only the least-privilege team-project grants (docs/deploying.md, "The
//! real-cloud test as kineticd's service account"); the test checks whose token it is
//! before anything is created.
//!
//! Invariants: nothing is created before the cost guard has passed (the `up` preview's
//! estimate plus the cost the service does not estimate, against
//! `KINETIC_E2E_MAX_HOURLY_USD`); and whatever happens after (a failed step, a panic, a
//! dead service), the cleanup runs: `down` through the API, or, if the service cannot,
//! `gcloud container clusters delete`, printing anything it left.
//!
//! The same scenario and cleanup also run here, unignored, against `kineticd sim` (a
//! rehearsal of every request, field and state the real run relies on): the whole
//! scenario, the guard refusing before anything exists, and the gcloud fallback after the
//! service died.

#[path = "e2e_real/cleanup.rs"]
mod cleanup;
#[path = "common/mod.rs"]
mod common;
#[path = "e2e_real/run.rs"]
mod run;
#[path = "e2e_real/scenario.rs"]
mod scenario;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use cleanup::{cleanup, scenario_then_cleanup};
use run::{Config, DEFAULT_MAX_HOURLY_USD, Run};
use scenario::{UNESTIMATED_HOURLY_USD, Until, scenario};
use serve_process::{SimProcess, journal::sim_journal};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "creates real GKE resources: set KINETIC_E2E_PROJECT and ADC, run with --ignored"]
async fn real_cloud_up_pool_status_remove_down() {
    let cfg = match Config::from_env() {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED: {why} (README, \"Real-cloud end-to-end test\")");
            return;
        }
    };
    kineticd::auth::install_tls_provider();
    // Impersonating, serve's credentials are gcloud's (checked below), not this process's.
    if cfg.impersonated().is_none()
        && let Err(e) = gcp_auth::provider().await
    {
        eprintln!(
            "SKIPPED: no Application Default Credentials ({e}); run `gcloud auth application-default login`"
        );
        return;
    }
    // Before anything exists: with KINETIC_E2E_IMPERSONATE, serve acts as that service
    // account and no other (docs/deploying.md, "The real-cloud test as kineticd's
    // service account").
    let http = kineticd::app::http_client().expect("http client");
    if let Err(why) = run::check_identity(&cfg, &http).await {
        panic!("{why}");
    }
    let run = Arc::new(Run::start(cfg, "e2e-real").await);
    let (outcome, left) = scenario_then_cleanup(run, Until::Down).await;
    assert!(left.is_empty(), "the cleanup left resources (listed above)");
    outcome.expect("the real-cloud scenario");
}

/// The rehearsal's configuration: `serve` pointed at `sim`, gcloud too (in `gcloud_dir`).
fn rehearsal(sim: &SimProcess, max_hourly_usd: f64, gcloud_dir: &Path) -> Config {
    Config {
        project: "e2e-rehearsal".into(),
        zone: "us-central1-a".into(),
        accelerator: "nvidia-tesla-t4".into(),
        max_hourly_usd,
        // As in the real run: the caller is a service admin (its team claims a project
        // it does not own on Google's side).
        serve_env: sim
            .exports()
            .into_iter()
            .chain([("KINETIC_ADMINS".to_owned(), run::CALLER.to_owned())])
            .collect(),
        gcloud_env: vec![
            ("CLOUDSDK_CONFIG".into(), gcloud_dir.display().to_string()),
            ("CLOUDSDK_CORE_DISABLE_PROMPTS".into(), "1".into()),
            (
                "CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK".into(),
                "true".into(),
            ),
            (
                "CLOUDSDK_CORE_DISABLE_USAGE_REPORTING".into(),
                "true".into(),
            ),
        ],
        op_deadline: Duration::from_secs(300),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rehearsal_the_whole_scenario_against_the_simulator() {
    let sim = SimProcess::start(&[]);
    let dir = tempdir("e2e-gcloud");
    let cfg = rehearsal(&sim, DEFAULT_MAX_HOURLY_USD, &dir);
    let run = Arc::new(Run::start(cfg, "e2e-rehearsal").await);
    let (outcome, left) = scenario_then_cleanup(run.clone(), Until::Down).await;
    outcome.expect("the scenario against the simulator");
    assert!(left.is_empty(), "{left:?}");
    // The pool and then the cluster were deleted in the simulated cloud.
    let n = run.names();
    assert!(deleted(&run, &sim, "/nodePools/gpu-t4-").await);
    assert!(deleted(&run, &sim, &format!("/clusters/{}", n.cluster)).await);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rehearsal_the_cost_guard_refuses_before_anything_is_created() {
    let sim = SimProcess::start(&[]);
    let dir = tempdir("e2e-gcloud");
    // Below what a cpu cluster costs unestimated: refused at the preview.
    let cfg = rehearsal(&sim, UNESTIMATED_HOURLY_USD / 2.0, &dir);
    let run = Arc::new(Run::start(cfg, "e2e-guard").await);
    let (outcome, left) = scenario_then_cleanup(run.clone(), Until::Down).await;
    let err = outcome.expect_err("refused");
    assert!(
        err.starts_with("cost guard: up (cpu) would run at 0.25 USD/h"),
        "{err}"
    );
    assert!(left.is_empty(), "{left:?}");
    // Nothing was created anywhere: the simulated cloud served reads only.
    for method in ["POST", "PUT", "PATCH", "DELETE"] {
        let seen = served(&run, &sim, method).await;
        assert!(seen.is_empty(), "{method}: {seen:#?}");
    }
    let (status, _) = run
        .call(Method::GET, &run.cluster_name(), None)
        .await
        .expect("GET the cluster");
    assert_eq!(status, 404);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rehearsal_the_cleanup_deletes_the_cluster_with_gcloud_when_the_service_is_gone() {
    if !common::shell::gcloud_installed() {
        return;
    }
    let sim = SimProcess::start(&[]);
    let dir = tempdir("e2e-gcloud");
    let cfg = rehearsal(&sim, DEFAULT_MAX_HOURLY_USD, &dir);
    gcloud_config(&sim, &dir, &cfg.project);
    let run = Arc::new(Run::start(cfg, "e2e-gcloud").await);
    scenario(&run, Until::Up)
        .await
        .expect("up against the simulator");
    run.server.lock().expect("server").kill();
    let left = cleanup(&run).await;
    // Only the GKE cluster costs by the hour: it is gone; the rest is listed.
    assert!(
        !left.iter().any(|l| l.contains("container clusters delete")),
        "{left:#?}"
    );
    assert!(
        left.iter().any(|l| l.contains("networks delete")),
        "{left:#?}"
    );
    let n = run.names();
    assert!(deleted(&run, &sim, &format!("/clusters/{}", n.cluster)).await);
    let _ = std::fs::remove_dir_all(dir);
}

/// Requests of HTTP `method` the simulator served.
/// Requests with HTTP method `method` the simulator served, reads sent as POST by
/// Google's design (`:getIamPolicy`, `:testIamPermissions`) left out.
async fn served(run: &Run, sim: &SimProcess, method: &str) -> Vec<Value> {
    let mut seen = sim_journal(&run.http, &sim.url(), &[("httpMethod", method)]).await;
    seen.retain(|e| {
        !e["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(":getIamPolicy") || p.ends_with(":testIamPermissions"))
    });
    seen
}

/// Whether some `DELETE` the simulator served has a path containing `part`.
async fn deleted(run: &Run, sim: &SimProcess, part: &str) -> bool {
    let deletes = served(run, sim, "DELETE").await;
    let found = deletes
        .iter()
        .any(|d| d["path"].as_str().is_some_and(|p| p.contains(part)));
    if !found {
        println!("no DELETE of {part}: {deletes:#?}");
    }
    found
}

/// A new, empty directory under the temporary folder.
fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kineticd-{name}-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// gcloud's configuration in `dir`: `project` and every `gcloud config set` line the
/// simulator printed.
fn gcloud_config(sim: &SimProcess, dir: &Path, project: &str) {
    let mut sets = vec![vec!["core/project".to_owned(), project.to_owned()]];
    sets.extend(sim.printed.iter().filter_map(|l| {
        let kv = l.strip_prefix("#   gcloud config set ")?;
        Some(kv.split_whitespace().map(str::to_owned).collect())
    }));
    for kv in sets {
        let ok = std::process::Command::new("gcloud")
            .args(["config", "set"])
            .args(&kv)
            .env("CLOUDSDK_CONFIG", dir)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("gcloud config set")
            .status
            .success();
        assert!(ok, "gcloud config set {kv:?}");
    }
}
