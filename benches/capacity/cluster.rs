//! The benchmark's cluster: the team, the cluster record, the GKE cluster with 200 GPU
//! nodes in four pools (made with the production GKE client) and 2,000 pods (created
//! through the cluster's Kubernetes API with the production client).
//!
//! Invariant: bound pods are pinned to their node by hostname, so the usage of every
//! node (and the 100 pending pods' reasons) is the same on every run.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kineticd::cloud::gcp::types::container::{AcceleratorConfig, NodeConfig, NodeTaint};
use kineticd::cloud::gcp::types::container::{Cluster, NodePool, NodePoolAutoscaling};
use kineticd::cloud::kube::{ClusterAccess, KubeCluster};
use kineticd::domain::ClusterState;
use kineticd::store;
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::app_support::App;
use super::{CLUSTER, NODES_PER_POOL, OWNER, PENDING, PODS, POOLS, PROJECT, ZONE};

fn gke_pool(id: &str, machine: &str, gpu: &str, count: u64, spot: bool) -> NodePool {
    let n = i32::try_from(NODES_PER_POOL).unwrap_or(i32::MAX);
    NodePool {
        name: id.into(),
        initial_node_count: Some(n),
        autoscaling: Some(NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(n),
            max_node_count: Some(n),
            ..Default::default()
        }),
        config: Some(NodeConfig {
            machine_type: Some(machine.into()),
            accelerators: vec![AcceleratorConfig {
                accelerator_count: i64::try_from(count).unwrap_or(1),
                accelerator_type: gpu.into(),
                ..Default::default()
            }],
            spot: spot.then_some(true),
            taints: if spot {
                vec![NodeTaint {
                    key: "cloud.google.com/gke-spot".into(),
                    value: "true".into(),
                    effect: "NO_SCHEDULE".into(),
                }]
            } else {
                Vec::new()
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The team, the cluster record, the GKE cluster with its 200 GPU nodes, and 2,000 pods.
pub async fn build_cluster(app: &App) -> Result<KubeCluster> {
    let r = app
        .http
        .post(format!("{}/v1/teams", app.api))
        .header("x-kinetic-user", OWNER)
        .json(&json!({"teamId": "bench", "projects": [PROJECT]}))
        .send()
        .await?;
    if !r.status().is_success() {
        bail!("create team: {}", r.text().await?);
    }
    store::clusters::insert(
        &app.db,
        store::clusters::NewCluster {
            project_id: PROJECT,
            zone: ZONE,
            name: CLUSTER,
            team_id: "bench",
            state: ClusterState::Running,
            spec: store::ClusterSpecRecord::default(),
            resources: json!({}),
            created_by: OWNER,
        },
    )
    .await?;
    let gcp = &app.state.cloud.gcp;
    let mut pools = vec![NodePool {
        name: "default-pool".into(),
        initial_node_count: Some(1),
        config: Some(NodeConfig {
            machine_type: Some("e2-standard-4".into()),
            ..Default::default()
        }),
        ..Default::default()
    }];
    pools.extend(
        POOLS
            .iter()
            .map(|(id, m, g, c, s)| gke_pool(id, m, g, *c, *s)),
    );
    let cluster = Cluster {
        name: CLUSTER.into(),
        node_pools: pools,
        ..Default::default()
    };
    let op = gcp
        .container
        .create_cluster(PROJECT, ZONE, &cluster)
        .await?;
    gcp.container
        .wait_operation(&op, &CancellationToken::new(), Duration::from_secs(600))
        .await?;
    let live = gcp.container.get_cluster(PROJECT, ZONE, CLUSTER).await?;
    let access = ClusterAccess::for_gke(&live).context("the GKE cluster has no endpoint")?;
    let kube = app.state.cloud.kube.cluster(access);
    create_pods(&kube).await?;
    Ok(kube)
}

/// Bound pods first (pinned to their node: 9 or 10 a node, GPU pods leaving 0, 1 or 2
/// GPUs free), then the pending ones (too large, untolerated spot taint, no TPU pool,
/// pool at max).
async fn create_pods(kube: &KubeCluster) -> Result<()> {
    let client = kube.client().await?;
    let nodes: Vec<(String, String, u64)> = kube
        .nodes()
        .await?
        .into_iter()
        .filter(|n| n.gpus > 0)
        .map(|n| (n.name, n.pool.unwrap_or_default(), n.gpus))
        .collect();
    let bound = PODS - PENDING;
    let mut specs: Vec<Value> = (0..bound)
        .map(|i| {
            let (node, pool, gpus) = &nodes[i % nodes.len()];
            let nth = (i / nodes.len()) as u64;
            let leave = ((i % nodes.len()) % 3) as u64;
            let want = u64::from(nth < gpus.saturating_sub(leave));
            let spot = pool.contains("spot");
            pod_spec(
                &format!("w-{i:04}"),
                want,
                json!({"kubernetes.io/hostname": node}),
                spot,
            )
        })
        .collect();
    for i in 0..PENDING {
        let (gpus, selector, spot) = match i % 4 {
            0 => (16, json!({}), false),
            1 => (1, json!({"cloud.google.com/gke-spot": "true"}), false),
            2 => (0, json!({}), false),
            _ => (
                8,
                json!({"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}),
                false,
            ),
        };
        let mut s = pod_spec(&format!("p-{i:04}"), gpus, selector, spot);
        if gpus == 0 {
            s["spec"]["containers"][0]["resources"] = json!({"limits": {"google.com/tpu": "4"}});
        }
        specs.push(s);
    }
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let results: Vec<Result<()>> = futures::stream::iter(specs.into_iter().map(|s| {
        let pods = pods.clone();
        async move {
            let pod: Pod = serde_json::from_value(s)?;
            pods.create(&PostParams::default(), &pod).await?;
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(8)
    .collect()
    .await;
    results
        .into_iter()
        .collect::<Result<Vec<()>>>()
        .context("creating pods")?;
    Ok(())
}

/// A pod asking for `gpus` GPUs (as a string, like the API server returns it) and a
/// little CPU, tolerating the GPU taint (and the spot taint when `spot`).
pub fn pod_spec(name: &str, gpus: u64, selector: Value, spot: bool) -> Value {
    let mut tolerations = vec![
        json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}),
        json!({"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}),
    ];
    if spot {
        tolerations.push(json!({"key": "cloud.google.com/gke-spot", "operator": "Exists"}));
    }
    let mut limits = json!({"cpu": "100m", "memory": "128Mi"});
    if gpus > 0 {
        limits["nvidia.com/gpu"] = json!(gpus.to_string());
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "nodeSelector": selector,
            "tolerations": tolerations,
            "containers": [{"name": "main", "image": "busybox", "resources": {"limits": limits}}],
        },
    })
}
