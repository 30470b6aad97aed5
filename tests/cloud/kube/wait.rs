//! Wait conditions on the simulator clock: Deployment Available, DaemonSet scheduled,
//! CRD Established; deadlines and cancellation.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::kube::{KubeError, WaitFor, WaitOptions};
use kineticd::sim::kube::manifests::NVIDIA_DRIVER_YAML;
use tokio_util::sync::CancellationToken;

use super::{explicit_sim_cluster, gpu_pool, pool};

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"#;

fn web() -> WaitFor {
    WaitFor::DeploymentAvailable {
        namespace: "default".into(),
        name: "web".into(),
    }
}

fn quick(timeout_ms: u64) -> WaitOptions {
    WaitOptions {
        timeout: Duration::from_millis(timeout_ms),
        poll: Duration::from_millis(20),
    }
}

#[tokio::test]
async fn deployment_becomes_available_when_the_clock_advances() {
    let (sim, cluster) = explicit_sim_cluster().await;
    cluster.apply_yaml(DEPLOYMENT).await.expect("apply");

    // The clock does not move: the deadline expires, with what was last seen.
    let mut messages = Vec::new();
    let e = cluster
        .wait_for(&web(), &quick(500), &CancellationToken::new(), |m| {
            messages.push(m)
        })
        .await
        .expect_err("deadline");
    assert!(matches!(e, KubeError::Deadline { .. }), "{e}");
    assert_eq!(e.retry(), RetryClass::Retryable);
    assert!(e.to_string().contains("0/1 replicas available"), "{e}");
    assert_eq!(
        messages.len(),
        1,
        "one message per state change: {messages:?}"
    );

    let seen = Arc::new(Mutex::new(Vec::new()));
    let task = {
        let (cluster, seen) = (cluster.clone(), seen.clone());
        tokio::spawn(async move {
            cluster
                .wait_for(&web(), &quick(10_000), &CancellationToken::new(), |m| {
                    seen.lock().unwrap().push(m)
                })
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(60)).await;
    assert!(!task.is_finished());
    sim.clock().advance(Duration::from_secs(6));
    task.await.expect("join").expect("available");
    let seen = seen.lock().unwrap();
    assert_eq!(
        seen.last().map(String::as_str),
        Some("deployment default/web available: 1/1 replicas available"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn cancellation_stops_a_wait_promptly() {
    let (_sim, cluster) = explicit_sim_cluster().await;
    cluster.apply_yaml(DEPLOYMENT).await.expect("apply");
    let cancel = CancellationToken::new();
    let task = {
        let (cluster, cancel) = (cluster.clone(), cancel.clone());
        tokio::spawn(async move {
            let opts = WaitOptions {
                timeout: Duration::from_secs(600),
                poll: Duration::from_secs(30),
            };
            cluster.wait_for(&web(), &opts, &cancel, |_| {}).await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = std::time::Instant::now();
    cancel.cancel();
    let e = task.await.expect("join").expect_err("cancelled");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(matches!(e, KubeError::Cancelled { .. }), "{e}");
    assert_eq!(e.retry(), RetryClass::Terminal);
}

#[tokio::test]
async fn missing_objects_are_waited_for() {
    let (_sim, cluster) = explicit_sim_cluster().await;
    let mut messages = Vec::new();
    let e = cluster
        .wait_for(&web(), &quick(500), &CancellationToken::new(), |m| {
            messages.push(m)
        })
        .await
        .expect_err("deadline");
    assert!(e.to_string().contains("not found yet"), "{e}");
}

#[tokio::test]
async fn crd_becomes_established() {
    let (sim, cluster) = explicit_sim_cluster().await;
    let crd = kineticd::sim::kube::manifests::LWS_YAML;
    cluster.apply_yaml(crd).await.expect("apply lws");
    let what = WaitFor::CrdEstablished {
        name: "leaderworkersets.leaderworkerset.x-k8s.io".into(),
    };
    let e = cluster
        .wait_for(&what, &quick(500), &CancellationToken::new(), |_| {})
        .await
        .expect_err("not yet");
    assert!(e.to_string().contains("not established"), "{e}");
    sim.clock().advance(Duration::from_secs(2));
    cluster
        .wait_for(&what, &quick(1000), &CancellationToken::new(), |_| {})
        .await
        .expect("established");
}

#[tokio::test]
async fn driver_daemonset_is_scheduled_on_gpu_nodes_without_managed_drivers() {
    let (sim, cluster) = explicit_sim_cluster().await;
    {
        let mut w = sim.world();
        w.kube
            .upsert_pool("k1", pool("default-pool", "e2-standard-4", 1, 1));
        w.kube.upsert_pool("k1", gpu_pool("gpu-l4-aaaa", 2, 5));
        let mut managed = gpu_pool("gpu-l4-bbbb", 1, 5);
        managed.labels.insert(
            "cloud.google.com/gke-gpu-driver-version".into(),
            "latest".into(),
        );
        w.kube.upsert_pool("k1", managed);
    }
    cluster.apply_yaml(NVIDIA_DRIVER_YAML).await.expect("apply");
    let what = WaitFor::DaemonSetScheduled {
        namespace: "kube-system".into(),
        name: "nvidia-driver-installer".into(),
    };
    let mut messages = Vec::new();
    let e = cluster
        .wait_for(&what, &quick(500), &CancellationToken::new(), |m| {
            messages.push(m)
        })
        .await
        .expect_err("not yet");
    assert!(e.to_string().contains("0/2 scheduled"), "{e}");
    sim.clock().advance(Duration::from_secs(10));
    let mut messages = Vec::new();
    cluster
        .wait_for(&what, &quick(1000), &CancellationToken::new(), |m| {
            messages.push(m)
        })
        .await
        .expect("scheduled");
    assert!(
        messages
            .last()
            .is_some_and(|m| m.ends_with("2/2 scheduled, 2/2 ready")),
        "{messages:?}"
    );
}
