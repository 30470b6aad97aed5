//! `GET .../clusters/{c}/capacity` against the simulator: a GKE cluster with a 4-GPU
//! pool whose three nodes run pods of 1, 3 and 4 GPUs and an idle spot pool, built with
//! the production GKE client and the production Kubernetes client; pending pods for each
//! reason (too large, untolerated taint, no such accelerator, pool at max). Every
//! expected number is worked out by hand here, not by the code under test.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kineticd::cloud::gcp::types::container::{Cluster, NodePool, NodeTaint};
use kineticd::cloud::kube::{ClusterAccess, KubeCluster};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};

use crate::common::gke::{autoscaled_pool, create_cluster_and_wait, default_pool};
use crate::common::{TestApp, entry};
use crate::support::{
    ALICE, BOB, C, CAPACITY, EVE, NOPE, P, Z, counts, expect_not_found, ok, pending_pods, pool,
};

const L4X4: &str = "gpu-l4x4-aa11";
const SPOT: &str = "gpu-l4-spot-bb22";

/// A pool of exactly `nodes` nodes: autoscaling `nodes..nodes`.
fn fixed(mut pool: NodePool, nodes: i32) -> NodePool {
    if let Some(a) = pool.autoscaling.as_mut() {
        a.max_node_count = Some(nodes);
    }
    pool
}

fn spot_pool() -> NodePool {
    let mut pool = fixed(autoscaled_pool(SPOT, "g2-standard-4", "nvidia-l4", 1, 1), 1);
    if let Some(c) = pool.config.as_mut() {
        c.spot = Some(true);
        c.taints = vec![NodeTaint {
            key: "cloud.google.com/gke-spot".into(),
            value: "true".into(),
            effect: "NO_SCHEDULE".into(),
        }];
    }
    pool
}

/// The GKE cluster with `default-pool`, the 4-GPU pool (3 nodes, max 3) and the spot
/// pool (1 node, max 1), their records, and a Kubernetes client for it.
async fn gke_cluster(app: &TestApp) -> KubeCluster {
    let rec = app.cluster("acme", P, Z, C).await;
    let l4x4 = fixed(
        autoscaled_pool(L4X4, "g2-standard-48", "nvidia-l4", 4, 3),
        3,
    );
    for (id, acc, machine, count, spot, nodes) in [
        (L4X4, "gpu-l4x4", "g2-standard-48", 4, false, 3),
        (SPOT, "gpu-l4", "g2-standard-4", 1, true, 1),
    ] {
        let spec = json!({"accelerator": acc, "kind": "GPU", "machineType": machine,
            "gkeAcceleratorType": "nvidia-l4", "acceleratorCount": count,
            "minNodes": nodes, "maxNodes": nodes, "spot": spot, "reservation": null});
        app.pool(rec.id, id, spec).await;
    }
    let gcp = &app.state.cloud.gcp;
    let cluster = Cluster {
        name: C.into(),
        node_pools: vec![default_pool(), l4x4, spot_pool()],
        ..Default::default()
    };
    let live = create_cluster_and_wait(gcp, P, Z, &cluster, Duration::from_secs(120)).await;
    let access = ClusterAccess::for_gke(&live).expect("endpoint");
    app.state.cloud.kube.cluster(access)
}

/// A pod requesting `resources` (quantities as strings), tolerating the GPU taint.
fn pod(name: &str, resources: Value, selector: Value) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeSelector": selector,
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "containers": [{"name": "main", "image": "busybox", "resources": resources}],
        },
    }))
    .expect("pod")
}

fn gpus(n: &str) -> Value {
    json!({"limits": {"nvidia.com/gpu": n}})
}

#[tokio::test]
async fn fragmented_cluster_counted_by_hand() {
    let (app, _sim) = TestApp::spawn_sim().await;
    app.team(ALICE, "acme", &[P]).await;
    app.member(ALICE, "acme", BOB, "VIEWER").await;
    let k = gke_cluster(&app).await;
    let client = k.client().await.expect("client");
    let nodes: Api<Node> = Api::all(client.clone());
    let selector = format!("cloud.google.com/gke-nodepool={L4X4}");
    let mut names: Vec<String> = nodes
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("nodes")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let on = |i: usize| json!({"kubernetes.io/hostname": names[i]});
    let create = [
        // Running: 1, 3 and 2 + 2 GPUs on the three nodes.
        pod("one", gpus("1"), on(0)),
        pod(
            "three",
            json!({"requests": {"nvidia.com/gpu": "3"}, "limits": {"nvidia.com/gpu": "3"}}),
            on(1),
        ),
        pod("two-a", gpus("2"), on(2)),
        pod("two-b", gpus("2"), on(2)),
        // Pending: 8 GPUs on 4-GPU nodes.
        pod("too-large", gpus("8"), json!({})),
        // Pending: only the spot pool matches and its taint is not tolerated.
        pod(
            "spot-only",
            gpus("1"),
            json!({"cloud.google.com/gke-spot": "true"}),
        ),
        // Pending: no pool has TPUs.
        pod("tpu", json!({"limits": {"google.com/tpu": "4"}}), json!({})),
        // Pending: no node has 4 free (3, 1, 0) and the pool is at its 3 nodes.
        pod("four", gpus("4"), json!({})),
    ];
    for p in &create {
        pods.create(&PostParams::default(), p)
            .await
            .expect("create pod");
    }

    let r = app.get(BOB, CAPACITY).await;
    crate::common::assert_live_read_timings(&r);
    let c = ok(r);
    assert_eq!(
        c["name"],
        "projects/acme-project/zones/us-central1-a/clusters/kc"
    );
    let ids = crate::common::ids(&c, "nodePools", "poolId");
    assert_eq!(
        ids,
        [SPOT, L4X4],
        "id order; default-pool has no accelerators: {c:#}"
    );

    let l4 = pool(&c, L4X4);
    let per_node: Vec<(String, [u64; 5], u64)> = l4["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let name = n["name"].as_str().unwrap().to_owned();
            (name, counts(n), n["acceleratorPods"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        per_node,
        [
            // [allocatable, requested, free, stranded, largestPlaceableRequest], pods
            (names[0].clone(), [4, 1, 3, 3, 3], 1),
            (names[1].clone(), [4, 3, 1, 1, 1], 1),
            (names[2].clone(), [4, 4, 0, 0, 0], 2),
        ]
    );
    // 12 GPUs; 1 + 3 + 4 = 8 requested; 3 + 1 = 4 free, all on partly used nodes.
    assert_eq!(counts(l4), [12, 8, 4, 4, 3]);
    assert_eq!(l4["perNode"], 4);
    assert_eq!(l4["nodeCount"], 3);
    assert_eq!(l4["maxNodes"], 3);
    assert_eq!(l4["acceleratorType"], "nvidia-l4");
    assert_eq!(l4["resource"], "nvidia.com/gpu");
    // 4 idle L4s at USD 0.71 on demand.
    assert_eq!(l4["idleCost"], json!({"currency": "USD", "amount": 2.84}));
    let spot = pool(&c, SPOT);
    assert_eq!(counts(spot), [1, 0, 1, 0, 1]);
    assert_eq!(spot["spot"], true);
    // 1 idle spot L4 at USD 0.28.
    assert_eq!(spot["idleCost"]["amount"], 0.28);
    // Both pools are L4: 12 + 1 allocatable, 8 requested, 5 free, 4 stranded.
    assert_eq!(c["accelerators"].as_array().unwrap().len(), 1, "{c:#}");
    assert_eq!(counts(&c["accelerators"][0]), [13, 8, 5, 4, 3]);

    assert_eq!(
        pending_pods(&c),
        [
            ("four", "POOL_AT_MAX", 4),
            ("spot-only", "MISSING_TOLERATION", 1),
            ("too-large", "ACCELERATOR_COUNT_TOO_LARGE", 8),
            ("tpu", "NO_MATCHING_POOL", 4),
        ],
        "{c:#}"
    );
    let by = |n: &str| entry(&c, "pendingPods", "name", n);
    assert!(
        by("spot-only")["message"]
            .as_str()
            .unwrap()
            .contains("cloud.google.com/gke-spot=true:NoSchedule"),
        "{c:#}"
    );
    assert_eq!(by("four")["pools"], json!([L4X4]));
    // kube-scheduler's own explanation comes along.
    assert!(
        by("too-large")["schedulerMessage"]
            .as_str()
            .is_some_and(|m| m.contains("Insufficient nvidia.com/gpu")),
        "{c:#}"
    );

    let s = &c["summary"];
    assert_eq!(
        [
            &s["allocatable"],
            &s["requested"],
            &s["free"],
            &s["stranded"],
            &s["pendingPods"]
        ],
        [13, 8, 5, 4, 4]
    );
    // 2.84 + 0.28.
    assert_eq!(s["idleCost"], json!({"currency": "USD", "amount": 3.12}));
    assert_eq!(
        s["text"],
        "8 of 13 accelerators requested (61%); 5 free, 4 of them stranded on partly used \
         nodes; largest request placeable now: 3; 4 pods pending for accelerators \
         (1 ACCELERATOR_COUNT_TOO_LARGE, 1 MISSING_TOLERATION, 1 NO_MATCHING_POOL, \
         1 POOL_AT_MAX); idle accelerators cost USD 3.12/hour"
    );
}

#[tokio::test]
async fn strangers_get_404_and_a_missing_gke_cluster_is_409() {
    let (app, _sim) = TestApp::spawn_sim().await;
    app.team(ALICE, "acme", &[P]).await;
    app.cluster("acme", P, Z, C).await;
    let r = app.get(EVE, CAPACITY).await;
    expect_not_found(&r, "PROJECT_NOT_FOUND");
    let r = app.get(ALICE, &format!("{NOPE}/capacity")).await;
    expect_not_found(&r, "CLUSTER_NOT_FOUND");
    // A record without its GKE cluster: nothing to read.
    let r = app.get(ALICE, CAPACITY).await;
    crate::support::expect_error(&r, 409, "FAILED_PRECONDITION", "GKE_CLUSTER_NOT_FOUND");
}
