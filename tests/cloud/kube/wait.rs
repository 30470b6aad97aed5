//! Wait conditions on the simulator clock: Deployment Available, DaemonSet scheduled,
//! CRD Established; deadlines and cancellation.
//!
//! The clock is explicit: a condition changes only when the test advances it, so "not
//! yet" is observed (the wait's first report) instead of timed, and deadlines are long
//! enough that a loaded machine answering slowly changes nothing.

use std::time::Duration;

use kineticd::cloud::gcp::RetryClass;
use kineticd::cloud::kube::{KubeCluster, KubeError, WaitFor, WaitOptions};
use kineticd::sim::kube::manifests::NVIDIA_DRIVER_YAML;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{add_pools, explicit_sim_cluster, gpu_pool};

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

/// Options for a wait that must not end by its deadline, whatever the machine's load.
fn patient() -> WaitOptions {
    WaitOptions {
        timeout: Duration::from_secs(120),
        poll: Duration::from_millis(20),
    }
}

/// A wait on `what` running in the background; its progress messages arrive on the
/// returned channel as the wait reports them.
fn spawn_wait(
    cluster: &KubeCluster,
    what: WaitFor,
    opts: WaitOptions,
    cancel: CancellationToken,
) -> (
    tokio::task::JoinHandle<Result<(), KubeError>>,
    mpsc::UnboundedReceiver<String>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let cluster = cluster.clone();
    let task = tokio::spawn(async move {
        cluster
            .wait_for(&what, &opts, &cancel, |m| {
                let _ = tx.send(m);
            })
            .await
    });
    (task, rx)
}

/// The next progress message of a wait (it must come: the wait's deadline is generous).
async fn next_message(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(120), rx.recv())
        .await
        .expect("a progress message within 120 s")
        .expect("the wait ended without reporting")
}

/// What a wait on `what` observes first; the wait is then cancelled. (Its state now,
/// without a deadline that could expire before the API server answers.)
async fn first_observation(cluster: &KubeCluster, what: &WaitFor) -> String {
    let cancel = CancellationToken::new();
    let (task, mut rx) = spawn_wait(cluster, what.clone(), patient(), cancel.clone());
    let first = next_message(&mut rx).await;
    cancel.cancel();
    let _ = task.await.expect("join");
    first
}

#[tokio::test]
async fn deployment_becomes_available_when_the_clock_advances() {
    let (sim, cluster) = explicit_sim_cluster().await;
    cluster.apply_yaml(DEPLOYMENT).await.expect("apply");

    // The clock does not move: the deadline expires, with what was last seen. (One poll
    // per deadline: that poll has the whole deadline to be answered, so a loaded machine
    // answering slowly changes nothing asserted here.)
    let opts = WaitOptions {
        timeout: Duration::from_secs(5),
        poll: Duration::from_secs(5),
    };
    let e = cluster
        .wait_for(&web(), &opts, &CancellationToken::new(), |_| {})
        .await
        .expect_err("deadline");
    assert!(matches!(e, KubeError::Deadline { .. }), "{e}");
    assert_eq!(e.retry(), RetryClass::Retryable);
    assert!(e.to_string().contains("0/1 replicas available"), "{e}");

    // A wait in progress reports once per state change, however often it polls, and
    // ends as soon as the clock makes the Deployment available.
    let (task, mut rx) = spawn_wait(&cluster, web(), patient(), CancellationToken::new());
    let first = next_message(&mut rx).await;
    assert!(
        first.starts_with("deployment default/web available: 0/1 replicas available"),
        "{first}"
    );
    polled(&sim, "/deployments/web", 3).await;
    assert!(!task.is_finished());
    assert!(rx.try_recv().is_err(), "no new state, no new message");
    sim.clock().advance(Duration::from_secs(6));
    task.await.expect("join").expect("available");
    let mut seen = Vec::new();
    while let Ok(m) = rx.try_recv() {
        seen.push(m);
    }
    assert_eq!(
        seen,
        ["deployment default/web available: 1/1 replicas available"],
        "one message per state change"
    );
}

/// Wait (bounded, generous) until the simulator answered `n` GETs of a path ending in
/// `suffix`.
async fn polled(sim: &kineticd::sim::Sim, suffix: &str, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let gets = sim
            .journal()
            .entries()
            .iter()
            .filter(|e| e.http_method == "GET" && e.path.ends_with(suffix))
            .count();
        if gets >= n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{gets} GETs of *{suffix} in 120 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn cancellation_stops_a_wait_promptly() {
    let (_sim, cluster) = explicit_sim_cluster().await;
    cluster.apply_yaml(DEPLOYMENT).await.expect("apply");
    let cancel = CancellationToken::new();
    // Without cancellation this wait would sleep an hour between polls.
    let opts = WaitOptions {
        timeout: Duration::from_secs(7200),
        poll: Duration::from_secs(3600),
    };
    let (task, mut rx) = spawn_wait(&cluster, web(), opts, cancel.clone());
    next_message(&mut rx).await; // polled once, now sleeping
    cancel.cancel();
    let e = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("the cancelled wait ended (not after its hour-long poll interval)")
        .expect("join")
        .expect_err("cancelled");
    assert!(matches!(e, KubeError::Cancelled { .. }), "{e}");
    assert_eq!(e.retry(), RetryClass::Terminal);
}

#[tokio::test]
async fn missing_objects_are_waited_for() {
    let (sim, cluster) = explicit_sim_cluster().await;
    let (task, mut rx) = spawn_wait(&cluster, web(), patient(), CancellationToken::new());
    assert_eq!(
        next_message(&mut rx).await,
        "deployment default/web available: not found yet"
    );
    // The object appears and becomes available: the same wait sees it through.
    cluster.apply_yaml(DEPLOYMENT).await.expect("apply");
    sim.clock().advance(Duration::from_secs(6));
    task.await.expect("join").expect("available");
}

#[tokio::test]
async fn crd_becomes_established() {
    let (sim, cluster) = explicit_sim_cluster().await;
    let crd = kineticd::sim::kube::manifests::LWS_YAML;
    cluster.apply_yaml(crd).await.expect("apply lws");
    let what = WaitFor::CrdEstablished {
        name: "leaderworkersets.leaderworkerset.x-k8s.io".into(),
    };
    let first = first_observation(&cluster, &what).await;
    assert!(first.contains("not established"), "{first}");
    sim.clock().advance(Duration::from_secs(2));
    cluster
        .wait_for(&what, &patient(), &CancellationToken::new(), |_| {})
        .await
        .expect("established");
}

#[tokio::test]
async fn driver_daemonset_is_scheduled_on_gpu_nodes_without_managed_drivers() {
    let (sim, cluster) = explicit_sim_cluster().await;
    let mut managed = gpu_pool("gpu-l4-bbbb", 1, 5);
    managed.labels.insert(
        "cloud.google.com/gke-gpu-driver-version".into(),
        "latest".into(),
    );
    add_pools(&sim, [gpu_pool("gpu-l4-aaaa", 2, 5), managed]);
    cluster.apply_yaml(NVIDIA_DRIVER_YAML).await.expect("apply");
    let what = WaitFor::DaemonSetScheduled {
        namespace: "kube-system".into(),
        name: "nvidia-driver-installer".into(),
    };
    let first = first_observation(&cluster, &what).await;
    assert!(first.contains("0/2 scheduled"), "{first}");
    sim.clock().advance(Duration::from_secs(10));
    let mut messages = Vec::new();
    cluster
        .wait_for(&what, &patient(), &CancellationToken::new(), |m| {
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
