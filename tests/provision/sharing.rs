//! GPU sharing and multi-instance GPU partitions of `pool add`: the accelerator config
//! GKE receives (field by field, int64 as a JSON string), the pool record and the plan,
//! the simulated nodes' allocatable units and GKE's labels, and every refusal before
//! any operation exists (and the simulated GKE's own refusals of bad wire values).

use kineticd::cloud::gcp::types::container::{
    AcceleratorConfig, GpuSharingConfig, NodeConfig, NodePool,
};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::entry;
use crate::common::gke::{MAX_CLIENTS, PARTITION, STRATEGY};
use crate::support::*;

/// The partition sizes GKE offers on an A100 40GB, and on an H100.
const A100_40GB_SIZES: &str = "1g.5gb, 2g.10gb, 3g.20gb, 7g.40gb";
const H100_SIZES: &str = "1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 7g.80gb";

/// The plan details of the pool the add operation `op` creates.
fn planned(op: &Value) -> &Value {
    op["metadata"]["plan"]["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["type"] == "container.nodePool"))
        .map(|a| &a["details"])
        .unwrap_or_else(|| panic!("no pool action in {op:#}"))
}

#[tokio::test]
async fn mig_time_sharing_and_mps_pools_reach_gke_field_by_field() {
    let env = env_up("ks").await;
    let mig_op = env
        .add_pool(
            "ks",
            json!({"accelerator": "a100", "partitionSize": "1g.5gb", "minNodes": 1}),
        )
        .await;
    let mig = pool_of(&mig_op);
    let d = planned(&mig_op);
    assert_eq!(d["partitionSize"], "1g.5gb", "{d:#}");
    assert!(d.get("sharing").is_none(), "{d:#}");
    env.ok(&mig_op).await;
    let ts_op = env
        .add_pool(
            "ks",
            json!({"accelerator": "l4", "minNodes": 1,
                   "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 4}}),
        )
        .await;
    let ts = pool_of(&ts_op);
    let d = planned(&ts_op);
    assert_eq!(
        d["sharing"],
        json!({"strategy": "TIME_SHARING", "maxClientsPerGpu": 4})
    );
    assert!(d.get("partitionSize").is_none(), "{d:#}");
    env.ok(&ts_op).await;
    let mps = json!({"accelerator": "t4x2", "driverVersion": "LATEST",
                     "sharing": {"strategy": "MPS", "maxClientsPerGpu": 8}});
    let mps = env.added_pool("ks", mps).await;
    // Time-sharing on partitions: 7 slices of each of 2 GPUs, 3 containers a slice.
    let both = json!({"accelerator": "h100x2", "partitionSize": "1g.20gb",
                      "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 3}});
    let both = env.added_pool("ks", both).await;

    // What GKE received: AcceleratorConfig's gpuPartitionSize (a string) and
    // gpuSharingConfig {gpuSharingStrategy (enum), maxSharedClientsPerGpu (int64, so a
    // JSON string)}, nothing else added.
    let calls = env.ok_calls("container", "nodePools.create").await;
    assert_eq!(calls.len(), 4);
    let acc = |pool: &str| created_pool(&calls, pool)["config"]["accelerators"].clone();
    assert_eq!(
        acc(&mig),
        json!([{"acceleratorCount": "1", "acceleratorType": "nvidia-tesla-a100",
                "gpuPartitionSize": "1g.5gb"}])
    );
    assert_eq!(
        acc(&ts),
        json!([{"acceleratorCount": "1", "acceleratorType": "nvidia-l4",
                "gpuSharingConfig": {"gpuSharingStrategy": "TIME_SHARING",
                                     "maxSharedClientsPerGpu": "4"}}])
    );
    assert_eq!(
        acc(&mps),
        json!([{"acceleratorCount": "2", "acceleratorType": "nvidia-tesla-t4",
                "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"},
                "gpuSharingConfig": {"gpuSharingStrategy": "MPS",
                                     "maxSharedClientsPerGpu": "8"}}])
    );
    assert_eq!(
        acc(&both),
        json!([{"acceleratorCount": "2", "acceleratorType": "nvidia-h100-80gb",
                "gpuPartitionSize": "1g.20gb",
                "gpuSharingConfig": {"gpuSharingStrategy": "TIME_SHARING",
                                     "maxSharedClientsPerGpu": "3"}}])
    );
    assert_eq!(
        created_pool(&calls, &mig)["config"]["machineType"],
        "a2-highgpu-1g"
    );

    // The records say it, with the units a node advertises.
    let list = env.pools("ks").await;
    let rec = |id: &str| entry(&list, "nodePools", "poolId", id).clone();
    let m = rec(&mig);
    assert_eq!(
        (&m["partitionSize"], &m["gpuUnitsPerNode"]),
        (&json!("1g.5gb"), &json!(7))
    );
    assert!(m.get("sharing").is_none(), "{m:#}");
    let t = rec(&ts);
    assert_eq!(
        (&t["sharing"]["strategy"], &t["gpuUnitsPerNode"]),
        (&json!("TIME_SHARING"), &json!(4))
    );
    assert!(t.get("partitionSize").is_none(), "{t:#}");
    assert_eq!(rec(&mps)["gpuUnitsPerNode"], 16, "2 GPUs x 8 clients");
    // H100 1g.20gb yields 4 partitions a GPU (not 7): 2 x 4 x 3.
    assert_eq!(rec(&both)["gpuUnitsPerNode"], 24);

    // The simulated nodes advertise what GKE's device plugin advertises.
    let nodes = kube(&env, "ks").nodes().await.expect("nodes");
    let node = |pool: &str| {
        nodes
            .iter()
            .find(|n| n.pool.as_deref() == Some(pool))
            .unwrap_or_else(|| panic!("no node of {pool}: {nodes:#?}"))
    };
    let n = node(&mig);
    assert_eq!(n.gpus, 7, "one A100 in 7 slices");
    assert_eq!(n.labels[PARTITION], "1g.5gb");
    assert!(!n.labels.contains_key(STRATEGY));
    let n = node(&ts);
    assert_eq!(n.gpus, 4, "one L4 shared by 4");
    assert_eq!(n.labels[STRATEGY], "time-sharing");
    assert_eq!(n.labels[MAX_CLIENTS], "4");
    assert!(!n.labels.contains_key(PARTITION));
}

#[tokio::test]
async fn bad_sharing_and_partitions_are_refused_before_any_operation_exists() {
    let env = env_up("kr").await;
    let path = format!("{}/nodePools", cluster_path("kr"));
    let mig =
        |accelerator: &str, size: &str| json!({"accelerator": accelerator, "partitionSize": size});
    let shared = |accelerator: &str, strategy: &str, clients: u32| {
        json!({"accelerator": accelerator,
               "sharing": {"strategy": strategy, "maxClientsPerGpu": clients}})
    };
    // (accelerator, partition size, what the message says)
    let partitions = [
        // L4 has no MIG.
        ("l4", "1g.5gb", "nvidia-tesla-a100"),
        // An A100 80GB size on an A100 40GB.
        ("a100", "1g.10gb", A100_40GB_SIZES),
        ("h100", "4g.40gb", H100_SIZES),
    ];
    // (accelerator, sharing strategy, clients per GPU, what the message says)
    let sharings = [
        ("tpu-v5litepod-4", "TIME_SHARING", 2, "TPU"),
        ("l4", "TIME_SHARING", 1, "between 2 and 48"),
        ("l4", "TIME_SHARING", 49, "between 2 and 48"),
        ("l4", "SPACE_SHARING", 2, "TIME_SHARING, MPS"),
    ];
    let mps_on_mig = json!({"accelerator": "a100", "partitionSize": "1g.5gb",
                            "sharing": {"strategy": "MPS", "maxClientsPerGpu": 2}});
    let cases = partitions
        .map(|(accelerator, size, says)| (mig(accelerator, size), "INVALID_PARTITION_SIZE", says))
        .into_iter()
        .chain(sharings.map(|(accelerator, strategy, clients, says)| {
            (
                shared(accelerator, strategy, clients),
                "INVALID_SHARING",
                says,
            )
        }))
        .chain([(mps_on_mig, "INVALID_SHARING", "MPS")]);
    for (body, reason, says) in cases {
        let r = env.app.post(OWNER, &path, body.clone()).await;
        assert_refused(&r, &body, reason, says);
    }
    let r = env
        .app
        .post(
            OWNER,
            &path,
            json!({"accelerator": "a100", "partitionSize": "1g.10gb"}),
        )
        .await;
    assert_eq!(
        r.body["error"]["details"][0]["metadata"]["validPartitionSizes"], A100_40GB_SIZES,
        "{}",
        r.body
    );
    // A sharing without its client count is not a request GKE takes either.
    let r = env
        .app
        .post(
            OWNER,
            &path,
            json!({"accelerator": "l4", "sharing": {"strategy": "MPS"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        env.journal("container", "nodePools.create")
            .await
            .is_empty(),
        "nothing reached GKE"
    );
    assert_eq!(env.pools("kr").await["nodePools"], json!([]));
}

/// The simulated GKE refuses what GKE refuses, whoever sends it.
#[tokio::test]
async fn the_simulated_gke_refuses_bad_partitions_and_sharing_on_the_wire() {
    let env = env_up("kw").await;
    let gcp = env.gcp();
    let pool = |accel: AcceleratorConfig, machine: &str| NodePool {
        name: "raw-pool".into(),
        initial_node_count: Some(0),
        config: Some(NodeConfig {
            machine_type: Some(machine.into()),
            accelerators: vec![accel],
            ..Default::default()
        }),
        ..Default::default()
    };
    let a100 = |size: &str, sharing: Option<(&str, i64)>| AcceleratorConfig {
        accelerator_count: 1,
        accelerator_type: "nvidia-tesla-a100".into(),
        gpu_partition_size: Some(size.into()),
        gpu_sharing_config: sharing.map(|(s, n)| GpuSharingConfig {
            gpu_sharing_strategy: s.into(),
            max_shared_clients_per_gpu: n,
        }),
        ..Default::default()
    };
    let t4 = |s: &str, n: i64| AcceleratorConfig {
        accelerator_count: 1,
        accelerator_type: "nvidia-tesla-t4".into(),
        gpu_sharing_config: Some(GpuSharingConfig {
            gpu_sharing_strategy: s.into(),
            max_shared_clients_per_gpu: n,
        }),
        ..Default::default()
    };
    // The GKE cluster is named after the Kinetic cluster (as the kube endpoint says).
    let gke_name = "kw";
    for (p, says) in [
        (
            pool(a100("1g.10gb", None), "a2-highgpu-1g"),
            "gpuPartitionSize",
        ),
        (
            pool(a100("1g.5gb", Some(("MPS", 2))), "a2-highgpu-1g"),
            "MPS",
        ),
        (
            pool(t4("TIME_SHARING", 49), "n1-standard-4"),
            "maxSharedClientsPerGpu",
        ),
        (pool(t4("SHARED", 2), "n1-standard-4"), "gpuSharingStrategy"),
    ] {
        let e = gcp
            .container
            .create_node_pool(PROJECT, ZONE, gke_name, &p)
            .await
            .expect_err("GKE refuses it");
        let text = e.to_string();
        assert!(
            text.contains("400") || text.contains("INVALID_ARGUMENT"),
            "{text}"
        );
        assert!(text.contains(says), "{says}: {text}");
    }
}

/// NVIDIA MPS needs GKE 1.27.7-gke.1088000: an older cluster is refused, time-sharing
/// (1.23.7-gke.1400) is not.
#[tokio::test]
async fn mps_on_a_gke_version_without_it_is_refused_before_anything_is_queued() {
    let env = env_up_on_gke("1.27.6-gke.1000", "ko").await;
    let mps = json!({"accelerator": "l4", "sharing": {"strategy": "MPS", "maxClientsPerGpu": 2}});
    for q in ["", "?validateOnly=true"] {
        let meta = gke_too_old(&env, "ko", q, mps.clone(), "1.27.6-gke.1000").await;
        assert_eq!(meta["minimumVersion"], "1.27.7-gke.1088000");
    }
    assert_eq!(env.pools("ko").await["nodePools"], json!([]));
    let ts = json!({"accelerator": "l4",
        "sharing": {"strategy": "TIME_SHARING", "maxClientsPerGpu": 2}});
    env.ok(&env.add_pool("ko", ts).await).await;
}
