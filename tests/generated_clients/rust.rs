//! The Rust client: progenitor generates it at compile time from the committed OpenAPI
//! 3.0 rendering (progenitor reads only 3.0), and it drives the day in the life against
//! `serve --dev`. Every answer is a generated type.

use std::time::{Duration, Instant};

use super::common;
use super::common::dev_server::DevServer;

/// The client progenitor generates (builder style: `client.get_cluster().project(..)..`).
mod kineticd_client {
    progenitor::generate_api!(
        spec = "openapi/kineticd.openapi30.json",
        interface = Builder,
    );
}

use kineticd_client::types::{
    AcceleratorKind, ActionKind, ClusterState, OperationState, OperationType, Plan, PoolState,
    RpcStatus,
};
use kineticd_client::{Client, Error, ResponseValue, types};

/// `$call` aimed at the test cluster (its project, zone and name set).
macro_rules! in_cluster {
    ($call:expr) => {
        $call.project(PROJECT).zone(ZONE).cluster(CLUSTER)
    };
}

const USER: &str = "openapi-client-rs@example.com"; // dev-mode identity (X-Kinetic-User)
const TEAM: &str = "openapi-client-rs";
const PROJECT: &str = "openapi-client-rs-gcp";
const ZONE: &str = "us-central1-a";
const CLUSTER: &str = "typed-rs";
const GPU: &str = "gpu-l4";
const TPU: &str = "tpu-v5litepod-16";
/// How long one operation may take at most; the server's long-poll answers once done.
const DEADLINE: Duration = Duration::from_secs(300);

/// `.answer(what)` on a call's future: its typed answer; a failed call panics naming
/// `what` (its operationId).
trait Answer<T> {
    async fn answer(self, what: &str) -> T;
}

impl<T, E: std::fmt::Debug, F: Future<Output = Result<ResponseValue<T>, E>>> Answer<T> for F {
    async fn answer(self, what: &str) -> T {
        match self.await {
            Ok(answer) => answer.into_inner(),
            Err(e) => panic!("{what}: {e:?}"),
        }
    }
}

fn cluster_name() -> String {
    format!("projects/{PROJECT}/zones/{ZONE}/clusters/{CLUSTER}")
}

/// Long-polls `:wait` until `op` is done; it must have succeeded.
async fn wait_done(client: &Client, started: types::Operation) -> types::Operation {
    let id = started.name.trim_start_matches("operations/").to_owned();
    let deadline = Instant::now() + DEADLINE;
    let mut op = started;
    while !op.done {
        assert!(
            Instant::now() < deadline,
            "{} not done in time: {:?}",
            op.name,
            op.metadata.state
        );
        op = client
            .wait_operation()
            .operation(&id)
            .timeout("20s")
            .send()
            .answer("waitOperation")
            .await;
    }
    assert_eq!(
        op.metadata.state,
        OperationState::Succeeded,
        "{}: {:?}",
        op.name,
        op.error
    );
    assert!(op.error.is_none(), "{}: {:?}", op.name, op.error);
    let progress = &op.metadata.progress;
    assert_eq!(progress.percent, 100, "{} progress", op.name);
    assert_eq!(progress.steps_done, progress.steps_total);
    println!(
        "done: {} {} {:?}",
        op.name, op.metadata.type_, op.metadata.state
    );
    op
}

/// Waits for `started`, a just-started `type_` operation on the test cluster, and reads
/// the cluster record after it.
async fn cluster_after(
    client: &Client,
    started: types::Operation,
    type_: OperationType,
) -> types::Cluster {
    check_started(&started, type_, &cluster_name());
    wait_done(client, started).await;
    let read = in_cluster!(client.get_cluster()).send();
    read.answer("getCluster").await
}

/// A just-started operation of `type_` on `target`, by this caller for this team.
fn check_started(op: &types::Operation, type_: OperationType, target: &str) {
    assert!(op.name.starts_with("operations/"), "{}", op.name);
    assert!(!op.done, "{} done at once", op.name);
    assert_eq!(op.metadata.type_, type_);
    assert_eq!(op.metadata.target, target);
    assert_eq!(
        op.metadata.team.as_deref(),
        Some(format!("teams/{TEAM}").as_str())
    );
    assert_eq!(op.metadata.created_by, USER);
    println!("{}: {} {:?}", type_, op.name, op.metadata.state);
}

#[tokio::test]
async fn generated_rust_client_drives_serve_dev() {
    let (db, url) = common::fresh_db().await;
    db.close().await;
    let server = DevServer::start("generated-rs", |cmd| {
        cmd.env("DATABASE_URL", &url).env("KINETIC_SIM_SPEED", "0");
    });
    kineticd::auth::install_tls_provider();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("x-kinetic-user", USER.parse().expect("header value"));
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .timeout(Duration::from_secs(60))
        .build()
        .expect("http client");
    let client = Client::new_with_client(&server.api, http);
    let name = cluster_name();

    // 1. The team.
    let team = client
        .create_team()
        .body_map(|b| b.team_id(TEAM).projects(vec![PROJECT.to_owned()]))
        .send()
        .answer("createTeam")
        .await;
    assert_eq!(team.name, format!("teams/{TEAM}"));
    assert_eq!(team.team_id, TEAM);
    assert_eq!(team.projects, [PROJECT]);
    assert!(!team.etag.is_empty(), "team etag");

    // Nothing there yet: a typed Google error.
    match in_cluster!(client.get_cluster()).send().await {
        Err(Error::ErrorResponse(e)) => {
            assert_eq!(e.status().as_u16(), 404);
            assert_eq!(e.error.status, RpcStatus::NotFound);
            assert_eq!(e.error.details[0].domain, "kineticd");
            println!("before up: {}", e.error.details[0].reason);
        }
        other => panic!("getCluster before up: {other:?}"),
    }

    // 2. up, and wait.
    let up = in_cluster!(client.apply_cluster())
        .body(Some(types::UpRequest {
            accelerator: Some(GPU.to_owned()),
            ..Default::default()
        }))
        .send()
        .answer("applyCluster")
        .await;
    let cluster = cluster_after(&client, up, OperationType::UpCluster).await;
    assert_eq!(cluster.name, name);
    assert_eq!(cluster.state, ClusterState::Running);
    assert_eq!(cluster.created_by, USER);

    // 3. Its node pools: the L4 pool `up` made.
    let listed = in_cluster!(client.list_node_pools())
        .send()
        .answer("listNodePools")
        .await;
    assert_eq!(listed.node_pools.len(), 1, "{:?}", listed.node_pools);
    assert!(listed.next_page_token.is_none(), "one page");
    let gpu = &listed.node_pools[0];
    let gpu_id = gpu.pool_id.clone();
    assert_eq!(gpu.accelerator, GPU);
    assert_eq!(gpu.kind, AcceleratorKind::Gpu);
    assert_eq!(gpu.state, PoolState::Running);
    assert_eq!(gpu.name, format!("{name}/nodePools/{gpu_id}"));

    // 4. Preview a TPU pool add (`:previewCreate`): a plan that creates one node pool,
    // nothing queued.
    let plan: Plan = in_cluster!(client.preview_create_node_pool())
        .body_map(|b| b.accelerator(Some(TPU.to_owned())))
        .send()
        .answer("previewCreateNodePool")
        .await;
    // Action is a tagged union (on `type`); the pool it creates is a typed PoolDetails.
    let creates: Vec<&types::PoolDetails> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            types::Action::ContainerNodePool {
                action: ActionKind::Create,
                details: Some(pool),
                ..
            } => Some(pool),
            _ => None,
        })
        .collect();
    assert_eq!(creates.len(), 1, "{:?}", plan.actions);
    assert_eq!(creates[0].accelerator, TPU);
    let cost = plan
        .estimated_hourly_cost
        .as_ref()
        .expect("the plan prices the pool");
    assert_eq!(cost.currency.as_str(), "USD");
    let ops = client
        .list_operations()
        .filter(format!("target=\"{name}\""))
        .send()
        .answer("listOperations")
        .await;
    // The `up` (its SYNC_ACCESS follows it on its own queue); no other.
    let changes: Vec<_> = ops
        .operations
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .filter(|o| o["metadata"]["type"] != "SYNC_ACCESS")
        .collect();
    assert_eq!(changes.len(), 1, "a preview queues no operation");

    // 5. Add the TPU pool, and wait.
    let add = in_cluster!(client.create_node_pool())
        .body_map(|b| b.accelerator(Some(TPU.to_owned())))
        .send()
        .answer("createNodePool")
        .await;
    let target = add.metadata.target.clone();
    let tpu_id = target
        .strip_prefix(&format!("{name}/nodePools/"))
        .unwrap_or_else(|| panic!("pool add target {target}"))
        .to_owned();
    check_started(&add, OperationType::AddNodePool, &target);
    wait_done(&client, add).await;
    let tpu = in_cluster!(client.get_node_pool())
        .pool(&tpu_id)
        .send()
        .answer("getNodePool")
        .await;
    assert_eq!(tpu.accelerator, TPU);
    assert_eq!(tpu.kind, AcceleratorKind::Tpu);
    assert_eq!(tpu.state, PoolState::Running);
    assert_eq!(tpu.tpu_topology.as_deref(), Some("4x4"));
    let mut ids: Vec<String> = in_cluster!(client.list_node_pools())
        .send()
        .answer("listNodePools")
        .await
        .node_pools
        .into_iter()
        .map(|p| p.pool_id)
        .collect();
    ids.sort();
    let mut want = vec![gpu_id, tpu_id];
    want.sort();
    assert_eq!(ids, want);

    // 6. down, and wait: the record stays, DELETED.
    let down = in_cluster!(client.delete_cluster())
        .send()
        .answer("deleteCluster")
        .await;
    let gone = cluster_after(&client, down, OperationType::DownCluster).await;
    assert_eq!(gone.state, ClusterState::Deleted);
    println!("typed client: ok");
}
