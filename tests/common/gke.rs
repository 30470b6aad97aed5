//! GKE wire objects the tests build again and again. Only the shape every test agrees on
//! lives here; a test adds what it checks on top.

use std::time::Duration;

use kineticd::cloud::gcp::GcpClients;
use kineticd::cloud::gcp::types::container::{
    AcceleratorConfig, Cluster, NodeConfig, NodePool, NodePoolAutoscaling, Operation,
};
use kineticd::cloud::gcp::types::reservation::{
    AllocationSpecificSkuReservation, Reservation, ReservedAccelerator, ReservedInstanceProperties,
};
use tokio_util::sync::CancellationToken;

/// GKE's node labels of GPU partitions (multi-instance GPUs) and of GPU sharing.
pub const PARTITION: &str = "cloud.google.com/gke-gpu-partition-size";
pub const STRATEGY: &str = "cloud.google.com/gke-gpu-sharing-strategy";
pub const MAX_CLIENTS: &str = "cloud.google.com/gke-max-shared-clients-per-gpu";

/// A node pool of `nodes` `machine` nodes, autoscaling `nodes..nodes+10`, each with
/// `count` `accel` accelerators (none when `accel` is empty).
pub fn autoscaled_pool(name: &str, machine: &str, accel: &str, count: i64, nodes: i32) -> NodePool {
    let accelerators = if accel.is_empty() {
        vec![]
    } else {
        vec![AcceleratorConfig {
            accelerator_count: count,
            accelerator_type: accel.into(),
            ..Default::default()
        }]
    };
    NodePool {
        name: name.into(),
        initial_node_count: Some(nodes),
        autoscaling: Some(NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(nodes),
            max_node_count: Some(nodes + 10),
            ..Default::default()
        }),
        config: Some(NodeConfig {
            machine_type: Some(machine.into()),
            accelerators,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The cluster's `default-pool` as Kinetic creates it: one small system node.
pub fn default_pool() -> NodePool {
    NodePool {
        name: "default-pool".into(),
        initial_node_count: Some(1),
        config: Some(NodeConfig {
            machine_type: Some("e2-standard-4".into()),
            disk_size_gb: Some(50),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Wait (up to `wait`) for GKE operation `op`, which must succeed; `what` names it.
pub async fn gke_done(gcp: &GcpClients, op: &Operation, wait: Duration, what: &str) {
    gcp.container
        .wait_operation(op, &CancellationToken::new(), wait)
        .await
        .unwrap_or_else(|e| panic!("{what}: {e:?}"));
}

/// Create `cluster` in `project`/`zone` through the production GKE client and wait (up to
/// `wait`) for its operation; the cluster as GKE then reports it.
pub async fn create_cluster_and_wait(
    gcp: &GcpClients,
    project: &str,
    zone: &str,
    cluster: &Cluster,
    wait: Duration,
) -> Cluster {
    let op = gcp
        .container
        .create_cluster(project, zone, cluster)
        .await
        .expect("cluster");
    gke_done(gcp, &op, wait, "cluster done").await;
    gcp.container
        .get_cluster(project, zone, &cluster.name)
        .await
        .expect("get cluster")
}

/// A specific reservation `name` of `count` g2-standard-4 VMs with one L4 each.
pub fn l4_reservation(name: &str, count: i64) -> Reservation {
    Reservation {
        name: name.into(),
        specific_reservation: Some(AllocationSpecificSkuReservation {
            count: Some(count),
            instance_properties: Some(ReservedInstanceProperties {
                machine_type: "g2-standard-4".into(),
                guest_accelerators: vec![ReservedAccelerator {
                    accelerator_type: "nvidia-l4".into(),
                    accelerator_count: Some(1),
                }],
                ..Default::default()
            }),
            ..Default::default()
        }),
        specific_reservation_required: Some(true),
        ..Default::default()
    }
}
