//! The GKE simulator's records and how they look on the wire and to Kubernetes.
//!
//! Invariant: a record keeps what the caller asked for (`spec`) apart from what GKE
//! decides (status, size, derived shape); the wire view is rebuilt from both on every
//! read, so output fields never leak back into the stored request.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Serialize;

use crate::cloud::gcp::types::container::{
    Cluster, MasterAuth, NodeConfig, NodeManagement, NodePool, NodePoolAutoscaling, Operation,
    RpcStatus, StatusCondition,
};
use crate::domain::gpu_sharing;
use crate::sim::clock::SimTime;
use crate::sim::gcp::compute::catalog;
use crate::sim::kube::{self, PoolNodes};

pub const DEFAULT_VERSION: &str = "1.33.5-gke.1080000";

/// What a pool's nodes are, derived once at validation.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Shape {
    pub machine: String,
    pub vcpus: u32,
    pub spot: bool,
    /// Flex-start VMs: charged to the PREEMPTIBLE_ quota metrics like spot VMs.
    pub flex_start: bool,
    pub accel: Accel,
    /// Hosts of one TPU slice (1 for everything else): node counts are multiples of it.
    pub hosts: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum Accel {
    None,
    Gpu {
        kind: String,
        count: u32,
    },
    Tpu {
        kind: String,
        topology: String,
        chips_per_host: u32,
    },
}

impl Shape {
    /// The accelerator type (GPU type or GKE TPU accelerator), for stockouts.
    pub fn accelerator(&self) -> Option<&str> {
        match &self.accel {
            Accel::None => None,
            Accel::Gpu { kind, .. } | Accel::Tpu { kind, .. } => Some(kind),
        }
    }

    /// Quota consumed by one node: `CPUS`, and the GPU or TPU metric when it has one.
    pub fn units(&self) -> BTreeMap<&'static str, f64> {
        let mut out = BTreeMap::from([("CPUS", f64::from(self.vcpus))]);
        let preemptible = self.spot || self.flex_start;
        let pick =
            |m: Option<&'static str>, s: Option<&'static str>| if preemptible { s } else { m };
        let accel = match &self.accel {
            Accel::None => None,
            Accel::Gpu { kind, count } => catalog::gpu_by_name(kind)
                .and_then(|g| pick(g.metric, g.spot_metric))
                .map(|m| (m, *count)),
            Accel::Tpu { chips_per_host, .. } => catalog::tpu_machine(&self.machine)
                .and_then(|t| pick(t.metric, t.spot_metric))
                .map(|m| (m, *chips_per_host)),
        };
        if let Some((metric, n)) = accel {
            out.insert(metric, f64::from(n));
        }
        out
    }
}

/// One node pool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRec {
    /// As requested, with GKE's defaults filled in.
    pub spec: NodePool,
    pub shape: Shape,
    pub zones: Vec<String>,
    /// Nodes per zone GKE was last asked for.
    pub size: u32,
    pub status: String,
    pub status_message: Option<String>,
    pub conditions: Vec<StatusCondition>,
}

/// One cluster.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterRec {
    pub project: String,
    pub location: String,
    pub region: String,
    /// URL-safe id of the cluster's Kubernetes API (`/kube/{kube_key}`).
    pub kube_key: String,
    /// The simulator's root URL when the cluster was created.
    pub base_url: String,
    /// As requested, without node pools.
    pub spec: Cluster,
    pub pools: Vec<PoolRec>,
    pub id: String,
    pub create_time: String,
    pub status: String,
    pub status_message: Option<String>,
    /// The GKE version it runs (as requested, else the simulator's default).
    pub version: String,
}

impl ClusterRec {
    pub fn self_link(&self) -> String {
        format!(
            "{}/container/v1/projects/{}/locations/{}/clusters/{}",
            self.base_url, self.project, self.location, self.spec.name
        )
    }

    pub fn version(&self) -> String {
        self.version.clone()
    }

    /// The version a cluster created with `spec` runs (`default` unless it names one).
    pub fn version_for(spec: &Cluster, default: &str) -> String {
        spec.initial_cluster_version
            .clone()
            .filter(|v| !v.is_empty() && v != "latest")
            .unwrap_or_else(|| default.to_owned())
    }

    /// The VPC network's short name (`default` when unset).
    pub fn network_name(&self) -> &str {
        self.spec
            .network
            .as_deref()
            .map(|n| n.rsplit('/').next().unwrap_or(n))
            .filter(|n| !n.is_empty())
            .unwrap_or("default")
    }

    pub fn pool(&self, name: &str) -> Option<&PoolRec> {
        self.pools.iter().find(|p| p.spec.name == name)
    }

    pub fn pool_mut(&mut self, name: &str) -> Option<&mut PoolRec> {
        self.pools.iter_mut().find(|p| p.spec.name == name)
    }

    /// The cluster as `clusters.get` returns it.
    pub fn to_wire(&self, kube: &kube::State) -> Cluster {
        let mut c = self.spec.clone();
        let running = matches!(self.status.as_str(), "RUNNING" | "RECONCILING");
        c.node_pools = self.pools.iter().map(|p| p.to_wire(self)).collect();
        c.id = Some(self.id.clone());
        c.status = Some(self.status.clone());
        c.status_message = self.status_message.clone();
        c.location = Some(self.location.clone());
        c.zone = Some(self.location.clone());
        if c.locations.is_empty() {
            c.locations = default_zones(&self.location);
        }
        c.self_link = Some(self.self_link());
        c.create_time = Some(self.create_time.clone());
        c.current_master_version = Some(self.version());
        c.current_node_version = Some(self.version());
        c.network = Some(self.network_name().to_owned());
        if c.subnetwork.is_none() {
            c.subnetwork = Some(self.network_name().to_owned());
        }
        if running {
            c.endpoint = Some(format!("{}/kube/{}", self.base_url, self.kube_key));
            c.master_auth = Some(MasterAuth {
                cluster_ca_certificate: Some(
                    base64::engine::general_purpose::STANDARD.encode(kube::CA_PEM),
                ),
            });
            let nodes: u32 = self
                .pools
                .iter()
                .filter_map(|p| {
                    let n = kube.pool_node_count(&self.kube_key, &p.spec.name)?;
                    Some(n * p.zones.len() as u32)
                })
                .sum();
            c.current_node_count = i32::try_from(nodes).ok();
        }
        c
    }
}

/// Whether `p` asks for flex-start VMs.
pub fn is_flex(p: &NodePool) -> bool {
    p.config.as_ref().and_then(|c| c.flex_start) == Some(true)
}

/// Whether `p` is a queued-provisioning pool.
pub fn is_queued(p: &NodePool) -> bool {
    p.queued_provisioning.as_ref().is_some_and(|q| q.enabled)
}

/// Zones a pool lands in by default: the cluster's zone, or the region's first three.
pub fn default_zones(location: &str) -> Vec<String> {
    if catalog::zone_region(location).is_some() {
        vec![location.to_owned()]
    } else {
        catalog::zones_of(location).into_iter().take(3).collect()
    }
}

impl PoolRec {
    pub fn to_wire(&self, cluster: &ClusterRec) -> NodePool {
        let mut p = self.spec.clone();
        p.status = Some(self.status.clone());
        p.status_message = self.status_message.clone();
        p.conditions = self.conditions.clone();
        p.locations = self.zones.clone();
        p.version = Some(cluster.version());
        p.self_link = Some(format!("{}/nodePools/{}", cluster.self_link(), p.name));
        if p.management.is_none() {
            p.management = Some(NodeManagement {
                auto_repair: Some(true),
                auto_upgrade: Some(true),
            });
        }
        p.instance_group_urls = if self.status == "ERROR" {
            Vec::new()
        } else {
            self.zones
                .iter()
                .map(|z| {
                    format!(
                        "{}/compute/v1/projects/{}/zones/{z}/instanceGroupManagers/gke-{}-{}-grp",
                        cluster.base_url, cluster.project, cluster.spec.name, p.name
                    )
                })
                .collect()
        };
        p
    }

    /// What the Kubernetes side gets: nodes labelled and tainted as GKE does.
    pub fn to_kube(&self, size: u32) -> PoolNodes {
        let config = self.spec.config.clone().unwrap_or_default();
        let mut labels = BTreeMap::from([(
            "cloud.google.com/gke-nodepool".to_owned(),
            self.spec.name.clone(),
        )]);
        let mut taints: Vec<(String, String, String)> = config
            .taints
            .iter()
            .map(|t| (t.key.clone(), t.value.clone(), taint_effect(&t.effect)))
            .collect();
        let mut allocatable = BTreeMap::new();
        match &self.shape.accel {
            Accel::None => {}
            Accel::Gpu { kind, count } => {
                labels.insert("cloud.google.com/gke-accelerator".into(), kind.clone());
                // GKE-managed drivers: GKE labels the nodes with the driver version, and
                // the NVIDIA installer DaemonSet's affinity skips such nodes.
                let managed = config
                    .accelerators
                    .iter()
                    .filter_map(|a| a.gpu_driver_installation_config.as_ref())
                    .map(|c| c.gpu_driver_version.as_str())
                    .find(|v| matches!(*v, "DEFAULT" | "LATEST"));
                if let Some(v) = managed {
                    labels.insert(
                        "cloud.google.com/gke-gpu-driver-version".into(),
                        v.to_ascii_lowercase(),
                    );
                }
                taints.push((
                    "nvidia.com/gpu".into(),
                    "present".into(),
                    "NoSchedule".into(),
                ));
                let units = shared_units(&config, kind, *count, &mut labels);
                allocatable.insert("nvidia.com/gpu".into(), units.to_string());
            }
            Accel::Tpu {
                kind,
                topology,
                chips_per_host,
            } => {
                labels.insert("cloud.google.com/gke-tpu-accelerator".into(), kind.clone());
                labels.insert("cloud.google.com/gke-tpu-topology".into(), topology.clone());
                taints.push((
                    "google.com/tpu".into(),
                    "present".into(),
                    "NoSchedule".into(),
                ));
                allocatable.insert("google.com/tpu".into(), chips_per_host.to_string());
            }
        }
        if self.shape.spot {
            labels.insert("cloud.google.com/gke-spot".into(), "true".into());
        }
        if self.shape.flex_start {
            labels.insert("cloud.google.com/gke-flex-start".into(), "true".into());
        }
        if is_queued(&self.spec) {
            // Queued-provisioning nodes: labelled and tainted so only the pods of a
            // ProvisioningRequest (which tolerate it) land there.
            labels.insert(kube::provisioning_request::QUEUED_KEY.into(), "true".into());
            taints.push((
                kube::provisioning_request::QUEUED_KEY.into(),
                "true".into(),
                "NoSchedule".into(),
            ));
        }
        labels.extend(config.labels);
        let (min, max) = self.bounds(size);
        PoolNodes {
            pool: self.spec.name.clone(),
            machine_type: self.shape.machine.clone(),
            zones: self.zones.clone(),
            min,
            max,
            count: size,
            spot: self.shape.spot,
            labels,
            taints,
            allocatable,
        }
    }

    /// Autoscaling bounds per zone (a fixed size when autoscaling is off).
    fn bounds(&self, size: u32) -> (u32, u32) {
        let Some(a) = self
            .spec
            .autoscaling
            .as_ref()
            .filter(|a| a.enabled == Some(true))
        else {
            return (size, size);
        };
        let zones = self.zones.len().max(1) as i32;
        let per_zone = |direct: Option<i32>, total: Option<i32>| {
            direct
                .or_else(|| total.map(|t| (t + zones - 1) / zones))
                .unwrap_or(0)
                .max(0) as u32
        };
        let min = per_zone(a.min_node_count, a.total_min_node_count);
        let max = per_zone(a.max_node_count, a.total_max_node_count).max(min);
        (min, max)
    }
}

/// What GKE's device plugin advertises for `count` GPUs of `kind` with the pool's
/// `gpuPartitionSize` and `gpuSharingConfig`: `nvidia.com/gpu` = GPUs x partitions per
/// GPU x clients per GPU, and the partition / sharing node labels.
fn shared_units(
    config: &NodeConfig,
    kind: &str,
    count: u32,
    labels: &mut BTreeMap<String, String>,
) -> u32 {
    let Some(a) = config.accelerators.first() else {
        return count;
    };
    let mut units = count;
    if let Some(size) = a.gpu_partition_size.as_deref().filter(|s| !s.is_empty()) {
        units *= gpu_sharing::partitions_per_gpu(kind, size).unwrap_or(1);
        labels.insert(gpu_sharing::PARTITION_LABEL.into(), size.to_owned());
    }
    if let Some(s) = &a.gpu_sharing_config
        && let Some(strategy) = gpu_sharing::Strategy::parse(&s.gpu_sharing_strategy)
    {
        let clients = u32::try_from(s.max_shared_clients_per_gpu)
            .unwrap_or(1)
            .max(1);
        units *= clients;
        labels.insert(
            gpu_sharing::STRATEGY_LABEL.into(),
            strategy.label_value().into(),
        );
        labels.insert(gpu_sharing::MAX_CLIENTS_LABEL.into(), clients.to_string());
    }
    units
}

fn taint_effect(effect: &str) -> String {
    match effect {
        "PREFER_NO_SCHEDULE" => "PreferNoSchedule",
        "NO_EXECUTE" => "NoExecute",
        _ => "NoSchedule",
    }
    .to_owned()
}

/// What an operation does when it reaches DONE.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Effect {
    CreateCluster,
    DeleteCluster,
    CreatePool(String),
    DeletePool(String),
    SetSize(String, u32),
    /// `setAutoscaling`: the pool's new autoscaling config.
    SetAutoscaling(String, NodePoolAutoscaling),
}

/// A failure decided when the operation started, reported when it is DONE.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub error: RpcStatus,
    pub condition: StatusCondition,
    /// The pool the failure is about (cluster creation: the pool that could not get nodes).
    pub pool: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpRec {
    pub op: Operation,
    pub project: String,
    /// The cluster's record key.
    pub cluster: String,
    pub running_at: SimTime,
    pub done_at: SimTime,
    pub effect: Effect,
    pub failure: Option<Failure>,
}

impl OpRec {
    /// "creating node pool np" for GKE's busy message.
    pub fn doing(&self, cluster_name: &str) -> String {
        match &self.effect {
            Effect::CreateCluster => format!("creating cluster {cluster_name}"),
            Effect::DeleteCluster => format!("deleting cluster {cluster_name}"),
            Effect::CreatePool(p) => format!("creating node pool {p}"),
            Effect::DeletePool(p) => format!("deleting node pool {p}"),
            Effect::SetSize(p, _) => format!("resizing node pool {p}"),
            Effect::SetAutoscaling(p, _) => format!("updating the autoscaling of node pool {p}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::gcp::types::container::{NodeConfig, NodePoolAutoscaling, NodeTaint};

    fn pool(accel: Accel, machine: &str, spot: bool) -> PoolRec {
        PoolRec {
            spec: NodePool {
                name: "p".into(),
                autoscaling: Some(NodePoolAutoscaling {
                    enabled: Some(true),
                    min_node_count: Some(0),
                    max_node_count: Some(4),
                    ..Default::default()
                }),
                config: Some(NodeConfig {
                    labels: BTreeMap::from([("kinetic".into(), "true".into())]),
                    taints: vec![NodeTaint {
                        key: "team".into(),
                        value: "a".into(),
                        effect: "NO_EXECUTE".into(),
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            },
            shape: Shape {
                machine: machine.into(),
                vcpus: 4,
                spot,
                flex_start: false,
                accel,
                hosts: 1,
            },
            zones: vec!["us-central1-a".into()],
            size: 2,
            status: "RUNNING".into(),
            status_message: None,
            conditions: Vec::new(),
        }
    }

    #[test]
    fn managed_driver_pools_carry_the_driver_version_label() {
        use crate::cloud::gcp::types::container::{AcceleratorConfig, GpuDriverInstallationConfig};
        let gpu = Accel::Gpu {
            kind: "nvidia-l4".into(),
            count: 1,
        };
        let mut p = pool(gpu, "g2-standard-4", false);
        assert!(
            !p.to_kube(1)
                .labels
                .contains_key("cloud.google.com/gke-gpu-driver-version")
        );
        if let Some(c) = p.spec.config.as_mut() {
            c.accelerators = vec![AcceleratorConfig {
                accelerator_count: 1,
                accelerator_type: "nvidia-l4".into(),
                gpu_driver_installation_config: Some(GpuDriverInstallationConfig {
                    gpu_driver_version: "LATEST".into(),
                }),
                ..Default::default()
            }];
        }
        assert_eq!(
            p.to_kube(1).labels["cloud.google.com/gke-gpu-driver-version"],
            "latest"
        );
    }

    #[test]
    fn gpu_nodes_are_labelled_tainted_and_allocatable() {
        let gpu = Accel::Gpu {
            kind: "nvidia-l4".into(),
            count: 2,
        };
        let k = pool(gpu, "g2-standard-24", true).to_kube(2);
        assert_eq!(k.labels["cloud.google.com/gke-nodepool"], "p");
        assert_eq!(k.labels["cloud.google.com/gke-accelerator"], "nvidia-l4");
        assert_eq!(k.labels["cloud.google.com/gke-spot"], "true");
        assert_eq!(k.labels["kinetic"], "true");
        assert!(k.taints.contains(&(
            "nvidia.com/gpu".into(),
            "present".into(),
            "NoSchedule".into()
        )));
        assert!(
            k.taints
                .contains(&("team".into(), "a".into(), "NoExecute".into()))
        );
        assert_eq!(k.allocatable["nvidia.com/gpu"], "2");
        assert_eq!((k.min, k.max, k.count, k.spot), (0, 4, 2, true));
        let units = pool(
            Accel::Gpu {
                kind: "nvidia-l4".into(),
                count: 2,
            },
            "g2-standard-24",
            true,
        )
        .shape
        .units();
        assert_eq!(units.get("PREEMPTIBLE_NVIDIA_L4_GPUS"), Some(&2.0));
        assert_eq!(units.get("NVIDIA_L4_GPUS"), None);
    }

    #[test]
    fn tpu_nodes_carry_accelerator_and_topology() {
        let tpu = Accel::Tpu {
            kind: "tpu-v5-lite-podslice".into(),
            topology: "4x4".into(),
            chips_per_host: 4,
        };
        let k = pool(tpu, "ct5lp-hightpu-4t", false).to_kube(4);
        assert_eq!(
            k.labels["cloud.google.com/gke-tpu-accelerator"],
            "tpu-v5-lite-podslice"
        );
        assert_eq!(k.labels["cloud.google.com/gke-tpu-topology"], "4x4");
        assert!(!k.labels.contains_key("cloud.google.com/gke-spot"));
        assert!(k.taints.contains(&(
            "google.com/tpu".into(),
            "present".into(),
            "NoSchedule".into()
        )));
        assert_eq!(k.allocatable["google.com/tpu"], "4");
        let cpu = pool(Accel::None, "e2-standard-4", false).to_kube(1);
        assert!(cpu.allocatable.is_empty());
        assert_eq!(cpu.taints.len(), 1, "only the pool's own taint");
    }
}
