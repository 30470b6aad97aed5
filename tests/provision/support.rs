//! Shared set-up: an app on a simulator with workers, a team owning a project, and
//! helpers to run provisioning requests to their end and read the simulator's journal.

use k8s_openapi::api::core::v1::Pod;
use kineticd::cloud::kube::{AccessToken, ClusterAccess, KubeClients, KubeCluster, KubeError};
use kineticd::ops::WorkerPool;
use kineticd::sim::Sim;
use kube::Api;
use kube::api::PostParams;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Resp, TestApp, test_worker_config};

/// Workers each test environment runs.
const WORKERS: usize = 2;

pub const OWNER: &str = "owner@example.com";
pub const PROJECT: &str = "ml-proj";
pub const ZONE: &str = "us-central1-a";
/// The team every environment founds (its owner `OWNER`, its project `PROJECT`), and
/// its policy.
pub const TEAM: &str = "ml-team";
pub const POLICY: &str = "/v1/teams/ml-team/policy";
pub use crate::common::{BOB, CAROL};

/// Every method that creates a resource.
pub const CREATES: [(&str, &str); 7] = [
    ("storage", "buckets.insert"),
    ("compute", "networks.insert"),
    ("compute", "routers.insert"),
    ("iam", "serviceAccounts.create"),
    ("artifactregistry", "repositories.create"),
    ("container", "clusters.create"),
    ("container", "nodePools.create"),
];

pub struct Env {
    pub app: TestApp,
    pub sim: Sim,
    pub _workers: WorkerPool,
}

pub async fn env() -> Env {
    env_with(speed_zero()).await
}

/// The simulator configuration of [`env`]: the clock at speed 0 (work is instant).
pub fn speed_zero() -> kineticd::sim::SimConfig {
    kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Auto { speed: 0.0 },
        ..Default::default()
    }
}

/// [`env_up`] on a simulator whose GKE runs `version`.
pub async fn env_up_on_gke(version: &str, name: &str) -> Env {
    let env = env_with(kineticd::sim::SimConfig {
        gke_version: version.into(),
        ..speed_zero()
    })
    .await;
    env.up_ok(name, json!({"accelerator": "cpu"})).await;
    env
}

/// [`env`] on a simulator with a regional quota of `limit` for `metric`.
pub async fn env_with_quota(metric: &str, limit: f64) -> Env {
    let mut cfg = speed_zero();
    cfg.quotas.insert(metric.into(), limit);
    env_with(cfg).await
}

/// Asserts `r` is the 409 QUOTA_INSUFFICIENT of the quota pre-check; its metadata.
#[track_caller]
pub fn quota_refusal(r: &Resp) -> &Value {
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "QUOTA_INSUFFICIENT");
    &r.body["error"]["details"][0]["metadata"]
}

/// POST `body` as a pool of `cluster` (`query`: `?validateOnly=true` for the preview):
/// 400 GKE_VERSION_TOO_OLD, naming the `current` version; the metadata.
pub async fn gke_too_old(
    env: &Env,
    cluster: &str,
    query: &str,
    body: Value,
    current: &str,
) -> Value {
    let path = format!("{}/nodePools{query}", cluster_path(cluster));
    let r = env.app.post(OWNER, &path, body).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(r.reason(), "GKE_VERSION_TOO_OLD", "{}", r.body);
    let meta = r.body["error"]["details"][0]["metadata"].clone();
    assert_eq!(meta["currentMasterVersion"], current);
    meta
}

/// The body of a failover pair of L4 pools (spot first, on-demand behind it).
pub fn l4_failover_pair() -> Value {
    json!({"accelerator": "l4", "failover": true})
}

/// [`explicit_clock`] with a cluster `name` up (no accelerator), run out to success.
pub async fn explicit_clock_up(name: &str) -> Env {
    let env = explicit_clock().await;
    let up = env.up(name, json!({"accelerator": "cpu"})).await;
    assert_eq!(env.run_out(&up).await["metadata"]["state"], "SUCCEEDED");
    env
}

/// [`env`] with a cluster `name` up (no accelerator, asserting success).
pub async fn env_up(name: &str) -> Env {
    let env = env().await;
    env.up_ok(name, json!({"accelerator": "cpu"})).await;
    env
}

/// [`env`] on a simulator configured by `cfg` (quotas, stockouts, an explicit clock).
pub async fn env_with(cfg: kineticd::sim::SimConfig) -> Env {
    let (app, sim) = TestApp::spawn_sim_with(cfg).await;
    env_of(app, sim).await
}

/// [`env`] with the app's settings changed by `tweak`.
pub async fn env_with_settings(
    tweak: impl FnOnce(kineticd::config::Settings) -> kineticd::config::Settings,
) -> Env {
    let (sim, _) = crate::common::start_sim_with(speed_zero()).await;
    let (db, url) = crate::common::fresh_db().await;
    let app = TestApp::spawn_on(db, url, &sim.url(), tweak).await;
    env_of(app, sim).await
}

async fn env_of(app: TestApp, sim: Sim) -> Env {
    app.team(OWNER, TEAM, &[PROJECT]).await;
    // Binding the project read its IAM policy: the journal starts after the set-up.
    let cleared = app
        .http
        .delete(format!("{}/sim/v1/journal", sim.url()))
        .send()
        .await
        .expect("clear the journal");
    assert!(cleared.status().is_success(), "{}", cleared.status());
    let workers = app.workers(test_worker_config(WORKERS));
    Env {
        app,
        sim,
        _workers: workers,
    }
}

/// Asserts that the error message of `r` says `text`.
#[track_caller]
pub fn assert_message_has(r: &Resp, text: &str) {
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(text), "{}", r.body);
}

/// Asserts that `r` is an error with HTTP `status` and `reason`.
#[track_caller]
pub fn assert_error(r: &Resp, status: u16, reason: &str) {
    assert_eq!(r.status.as_u16(), status, "{}", r.body);
    assert_eq!(r.reason(), reason, "{}", r.body);
}

/// Asserts that `r`, the answer to `body`, is a 400 with `reason` whose message says `says`.
#[track_caller]
pub fn assert_refused(r: &Resp, body: &Value, reason: &str, says: &str) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
    assert_eq!(r.reason(), reason, "{body}: {}", r.body);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{body}: {message}");
}

/// The body of a pool of `accelerator` provisioned as `provisioning` (`FLEX_START`,
/// `QUEUED`, ...), with the fields of `extra` (an object) added.
pub fn provisioned(accelerator: &str, provisioning: &str, extra: Value) -> Value {
    let mut body = json!({"accelerator": accelerator, "provisioning": provisioning});
    if let (Some(fields), Value::Object(more)) = (body.as_object_mut(), extra) {
        fields.extend(more);
    }
    body
}

/// The progress step `id` of operation `op`.
pub fn op_step<'a>(op: &'a Value, id: &str) -> &'a Value {
    op["metadata"]["progress"]["steps"]
        .as_array()
        .and_then(|steps| steps.iter().find(|s| s["id"] == id))
        .unwrap_or_else(|| panic!("no step {id}: {}", op["metadata"]["progress"]))
}

/// [`env`] on an explicit clock: simulated time moves only when a test advances it.
pub async fn explicit_clock() -> Env {
    env_with(kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Explicit,
        ..Default::default()
    })
    .await
}

pub fn cluster_path(name: &str) -> String {
    format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/{name}")
}

/// The simulator's key of `cluster` (`project.zone.cluster`).
pub fn kube_key(cluster: &str) -> String {
    format!("{PROJECT}.{ZONE}.{cluster}")
}

/// The id of the pool an add operation `op` targets (the last segment of its target).
pub fn pool_of(op: &Value) -> String {
    op["metadata"]["target"]
        .as_str()
        .and_then(|t| t.rsplit('/').next())
        .expect("target")
        .to_owned()
}

/// The path of node pool `id` of `cluster`.
pub fn pool_path(cluster: &str, id: &str) -> String {
    format!("{}/nodePools/{id}", cluster_path(cluster))
}

/// The node pool of the `nodePools.create` call (among `calls`) that created `pool`.
pub fn created_pool<'a>(calls: &'a [Value], pool: &str) -> &'a Value {
    &calls
        .iter()
        .find(|e| e["body"]["nodePool"]["name"] == pool)
        .unwrap_or_else(|| panic!("no nodePools.create for {pool}"))["body"]["nodePool"]
}

type TokenFuture = futures::future::BoxFuture<'static, Result<Option<AccessToken>, KubeError>>;

/// The production Kubernetes client on the simulated cluster (no authentication).
pub fn kube(env: &Env, cluster: &str) -> KubeCluster {
    let clients = KubeClients::new(|| -> TokenFuture { Box::pin(async { Ok(None) }) });
    clients.cluster(ClusterAccess {
        key: format!("test/{cluster}"),
        endpoint: format!("{}/kube/{}", env.sim.url(), kube_key(cluster)),
        ca_certificate: None,
    })
}

/// Start pod `name` asking for one GPU on node pool `pool` of `cluster`; the default
/// namespace's pod API, to end it with.
pub async fn start_gpu_pod(env: &Env, cluster: &str, pool: &str, name: &str) -> Api<Pod> {
    let k = kube(env, cluster);
    let pods: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"cloud.google.com/gke-nodepool": pool},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    pods
}

#[allow(dead_code)] // each test binary module uses a subset
impl Env {
    /// PUT the cluster (`up`), asserting 202; returns the operation.
    pub async fn up(&self, name: &str, body: Value) -> Value {
        let r = self.app.put(OWNER, &cluster_path(name), body).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        r.body
    }

    /// Run to the end and return the final operation; after a successful `up`, also
    /// wait for the SYNC_ACCESS that follows it, so what a test measures next is not
    /// interleaved with its calls.
    pub async fn done(&self, op: &Value) -> Value {
        let done = self
            .app
            .wait_done(OWNER, op["name"].as_str().expect("operation name"))
            .await;
        if done["metadata"]["type"] == "UP_CLUSTER" && done["metadata"]["state"] == "SUCCEEDED" {
            self.syncs_settled().await;
        }
        done
    }

    /// Wait (60 s at most) until no SYNC_ACCESS operation is unfinished.
    pub async fn syncs_settled(&self) {
        let path = "/v1/operations?filter=type=SYNC_ACCESS%20AND%20done=false";
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let r = self.app.get(OWNER, path).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            if r.body["operations"].as_array().is_none_or(|a| a.is_empty()) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "syncs still running: {}",
                r.body
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// `up` to the end, asserting success.
    pub async fn up_ok(&self, name: &str, body: Value) -> Value {
        let op = self.up(name, body).await;
        let done = self.done(&op).await;
        assert!(done["error"].is_null(), "up failed: {}", done["error"]);
        assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
        done
    }

    /// Production GCP clients pointed at this test's simulator (to change the "cloud"
    /// behind kineticd's back).
    pub fn gcp(&self) -> kineticd::cloud::gcp::GcpClients {
        let root = url::Url::parse(&self.sim.url()).unwrap();
        kineticd::cloud::gcp::GcpClients::new(
            kineticd::cloud::gcp::GcpConfig::single_root(&root),
            self.app.http.clone(),
        )
    }

    /// The state of `cluster` as `GET` shows it to the owner.
    pub async fn api_state(&self, cluster: &str) -> Value {
        self.app.get(OWNER, &cluster_path(cluster)).await.body["state"].take()
    }

    /// Wait (120 s at most) for a Compute operation the test started itself.
    pub async fn wait_compute(&self, op: &kineticd::cloud::gcp::types::compute::Operation) {
        self.gcp()
            .compute
            .wait_operation(op, &Default::default(), std::time::Duration::from_secs(120))
            .await
            .expect("compute operation");
    }

    /// `GET` the status of `cluster` (drift included), as the owner.
    pub async fn status(&self, cluster: &str) -> Value {
        let path = format!("{}/status", cluster_path(cluster));
        self.app.get(OWNER, &path).await.body
    }

    /// The plan of an `up` of `cluster` with `body`, previewed (asserting 200).
    pub async fn preview_up(&self, cluster: &str, body: Value) -> Value {
        let path = format!("{}?validateOnly=true", cluster_path(cluster));
        let r = self.app.put(OWNER, &path, body).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    /// The owner's operations of `op_type` (the list response).
    pub async fn operations_of(&self, op_type: &str) -> Value {
        let path = format!("/v1/operations?filter=type={op_type}");
        self.app.get(OWNER, &path).await.body
    }

    /// POST a node pool to `cluster`, as the owner.
    pub async fn post_pool(&self, cluster: &str, body: Value) -> Resp {
        let path = format!("{}/nodePools", cluster_path(cluster));
        self.app.post(OWNER, &path, body).await
    }

    /// POST a node pool to `cluster` with `?validateOnly=true` (its preview), as the owner.
    pub async fn preview_pool(&self, cluster: &str, body: Value) -> Resp {
        let path = format!("{}/nodePools?validateOnly=true", cluster_path(cluster));
        self.app.post(OWNER, &path, body).await
    }

    /// Add a node pool to `cluster` and run the operation to success; the pool's id.
    pub async fn added_pool(&self, cluster: &str, body: Value) -> String {
        let op = self.add_pool(cluster, body).await;
        self.ok(&op).await;
        pool_of(&op)
    }

    /// DELETE node pool `id` of `cluster`, asserting 202, and run it to success.
    pub async fn remove_pool(&self, cluster: &str, id: &str) -> Value {
        let r = self.app.delete(OWNER, &pool_path(cluster, id)).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        self.ok(&r.body).await
    }

    /// The GKE cluster `name` as the simulated GKE holds it (production client).
    pub async fn gke_cluster(&self, name: &str) -> kineticd::cloud::gcp::types::container::Cluster {
        self.gcp()
            .container
            .get_cluster(PROJECT, ZONE, name)
            .await
            .expect("cluster")
    }

    /// POST a node pool, asserting 202; returns the operation.
    pub async fn add_pool(&self, cluster: &str, body: Value) -> Value {
        let r = self.post_pool(cluster, body).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        r.body
    }

    /// The record of node pool `id` of `cluster`, as the owner (asserting 200).
    pub async fn pool(&self, cluster: &str, id: &str) -> Value {
        let r = self.app.get(OWNER, &pool_path(cluster, id)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    /// `PATCH` pool `id` of `cluster` with `query` (`?updateMask=...`, may be empty).
    pub async fn patch_pool(&self, cluster: &str, id: &str, query: &str, body: Value) -> Resp {
        let path = format!("{}{query}", pool_path(cluster, id));
        self.app.patch(OWNER, &path, body).await
    }

    /// The preview of a `PATCH` of pool `id` of `cluster` with `body`, asserting 200.
    pub async fn preview_patch(&self, cluster: &str, id: &str, body: Value) -> Value {
        let r = self
            .patch_pool(cluster, id, "?validateOnly=true", body)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    /// The node pools of `cluster` (the list response), as the owner.
    pub async fn pools(&self, cluster: &str) -> Value {
        let path = format!("{}/nodePools", cluster_path(cluster));
        self.app.get(OWNER, &path).await.body
    }

    /// The team's audit events of `kind`, newest first.
    pub async fn events(&self, kind: &str) -> Vec<Value> {
        let path = format!("/v1/teams/{TEAM}/events?filter=type%3D%22{kind}%22");
        let r = self.app.get(OWNER, &path).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["events"].as_array().cloned().unwrap_or_default()
    }

    /// Another kineticd on this simulator with a database of its own, empty but for the
    /// team: a deployment that lost its database, or a team new to kineticd whose
    /// clusters `kinetic up` made.
    pub async fn lost_database(&self) -> Env {
        let (db, url) = crate::common::fresh_db().await;
        let app = TestApp::spawn_on(db, url, &self.sim.url(), |s| s).await;
        env_of(app, self.sim.clone()).await
    }

    /// Run an operation to the end, asserting success.
    pub async fn ok(&self, op: &Value) -> Value {
        let done = self.done(op).await;
        assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
        // The response names its member of the document's union.
        let t: kineticd::domain::OperationType = done["metadata"]["type"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .expect("an operation type");
        let schema = kineticd::ops::kinds::response_type(t);
        assert_eq!(done["response"]["@type"], schema.as_ref(), "{done}");
        done
    }

    /// Journal entries (optionally of one service and method).
    pub async fn journal(&self, service: &str, method: &str) -> Vec<Value> {
        let mut q = vec![];
        if !service.is_empty() {
            q.push(("service", service));
        }
        if !method.is_empty() {
            q.push(("method", method));
        }
        crate::sim_journal::sim_journal(&self.app.http, &self.sim.url(), &q).await
    }

    /// Successful (2xx) journal entries of a method.
    pub async fn ok_calls(&self, service: &str, method: &str) -> Vec<Value> {
        self.ok_calls_by(service, method, "9999-12-31T23:59:59Z")
            .await
    }

    /// [`Env::ok_calls`] made by `end` (an RFC 3339 time: an operation's `endTime`).
    pub async fn ok_calls_by(&self, service: &str, method: &str, end: &str) -> Vec<Value> {
        let end = chrono::DateTime::parse_from_rfc3339(end).expect("an RFC 3339 time");
        let by_end = |e: &Value| {
            e["time"]
                .as_str()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .is_some_and(|t| t <= end)
        };
        self.journal(service, method)
            .await
            .into_iter()
            .filter(|e| {
                e["status"]
                    .as_u64()
                    .is_some_and(|s| (200..300).contains(&s))
                    && by_end(e)
            })
            .collect()
    }

    /// Arm `count` faults of `kind` on `service`/`method` in the simulator.
    pub async fn arm(&self, service: &str, method: &str, kind: &str, count: u32) {
        let r = self
            .app
            .http
            .post(format!("{}/sim/v1/faults", self.sim.url()))
            .json(&json!({"service": service, "method": method, "kind": kind, "count": count}))
            .send()
            .await
            .expect("arm fault");
        assert!(r.status().is_success(), "arming failed: {}", r.status());
    }

    /// Move the simulator's clock on (an explicit clock; harmless at speed 0).
    pub async fn advance(&self, seconds: f64) {
        let r = self
            .app
            .http
            .post(format!("{}/sim/v1/clock:advance", self.sim.url()))
            .json(&json!({ "seconds": seconds }))
            .send()
            .await
            .expect("advance the clock");
        assert!(r.status().is_success(), "advancing failed: {}", r.status());
    }

    /// The operation as it is now.
    pub async fn op(&self, op: &Value) -> Value {
        let r = self
            .app
            .get(
                OWNER,
                &format!("/v1/{}", op["name"].as_str().expect("name")),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body
    }

    /// Run `op` to its end, moving the simulator's clock on while it runs.
    pub async fn run_out(&self, op: &Value) -> Value {
        self.run_out_by(op, 60.0).await
    }

    /// [`Env::run_out`], moving the clock `seconds` at a time.
    pub async fn run_out_by(&self, op: &Value, seconds: f64) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let cur = self.op(op).await;
            if cur["done"] == true {
                if cur["metadata"]["type"] == "UP_CLUSTER"
                    && cur["metadata"]["state"] == "SUCCEEDED"
                {
                    self.syncs_settled().await;
                }
                return cur;
            }
            assert!(std::time::Instant::now() < deadline, "not done: {cur}");
            self.advance(seconds).await;
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Stop the workers: operations accepted from now on stay QUEUED until [`Env::resume`].
    pub async fn pause(&mut self) {
        let idle = self.app.workers(test_worker_config(0));
        std::mem::replace(&mut self._workers, idle)
            .shutdown(std::time::Duration::from_secs(5))
            .await;
    }

    /// Start the workers again after [`Env::pause`].
    pub fn resume(&mut self) {
        self._workers = self.app.workers(test_worker_config(WORKERS));
    }
}

/// The usage collector of `env`'s app (a 60 s interval; tests call its rounds).
#[allow(dead_code)] // each test binary module uses a subset
pub fn usage_collector(env: &Env) -> kineticd::ops::usage::Collector {
    kineticd::ops::usage::Collector::new(
        env.app.db.clone(),
        env.app.state.cloud.clone(),
        std::sync::Arc::clone(&env.app.state.prices),
        std::time::Duration::from_secs(60),
    )
}

/// A CPU cluster `name` up with an L4 pool of two nodes (minNodes 2); the pool's id.
#[allow(dead_code)] // each test binary module uses a subset
pub async fn l4_cluster(env: &Env, name: &str) -> String {
    env.up_ok(name, json!({"accelerator": "cpu"})).await;
    let add = env
        .add_pool(name, json!({"accelerator": "l4", "minNodes": 2}))
        .await;
    assert_eq!(env.run_out(&add).await["metadata"]["state"], "SUCCEEDED");
    pool_of(&add)
}
