//! The Google resources `up` and `pool add` create, built from the cluster's names and
//! the pool records: pure functions, so the journal tests and the workflow agree on every
//! field (names, labels, taints, scopes, lifecycle, placement, max run duration,
//! reservation affinity).
//!
//! Invariant: a pool's wire form is derived from its record alone, so spot and
//! reservation survive every later operation (Kinetic #312).

use std::collections::BTreeMap;

use crate::cloud::gcp::types::artifact_registry::Repository;
use crate::cloud::gcp::types::compute::{Network, Router, RouterNat};
use crate::cloud::gcp::types::container::{
    AcceleratorConfig, AddonsConfig, Cluster, GcsFuseCsiDriverConfig, GpuDriverInstallationConfig,
    GpuSharingConfig, IpAllocationPolicy, NodeConfig, NodeManagement, NodePool,
    NodePoolAutoscaling, NodeTaint, PlacementPolicy, PrivateClusterConfig, ReleaseChannel,
    ReservationAffinity, WorkloadIdentityConfig, WorkloadMetadataConfig,
};
use crate::cloud::gcp::types::storage::{
    Bucket, IamConfiguration, Lifecycle, LifecycleRule, UniformBucketLevelAccess, Versioning,
};
use crate::domain::accelerators::Kind;
use crate::domain::resource_names::{ClusterNames, LABELS};
use crate::plan::Account;
use crate::store::PoolSpecRecord;

/// OAuth scope of every node.
pub const NODE_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

pub fn labels(cluster: Option<&str>) -> BTreeMap<String, String> {
    let mut l: BTreeMap<String, String> = LABELS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Some(c) = cluster {
        l.insert("kinetic-cluster".into(), c.to_owned());
    }
    l
}

pub use crate::domain::resource_names::{DEFAULT_POOL, OURS, is_ours};

pub use super::flex_wire::flex_pool;
pub use crate::plan::BucketKind;

pub fn bucket(n: &ClusterNames, kind: BucketKind) -> Bucket {
    let (name, location, cluster) = match kind {
        BucketKind::State => (&n.state_bucket, "US".to_owned(), None),
        BucketKind::Jobs => (
            &n.jobs_bucket,
            n.jobs_bucket_location.to_uppercase(),
            Some(n.cluster.as_str()),
        ),
        BucketKind::Builds => (
            &n.builds_bucket,
            n.builds_bucket_location.to_uppercase(),
            Some(n.cluster.as_str()),
        ),
    };
    let uniform = IamConfiguration {
        uniform_bucket_level_access: Some(UniformBucketLevelAccess {
            enabled: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    Bucket {
        name: name.clone(),
        location,
        iam_configuration: Some(uniform),
        versioning: (kind == BucketKind::State).then_some(Versioning { enabled: true }),
        lifecycle: (kind != BucketKind::State).then(|| Lifecycle {
            rule: vec![LifecycleRule::delete_after_days(30)],
        }),
        labels: labels(cluster),
        ..Default::default()
    }
}

pub fn network(n: &ClusterNames) -> Network {
    Network {
        name: n.network.clone(),
        description: Some(format!("kinetic: network of cluster {}", n.cluster)),
        auto_create_subnetworks: Some(true),
        ..Default::default()
    }
}

/// A network is ours when its description says so (networks carry no labels).
pub fn network_is_ours(net: &Network) -> bool {
    net.description
        .as_deref()
        .is_some_and(|d| d.starts_with("kinetic"))
}

pub fn network_url(n: &ClusterNames) -> String {
    format!(
        "https://www.googleapis.com/compute/v1/projects/{}/global/networks/{}",
        n.project, n.network
    )
}

pub fn router(n: &ClusterNames) -> Router {
    Router {
        name: n.router.clone(),
        description: Some(format!("kinetic: Cloud NAT of cluster {}", n.cluster)),
        network: network_url(n),
        nats: vec![RouterNat {
            name: n.nat.clone(),
            nat_ip_allocate_option: "AUTO_ONLY".into(),
            source_subnetwork_ip_ranges_to_nat: "ALL_SUBNETWORKS_ALL_IP_RANGES".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A router is ours when it routes our network.
pub fn router_is_ours(n: &ClusterNames, r: &Router) -> bool {
    r.network
        .ends_with(&format!("/global/networks/{}", n.network))
}

/// Whether a router carries our Cloud NAT (by name, with automatic IPs for every subnet).
pub fn router_has_nat(n: &ClusterNames, r: &Router) -> bool {
    r.nats.iter().any(|nat| {
        nat.name == n.nat
            && nat.nat_ip_allocate_option == "AUTO_ONLY"
            && nat.source_subnetwork_ip_ranges_to_nat == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    })
}

pub fn repository(n: &ClusterNames) -> Repository {
    Repository {
        format: "DOCKER".into(),
        description: format!("kinetic: images of cluster {}", n.cluster),
        labels: labels(Some(&n.cluster)),
        ..Default::default()
    }
}

/// (display name, description) of the node and build service accounts.
pub fn service_account_text(n: &ClusterNames, account: Account) -> (String, String) {
    let what = match account {
        Account::Build => "builds",
        Account::Node => "nodes",
    };
    (
        format!("kinetic {what} ({})", n.cluster),
        format!("kinetic: {what} of cluster {}", n.cluster),
    )
}

fn node_config_base(n: &ClusterNames) -> NodeConfig {
    NodeConfig {
        service_account: Some(n.node_sa_email()),
        oauth_scopes: vec![NODE_SCOPE.into()],
        workload_metadata_config: Some(WorkloadMetadataConfig {
            mode: "GKE_METADATA".into(),
        }),
        resource_labels: labels(Some(&n.cluster)),
        ..Default::default()
    }
}

fn management() -> NodeManagement {
    NodeManagement {
        auto_repair: Some(true),
        auto_upgrade: Some(true),
    }
}

/// The GKE cluster with its default pool (1 x e2-standard-4, 50 GB); accelerator pools
/// are created by their own steps.
pub fn cluster(n: &ClusterNames) -> Cluster {
    let default_pool = NodePool {
        name: DEFAULT_POOL.into(),
        initial_node_count: Some(1),
        config: Some(NodeConfig {
            machine_type: Some("e2-standard-4".into()),
            disk_size_gb: Some(50),
            ..node_config_base(n)
        }),
        management: Some(management()),
        ..Default::default()
    };
    Cluster {
        name: n.cluster.clone(),
        description: Some("kinetic: created by kineticd".into()),
        release_channel: Some(ReleaseChannel {
            channel: "STABLE".into(),
        }),
        network: Some(n.network.clone()),
        private_cluster_config: Some(PrivateClusterConfig {
            enable_private_nodes: Some(true),
            enable_private_endpoint: Some(false),
            master_ipv4_cidr_block: Some("172.16.0.0/28".into()),
        }),
        ip_allocation_policy: Some(IpAllocationPolicy {
            use_ip_aliases: Some(true),
            ..Default::default()
        }),
        workload_identity_config: Some(WorkloadIdentityConfig {
            workload_pool: n.workload_pool.clone(),
        }),
        addons_config: Some(AddonsConfig {
            gcs_fuse_csi_driver_config: Some(GcsFuseCsiDriverConfig { enabled: true }),
        }),
        resource_labels: labels(None),
        node_pools: vec![default_pool],
        ..Default::default()
    }
}

/// An accelerator pool from its record (a flex-start one through [`flex_pool`]).
pub fn node_pool(n: &ClusterNames, p: &PoolSpecRecord) -> NodePool {
    let pool = base_pool(n, p);
    match p.provisioning {
        Some(mode) if mode.is_flex_start() => flex_pool(pool, p, mode),
        _ => pool,
    }
}

fn base_pool(n: &ClusterNames, p: &PoolSpecRecord) -> NodePool {
    let accelerators = match (p.kind, &p.gke_accelerator_type) {
        (Kind::Gpu, Some(t)) => vec![AcceleratorConfig {
            accelerator_count: p.accelerator_count.unwrap_or(1),
            accelerator_type: t.clone(),
            gpu_driver_installation_config: p.driver_version.as_ref().map(|v| {
                GpuDriverInstallationConfig {
                    gpu_driver_version: v.clone(),
                }
            }),
            gpu_partition_size: p.partition_size.clone(),
            gpu_sharing_config: p.sharing.as_ref().map(|s| GpuSharingConfig {
                gpu_sharing_strategy: s.strategy.as_str().to_owned(),
                max_shared_clients_per_gpu: i64::from(s.max_clients_per_gpu),
            }),
        }],
        _ => Vec::new(),
    };
    let multi_host = p.hosts_per_slice.is_some_and(|h| h > 1);
    NodePool {
        name: p.pool_id.clone(),
        initial_node_count: Some(p.min_nodes as i32),
        locations: p.zones.clone(),
        config: Some(NodeConfig {
            machine_type: Some(p.machine_type.clone()),
            accelerators,
            spot: p.spot.then_some(true),
            labels: p.labels.clone(),
            taints: p
                .taints
                .iter()
                .map(|t| NodeTaint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: t.effect.as_str().to_owned(),
                })
                .collect(),
            reservation_affinity: p.reservation.as_ref().map(|r| ReservationAffinity {
                consume_reservation_type: "SPECIFIC_RESERVATION".into(),
                key: Some("compute.googleapis.com/reservation-name".into()),
                values: vec![r.clone()],
            }),
            max_run_duration: p.max_run_duration.clone(),
            ..node_config_base(n)
        }),
        autoscaling: Some(NodePoolAutoscaling {
            enabled: Some(true),
            min_node_count: Some(p.min_nodes as i32),
            max_node_count: Some(p.max_nodes as i32),
            location_policy: p.location_policy.clone(),
            ..Default::default()
        }),
        management: Some(management()),
        placement_policy: multi_host.then(|| PlacementPolicy {
            kind: Some("COMPACT".into()),
            tpu_topology: p.tpu_topology.clone(),
        }),
        ..Default::default()
    }
}
