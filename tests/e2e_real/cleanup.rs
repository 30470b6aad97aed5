//! The cleanup that runs whatever the scenario did: `down` through the API, or, when the
//! service cannot, the GKE cluster deleted with gcloud; what is left is printed.
//!
//! Invariant: the cleanup never panics; it returns (and prints) the commands for what it
//! could not delete.

use std::sync::Arc;

use kineticd::domain::resource_names::ClusterNames;
use reqwest::Method;

use crate::run::{Run, Step};
use crate::scenario::{Until, scenario};

/// `down` through the API, waiting first for any unfinished operation on the cluster.
async fn down_through_the_api(run: &Run) -> Step<String> {
    if !run.alive() {
        return Err(format!(
            "kineticd serve is not running; log: {}",
            run.log_path
        ));
    }
    let c = run.cluster_name();
    for _ in 0..2 {
        let (status, cluster) = run.call(Method::GET, &c, None).await?;
        match (status, cluster["state"].as_str()) {
            (404, _) => return Ok("no cluster was created".into()),
            (200, Some("DELETED")) => return Ok("the cluster is down".into()),
            (200, _) => {}
            _ => return Err(format!("GET {c}: {status} {cluster}")),
        }
        let filter = format!("target=\"{c}\" AND done=false");
        let ops = run
            .expect(
                Method::GET,
                &format!("operations?filter={}", urlencode(&filter)),
                None,
                200,
            )
            .await?;
        for op in ops["operations"].as_array().into_iter().flatten() {
            let what = format!("cleanup: waiting for {}", op["metadata"]["type"]);
            // Its outcome does not matter: down runs next in any case.
            let _ = run.wait(op, &what).await;
        }
        let (status, op) = run.call(Method::DELETE, &c, None).await?;
        if status == 202 {
            run.wait(&op, "cleanup: down").await?;
        } else {
            println!("  cleanup: down answered {status}: {op}");
        }
    }
    let (_, cluster) = run.call(Method::GET, &c, None).await?;
    match cluster["state"].as_str() {
        Some("DELETED") => Ok("the cluster is down".into()),
        other => Err(format!("after down the cluster is {other:?}")),
    }
}

fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// What `up` may have left, as the commands that delete each (the GKE cluster first).
fn leftovers(n: &ClusterNames) -> Vec<String> {
    let p = &n.project;
    vec![
        format!(
            "gcloud container clusters delete {} --zone {} --project {p} --quiet",
            n.cluster, n.zone
        ),
        format!(
            "gcloud compute routers delete {} --region {} --project {p} --quiet",
            n.router, n.region
        ),
        format!(
            "gcloud compute networks delete {} --project {p} --quiet",
            n.network
        ),
        format!(
            "gcloud artifacts repositories delete {} --location {} --project {p} --quiet",
            n.repository, n.repository_location
        ),
        format!(
            "gcloud storage rm --recursive gs://{} gs://{}",
            n.jobs_bucket, n.builds_bucket
        ),
        format!(
            "gcloud iam service-accounts delete {}@{p}.iam.gserviceaccount.com --quiet",
            n.node_sa_id
        ),
        format!(
            "gcloud iam service-accounts delete {}@{p}.iam.gserviceaccount.com --quiet",
            n.build_sa_id
        ),
    ]
}

/// Whatever happened: `down` through the API; if the service cannot, delete the GKE
/// cluster (the one resource that costs by the hour) with gcloud. Prints what is left and
/// returns it (empty: nothing).
pub async fn cleanup(run: &Run) -> Vec<String> {
    if *run.down.lock().expect("down flag") {
        println!("cleanup: nothing to do (the scenario's down succeeded)");
        return Vec::new();
    }
    let err = match down_through_the_api(run).await {
        Ok(what) => {
            println!("cleanup: {what}; nothing left");
            return Vec::new();
        }
        Err(e) => e,
    };
    println!("cleanup: down through the API failed: {err}");
    let mut left = leftovers(&run.names());
    let gcloud = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join("gcloud").is_file());
    if gcloud {
        let n = run.names();
        println!("cleanup: deleting GKE cluster {} with gcloud", n.cluster);
        let out = tokio::process::Command::new("gcloud")
            .args([
                "container",
                "clusters",
                "delete",
                &n.cluster,
                "--zone",
                &n.zone,
            ])
            .args(["--project", &n.project, "--quiet"])
            .envs(run.cfg.gcloud_env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output()
            .await;
        match out {
            Ok(o) if o.status.success() => {
                left.remove(0);
            }
            Ok(o) => println!(
                "cleanup: gcloud failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => println!("cleanup: gcloud did not run: {e}"),
        }
    } else {
        println!("cleanup: gcloud is not installed");
    }
    println!(
        "cleanup: LEFT IN PROJECT {} (delete by hand, in this order):",
        run.cfg.project
    );
    for l in &left {
        println!("  {l}");
    }
    left
}

/// The scenario in a task of its own (a panic there is caught), then the cleanup; the
/// scenario's failure, if any, and what the cleanup left.
pub async fn scenario_then_cleanup(run: Arc<Run>, until: Until) -> (Step<()>, Vec<String>) {
    let task = tokio::spawn({
        let run = run.clone();
        async move { scenario(&run, until).await }
    });
    let outcome = match task.await {
        Ok(r) => r,
        Err(e) => Err(format!("the scenario panicked: {e}")),
    };
    if let Err(e) = &outcome {
        println!("e2e: FAILED: {e}");
    }
    let left = cleanup(&run).await;
    (outcome, left)
}
