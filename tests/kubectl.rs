//! The real `kubectl` against a simulated GKE cluster: a cluster with a CPU default pool
//! and an L4 GPU pool at zero nodes is created through the simulator's GKE API, a
//! kubeconfig points at its `/kube/{key}` endpoint, and a GPU Deployment lives its life
//! through kubectl: `apply -f` (its YAML asks for `nvidia.com/gpu: 1`, a number), the pod
//! Pending with kube-scheduler's message and the autoscaler's scale-up in `describe`, the
//! explicit clock advanced so the autoscaler's node arrives, `get nodes -o wide` and `get
//! pods -o wide` showing the pod Running on the GPU node, `get -w` seeing the rollout of
//! an `apply --server-side` change, `delete`, strict field validation refusing a typo,
//! `explain`, and the OpenAPI v2 document read raw. Assertions are on kubectl's own
//! output. [`rbac`] runs kubectl as team members under the simulator's RBAC.
//!
//! Skipped with a message where kubectl is not installed, unless
//! KINETIC_REQUIRE_KUBECTL=1 (set by .ci/run).

#[path = "common/mod.rs"]
mod common;
#[path = "kubectl/rbac.rs"]
mod rbac;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kineticd::cloud::gcp::types::container::Cluster;
use kineticd::sim::clock::ClockMode;
use serde_json::json;

use common::gke::{autoscaled_pool, default_pool, gke_done};
use common::kubectl::{Kubectl, kubectl_available};
use common::{sim_admin, tls_front};

const P: &str = "kubectl-proj";
const Z: &str = "us-central1-a";

const GPU_DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: gpu-web
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: gpu-web}
  template:
    metadata:
      labels: {app: gpu-web}
    spec:
      containers:
      - name: cuda
        image: nvidia/cuda:12.4.1-base-ubuntu22.04
        resources:
          limits:
            nvidia.com/gpu: 1
"#;

/// What the GPU Deployment tests read and wait for through kubectl.
trait Watching {
    fn gpu_web(&self, jsonpath: &str, flags: &[&str]) -> String;
    fn until(&self, args: &[&str], want: &str) -> String;
}

impl Watching for Kubectl {
    /// `kubectl get deployment gpu-web` with `flags`, its `jsonpath` (a template) printed.
    fn gpu_web(&self, jsonpath: &str, flags: &[&str]) -> String {
        let output = format!("jsonpath={jsonpath}");
        let mut args = vec!["get", "deployment", "gpu-web"];
        args.extend(flags);
        args.extend(["-o", output.as_str()]);
        self.ok(&args, None)
    }

    /// Run `args` until stdout contains `want` (the simulator settles at once; the
    /// deadline only guards against a hang).
    fn until(&self, args: &[&str], want: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.ok(args, None);
            if out.contains(want) {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "kubectl {args:?} never showed {want:?}:\n{out}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A line of `text` containing every one of `parts`.
fn line_with<'a>(text: &'a str, parts: &[&str]) -> &'a str {
    text.lines()
        .find(|l| parts.iter().all(|p| l.contains(p)))
        .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{text}"))
}

/// Asserts that the header line of a `kubectl get` table (the line with `NAME`) has
/// exactly the columns `columns` (separated by white space), in order.
#[track_caller]
fn assert_header(table: &str, columns: &str) {
    let header: Vec<&str> = line_with(table, &["NAME"]).split_whitespace().collect();
    let columns: Vec<&str> = columns.split_whitespace().collect();
    assert_eq!(header, columns, "{table}");
}

async fn advance(sim: &kineticd::sim::Sim, seconds: u64) {
    let body = json!({"seconds": seconds});
    sim_admin(
        sim,
        reqwest::Method::POST,
        "/sim/v1/clock:advance",
        Some(body),
    )
    .await;
}

/// A RUNNING cluster (CPU default pool, L4 pool at 0 nodes) and its Kubernetes endpoint.
async fn gpu_cluster() -> (kineticd::sim::Sim, String) {
    let cfg = kineticd::sim::SimConfig {
        clock: ClockMode::Explicit,
        ..Default::default()
    };
    let (sim, gcp) = common::start_sim_with(cfg).await;
    let cluster = Cluster {
        name: "kc".into(),
        node_pools: vec![
            default_pool(),
            autoscaled_pool("l4", "g2-standard-4", "nvidia-l4", 1, 0),
        ],
        ..Default::default()
    };
    let op = gcp
        .container
        .create_cluster(P, Z, &cluster)
        .await
        .expect("create cluster");
    advance(&sim, 3600).await;
    gke_done(&gcp, &op, Duration::from_secs(60), "cluster created").await;
    let c = gcp
        .container
        .get_cluster(P, Z, "kc")
        .await
        .expect("get cluster");
    assert_eq!(c.status.as_deref(), Some("RUNNING"));
    (sim, c.endpoint.expect("endpoint"))
}

/// `kubectl get pods -w` in the background: its stdout lines arrive on the channel.
fn watch_pods(k: &Kubectl) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = k
        .command(&["get", "pods", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gpu_deployment_lives_its_life_through_kubectl() {
    if !kubectl_available() {
        return;
    }
    let (sim, endpoint) = gpu_cluster().await;
    let k = Kubectl::new(&endpoint);

    // The default pool's node, the GPU pool empty.
    let nodes = k.ok(&["get", "nodes"], None);
    assert!(nodes.starts_with("NAME"), "{nodes}");
    for col in ["STATUS", "ROLES", "AGE", "VERSION"] {
        assert!(line_with(&nodes, &["NAME"]).contains(col), "{nodes}");
    }
    assert_eq!(nodes.lines().count(), 2, "one node:\n{nodes}");
    line_with(&nodes, &["gke-default-pool-", "Ready", "v1.33.5-gke.1000"]);

    // apply -f: the number 1 is read as one GPU (canonical "1"), so the pod waits for a
    // GPU node instead of landing on the CPU node.
    let applied = k.ok(&["apply", "-f", "-"], Some(GPU_DEPLOYMENT));
    assert_eq!(applied.trim(), "deployment.apps/gpu-web created");
    let limits = k.gpu_web("{.spec.template.spec.containers[0].resources.limits}", &[]);
    assert_eq!(limits, r#"{"nvidia.com/gpu":"1"}"#);
    let pods = k.until(&["get", "pods"], "gpu-web-");
    assert_header(&pods, "NAME READY STATUS RESTARTS AGE");
    let row: Vec<&str> = line_with(&pods, &["gpu-web-"]).split_whitespace().collect();
    assert_eq!(&row[1..4], ["0/1", "Pending", "0"], "{pods}");
    let pod = row[0].to_owned();

    // describe: kube-scheduler's reason, the autoscaler's scale-up, the admitted toleration.
    let described = k.ok(&["describe", "pod", &pod], None);
    line_with(&described, &["PodScheduled", "False"]);
    line_with(
        &described,
        &[
            "Warning",
            "FailedScheduling",
            "default-scheduler",
            "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.",
        ],
    );
    line_with(
        &described,
        &[
            "Normal",
            "TriggeredScaleUp",
            "cluster-autoscaler",
            "pod triggered scale-up:",
            "gke-l4-grp 0->1 (max: 10)",
        ],
    );
    line_with(&described, &["nvidia.com/gpu:NoSchedule op=Exists"]);
    let deployment = k.ok(&["describe", "deployment", "gpu-web"], None);
    line_with(
        &deployment,
        &["ScalingReplicaSet", "Scaled up replica set gpu-web-"],
    );

    // The autoscaler's node arrives after its delay on the simulator clock.
    advance(&sim, 61).await;
    let wide = k.until(&["get", "nodes", "-o", "wide"], "gke-l4-");
    assert_header(
        &wide,
        "NAME STATUS ROLES AGE VERSION INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION \
         CONTAINER-RUNTIME",
    );
    let gpu_node = line_with(
        &wide,
        &[
            "gke-l4-",
            "Ready",
            "Container-Optimized OS from Google",
            "containerd://",
        ],
    )
    .split_whitespace()
    .next()
    .unwrap()
    .to_owned();
    let pods = k.until(&["get", "pods", "-o", "wide"], "Running");
    assert_header(
        &pods,
        "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES",
    );
    line_with(&pods, &[&pod, "1/1", "Running", &gpu_node]);
    let described = k.ok(&["describe", "pod", &pod], None);
    line_with(
        &described,
        &[
            "Scheduled",
            &format!("Successfully assigned default/{pod} to {gpu_node}"),
        ],
    );
    let deployments = k.until(&["get", "deployments", "-o", "wide"], "1/1");
    line_with(
        &deployments,
        &[
            "gpu-web",
            "1/1",
            "1",
            "cuda",
            "nvidia/cuda:12.4.1-base-ubuntu22.04",
            "app=gpu-web",
        ],
    );
    let all = k.ok(&["get", "all"], None);
    for what in [
        &format!("pod/{pod}"),
        "deployment.apps/gpu-web",
        "replicaset.apps/gpu-web-",
    ] {
        assert!(all.contains(what), "get all lacks {what}:\n{all}");
    }

    // A client-side apply of a changed image: a strategic merge patch, which merges the
    // container by name and keeps its resources.
    let v2 = GPU_DEPLOYMENT.replace("12.4.1", "12.6.0");
    let applied = k.ok(&["apply", "-f", "-"], Some(&v2));
    assert_eq!(applied.trim(), "deployment.apps/gpu-web configured");
    let container = k.gpu_web("{.spec.template.spec.containers[0]}", &[]);
    let container: serde_json::Value = serde_json::from_str(&container).expect("container JSON");
    assert_eq!(container["image"], "nvidia/cuda:12.6.0-base-ubuntu22.04");
    assert_eq!(
        container["resources"]["limits"],
        json!({"nvidia.com/gpu": "1"}),
        "{container}"
    );
    let pods = k.until(&["get", "pods", "-o", "wide"], "Running");
    assert_eq!(pods.lines().count(), 2, "one pod, rolled:\n{pods}");
    let rolled = line_with(&pods, &["gpu-web-", "1/1", "Running", &gpu_node])
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();

    // get -w sees the rollout a server-side apply starts.
    let (mut watcher, lines) = watch_pods(&k);
    let first = lines
        .recv_timeout(Duration::from_secs(60))
        .expect("the watch's first line");
    assert!(first.starts_with("NAME"), "{first}");
    let changed = v2.replace(
        "labels: {app: gpu-web}\n    spec:",
        "labels: {app: gpu-web, rev: \"2\"}\n    spec:",
    );
    assert_ne!(changed, v2);
    let applied = k.ok(&["apply", "--server-side", "-f", "-"], Some(&changed));
    assert_eq!(applied.trim(), "deployment.apps/gpu-web serverside-applied");
    let deadline = Instant::now() + Duration::from_secs(60);
    let new_pod = loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a watch event for the new pod");
        if line.starts_with("gpu-web-") && !line.starts_with(&rolled) {
            break line;
        }
    };
    let _ = watcher.kill();
    let _ = watcher.wait();
    assert!(
        new_pod.contains("Running") || new_pod.contains("Pending"),
        "{new_pod}"
    );
    let managers = k.gpu_web(
        "{.metadata.managedFields[*].manager}",
        &["--show-managed-fields"],
    );
    assert!(
        managers.split_whitespace().any(|m| m == "kubectl"),
        "{managers}"
    );

    // Strict field validation: a typo is refused, nothing is stored.
    let typo = GPU_DEPLOYMENT
        .replace("gpu-web", "typo")
        .replace("image:", "imagePullPolcy: Always\n        image:");
    let (ok, _, err) = k.run(&["apply", "-f", "-"], Some(&typo));
    assert!(!ok);
    assert!(
        err.contains(r#"strict decoding error: unknown field "spec.template.spec.containers[0].imagePullPolcy""#),
        "{err}"
    );
    let (ok, _, err) = k.run(&["get", "deployment", "typo"], None);
    assert!(
        !ok && err.contains(r#"deployments.apps "typo" not found"#),
        "{err}"
    );

    // explain reads the served OpenAPI v3 schema.
    let explained = k.ok(&["explain", "deployment.spec.replicas"], None);
    assert!(
        explained.contains("GROUP:      apps") && explained.contains("KIND:       Deployment"),
        "{explained}"
    );
    line_with(&explained, &["FIELD:", "replicas", "<integer>"]);
    // The v2 document too, for clients that read it as JSON (kubectl's own client asks
    // for protobuf only and uses v3). `--raw` takes a path from the host: the endpoint's.
    let base = endpoint
        .split_once("://")
        .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
        .unwrap_or("")
        .trim_end_matches('/');
    let v2: serde_json::Value =
        serde_json::from_str(&k.ok(&["get", "--raw", &format!("{base}/openapi/v2")], None))
            .expect("JSON");
    assert_eq!(v2["swagger"], "2.0");
    assert_eq!(
        v2["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );

    // delete: the Deployment, then (garbage collection) its pods.
    let deleted = k.ok(&["delete", "deployment", "gpu-web"], None);
    assert_eq!(deleted.trim(), r#"deployment.apps "gpu-web" deleted"#);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, out, err) = k.run(&["get", "pods"], None);
        if out.is_empty() && err.contains("No resources found in default namespace.") {
            break;
        }
        assert!(Instant::now() < deadline, "pods left:\n{out}{err}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Events are listed with the real columns.
    let events = k.ok(&["get", "events"], None);
    let header: Vec<&str> = line_with(&events, &["LAST SEEN"])
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    line_with(
        &events,
        &["Warning", "FailedScheduling", &format!("pod/{pod}")],
    );
}

/// The next complete line of a streaming response (`buf` keeps what follows it).
async fn next_line(r: &mut reqwest::Response, buf: &mut String) -> String {
    loop {
        if let Some(i) = buf.find('\n') {
            let line = buf[..i].to_owned();
            buf.drain(..=i);
            return line;
        }
        let chunk = tokio::time::timeout(Duration::from_secs(60), r.chunk())
            .await
            .expect("a watch event within 60 s")
            .expect("read the watch")
            .expect("the watch ended early");
        buf.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
    }
}

/// The watch protocol itself (what kubectl and client libraries read): JSON lines of
/// events after the given resourceVersion, and one-row Tables when Tables are asked for.
#[tokio::test]
async fn watches_stream_json_events_and_tables() {
    let (sim, _) = common::start_sim().await;
    sim.world().kube.add_cluster("w");
    let http = kineticd::app::http_client().expect("http");
    let pods = format!("{}/kube/w/api/v1/namespaces/default/pods", sim.url());
    let list: serde_json::Value = common::get_json(&http, &pods).await;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_owned();
    let watch = |accept: &'static str| {
        http.get(format!(
            "{pods}?watch=1&resourceVersion={rv}&timeoutSeconds=60"
        ))
        .header("accept", accept)
        .send()
    };
    let mut plain = watch("application/json").await.expect("watch");
    let mut table = watch("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
        .await
        .expect("watch as table");
    assert_eq!(plain.status(), 200);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w1"},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": 1}}}]}});
    let r = http.post(&pods).json(&pod).send().await.expect("create");
    assert_eq!(r.status(), 201);

    let mut buf = String::new();
    let event: serde_json::Value =
        serde_json::from_str(&next_line(&mut plain, &mut buf).await).expect("event JSON");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["kind"], "Pod");
    assert_eq!(event["object"]["metadata"]["name"], "w1");
    assert_eq!(
        event["object"]["spec"]["containers"][0]["resources"]["requests"]["cpu"], "1",
        "the stored (canonical) object"
    );
    let added_rv: u64 = event["object"]["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("resourceVersion");
    assert!(added_rv > rv.parse::<u64>().unwrap());

    let mut buf = String::new();
    let event: serde_json::Value =
        serde_json::from_str(&next_line(&mut table, &mut buf).await).expect("event JSON");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["kind"], "Table");
    assert_eq!(event["object"]["columnDefinitions"][0]["name"], "Name");
    assert_eq!(event["object"]["rows"][0]["cells"][0], "w1");
    assert_eq!(event["object"]["rows"][0]["cells"][2], "Pending");
}
