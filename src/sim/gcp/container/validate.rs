//! GKE's request validation: names, cluster settings, and node pool shapes (machine type
//! vs accelerator type vs count, TPU topologies and slice host counts).
//!
//! Invariant: a pool that passes [`pool`] has a known machine type and a consistent
//! accelerator shape, so quota accounting and node labelling never meet an unknown pool.

use crate::cloud::gcp::types::container::{
    AcceleratorConfig, Cluster, NodeConfig, NodePool, NodePoolAutoscaling,
};
use crate::domain::gpu_sharing;
use crate::sim::error::{Flavor, SimError};
use crate::sim::gcp::compute::catalog::{self, TpuMachine};

use super::model::{Accel, Shape};

fn invalid(msg: impl Into<String>) -> SimError {
    SimError::invalid(Flavor::Aip193, msg)
}

/// GKE resource names: <= 40, lowercase letters, digits and hyphens, starting with a
/// letter and not ending with a hyphen.
fn gke_name(kind: &str, name: &str) -> Result<(), SimError> {
    if crate::sim::gcp::is_lowercase_label(name, 40) {
        Ok(())
    } else if name.is_empty() {
        Err(invalid(format!("{kind}.name is required.")))
    } else {
        Err(invalid(format!(
            "Invalid value for field \"{kind}.name\": \"{name}\". The name must be at most 40 characters, \
             consist of lowercase letters, numbers and hyphens, start with a letter and not end with a hyphen."
        )))
    }
}

fn label_map(field: &str, m: &std::collections::BTreeMap<String, String>) -> Result<(), SimError> {
    for (k, v) in m {
        let key_ok = k.len() <= 63
            && k.starts_with(|c: char| c.is_ascii_lowercase())
            && k.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        let val_ok = v.len() <= 63
            && v.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !key_ok || !val_ok {
            return Err(invalid(format!(
                "Invalid value for field \"{field}\": label {k:?}={v:?} is not a valid GCE label."
            )));
        }
    }
    Ok(())
}

/// Everything about a cluster except its node pools.
pub fn cluster(project: &str, c: &Cluster) -> Result<(), SimError> {
    gke_name("cluster", &c.name)?;
    if let Some(rc) = &c.release_channel
        && !["", "UNSPECIFIED", "RAPID", "REGULAR", "STABLE", "EXTENDED"]
            .contains(&rc.channel.as_str())
    {
        return Err(invalid(format!(
            "Invalid value for field \"cluster.releaseChannel.channel\": \"{}\".",
            rc.channel
        )));
    }
    if let Some(wi) = &c.workload_identity_config {
        let want = format!("{project}.svc.id.goog");
        if wi.workload_pool != want {
            return Err(invalid(format!(
                "Workload Identity pool must be \"{want}\", got \"{}\".",
                wi.workload_pool
            )));
        }
    }
    if let Some(cidr) = c
        .private_cluster_config
        .as_ref()
        .and_then(|p| p.master_ipv4_cidr_block.as_deref())
        && !cidr.ends_with("/28")
    {
        return Err(invalid(format!(
            "Invalid master authorized CIDR block \"{cidr}\": the master CIDR block must be a /28."
        )));
    }
    if c.initial_node_count.is_some() && !c.node_pools.is_empty() {
        return Err(invalid(
            "Cannot specify both cluster.initialNodeCount and cluster.nodePools.",
        ));
    }
    if c.initial_node_count.is_some_and(|n| n < 0) {
        return Err(invalid("cluster.initialNodeCount must be >= 0."));
    }
    label_map("cluster.resourceLabels", &c.resource_labels)?;
    let mut seen = std::collections::BTreeSet::new();
    for p in &c.node_pools {
        if !seen.insert(p.name.as_str()) {
            return Err(invalid(format!("Duplicate node pool name \"{}\".", p.name)));
        }
    }
    Ok(())
}

/// A pool, validated against its cluster's location; returns the pool with GKE's
/// defaults, its shape, zones and initial size per zone.
pub fn pool(p: &NodePool, location: &str) -> Result<(NodePool, Shape, Vec<String>), SimError> {
    gke_name("nodePool", &p.name)?;
    let region = catalog::region_of(location).unwrap_or(location);
    let zones = if p.locations.is_empty() {
        super::model::default_zones(location)
    } else {
        p.locations.clone()
    };
    for z in &zones {
        if catalog::zone_region(z) != Some(region) {
            return Err(invalid(format!(
                "Node pool location \"{z}\" is not a zone of the cluster's region \"{region}\"."
            )));
        }
    }
    let mut spec = p.clone();
    let mut config = spec.config.clone().unwrap_or_default();
    let machine = config
        .machine_type
        .get_or_insert_with(|| "e2-medium".to_owned())
        .clone();
    config.disk_size_gb.get_or_insert(100);
    config
        .disk_type
        .get_or_insert_with(|| "pd-balanced".to_owned());
    config
        .image_type
        .get_or_insert_with(|| "COS_CONTAINERD".to_owned());
    config
        .service_account
        .get_or_insert_with(|| "default".to_owned());
    node_config(&config)?;
    let vcpus = catalog::vcpus(&machine).ok_or_else(|| {
        invalid(format!(
            "Machine type \"{machine}\" does not exist in zone \"{}\".",
            zones.first().map(String::as_str).unwrap_or(location)
        ))
    })?;
    let spot = config.spot == Some(true);
    let (accel, hosts) = match catalog::tpu_machine(&machine) {
        Some(t) => tpu_shape(p, &config, t, &zones)?,
        None => (gpu_shape(&config, &machine)?, 1),
    };
    let shape = Shape {
        machine,
        vcpus,
        spot,
        flex_start: config.flex_start == Some(true),
        accel,
        hosts,
    };
    if p.initial_node_count.is_some_and(|n| n < 0) {
        return Err(invalid("nodePool.initialNodeCount must be >= 0."));
    }
    node_count(
        &shape,
        p.initial_node_count.unwrap_or(0),
        "initialNodeCount",
    )?;
    if let Some(a) = &p.autoscaling {
        autoscaling(&shape, a)?;
    }
    spec.config = Some(config);
    spec.locations = zones.clone();
    Ok((spec, shape, zones))
}

/// An enabled autoscaling config: `0 <= min <= max`, `max >= 1`, whole slices, a known
/// location policy (a disabled one is not checked, as GKE ignores its bounds).
pub fn autoscaling(shape: &Shape, a: &NodePoolAutoscaling) -> Result<(), SimError> {
    if a.enabled != Some(true) {
        return Ok(());
    }
    let per_zone = a.min_node_count.is_some() || a.max_node_count.is_some();
    if per_zone && (a.total_min_node_count.is_some() || a.total_max_node_count.is_some()) {
        return Err(invalid(
            "Autoscaling total_*_node_count fields are mutually exclusive with the per-zone *_node_count fields.",
        ));
    }
    let min = a.min_node_count.or(a.total_min_node_count).unwrap_or(0);
    let max = a.max_node_count.or(a.total_max_node_count).unwrap_or(0);
    if min < 0 || max < 1 || min > max {
        return Err(invalid(format!(
            "Invalid autoscaling limits: minNodeCount {min} and maxNodeCount {max}; need 0 <= min <= max and max >= 1."
        )));
    }
    if let Some(lp) = &a.location_policy
        && !["BALANCED", "ANY", "LOCATION_POLICY_UNSPECIFIED"].contains(&lp.as_str())
    {
        return Err(invalid(format!(
            "Invalid autoscaling locationPolicy \"{lp}\"."
        )));
    }
    node_count(shape, min, "autoscaling.minNodeCount")?;
    node_count(shape, max, "autoscaling.maxNodeCount")?;
    Ok(())
}

/// Node counts of multi-host TPU slices must be whole slices.
pub fn node_count(shape: &Shape, n: i32, field: &str) -> Result<(), SimError> {
    if n < 0 {
        return Err(invalid(format!("{field} must be >= 0.")));
    }
    if shape.hosts > 1 && n % shape.hosts as i32 != 0 {
        return Err(invalid(format!(
            "{field} {n} is not a multiple of {} (the number of hosts of one {} slice); \
             multi-host TPU node pools scale by whole slices.",
            shape.hosts, shape.machine
        )));
    }
    Ok(())
}

fn node_config(config: &NodeConfig) -> Result<(), SimError> {
    for t in &config.taints {
        if t.key.is_empty()
            || !["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"].contains(&t.effect.as_str())
        {
            return Err(invalid(format!(
                "Invalid taint {}={}:{}: key is required and effect must be NO_SCHEDULE, PREFER_NO_SCHEDULE or NO_EXECUTE.",
                t.key, t.value, t.effect
            )));
        }
    }
    label_map("nodePool.config.resourceLabels", &config.resource_labels)?;
    if let Some(d) = &config.max_run_duration {
        let ok = d
            .strip_suffix('s')
            .is_some_and(|n| !n.is_empty() && n.parse::<f64>().is_ok_and(|v| v > 0.0));
        if !ok {
            return Err(invalid(format!(
                "Invalid value for field \"nodePool.config.maxRunDuration\": \"{d}\" (a duration such as \"86400s\")."
            )));
        }
    }
    if let Some(r) = &config.reservation_affinity {
        let kind = r.consume_reservation_type.as_str();
        if ![
            "NO_RESERVATION",
            "ANY_RESERVATION",
            "SPECIFIC_RESERVATION",
            "UNSPECIFIED",
        ]
        .contains(&kind)
        {
            return Err(invalid(format!(
                "Invalid reservationAffinity.consumeReservationType \"{kind}\"."
            )));
        }
        if kind == "SPECIFIC_RESERVATION"
            && (r.key.as_deref().unwrap_or("").is_empty() || r.values.is_empty())
        {
            return Err(invalid(
                "SPECIFIC_RESERVATION needs reservationAffinity.key and values.",
            ));
        }
    }
    if let Some(w) = &config.workload_metadata_config
        && !["GKE_METADATA", "GCE_METADATA", "MODE_UNSPECIFIED"].contains(&w.mode.as_str())
    {
        return Err(invalid(format!(
            "Invalid workloadMetadataConfig.mode \"{}\".",
            w.mode
        )));
    }
    Ok(())
}

fn gpu_shape(config: &NodeConfig, machine: &str) -> Result<Accel, SimError> {
    let bundled = catalog::bundled_gpu(machine);
    let Some(a) = config.accelerators.first() else {
        // A2/A3/A4/G2 machine types come with their GPUs.
        return Ok(match bundled {
            Some((kind, count)) => Accel::Gpu {
                kind: kind.to_owned(),
                count,
            },
            None => Accel::None,
        });
    };
    if config.accelerators.len() > 1 {
        return Err(invalid(
            "Only one accelerator type per node pool is supported.",
        ));
    }
    if let Some(g) = &a.gpu_driver_installation_config
        && ![
            "",
            "GPU_DRIVER_VERSION_UNSPECIFIED",
            "INSTALLATION_DISABLED",
            "DEFAULT",
            "LATEST",
        ]
        .contains(&g.gpu_driver_version.as_str())
    {
        return Err(invalid(format!(
            "Invalid gpuDriverVersion \"{}\".",
            g.gpu_driver_version
        )));
    }
    let kind = a.accelerator_type.as_str();
    let Some(gpu) = catalog::gpu_by_name(kind) else {
        return Err(invalid(format!(
            "Accelerator type \"{kind}\" does not exist (TPUs are chosen by machine type, e.g. ct5lp-hightpu-4t)."
        )));
    };
    let count = u32::try_from(a.accelerator_count).unwrap_or(0);
    if count == 0 {
        return Err(invalid(format!(
            "acceleratorCount for {kind} must be at least 1."
        )));
    }
    let fits = match bundled {
        Some((b_kind, b_count)) => {
            if b_kind != kind || b_count != count {
                return Err(invalid(format!(
                    "Accelerator {kind} x {count} is not supported with machine type {machine}: \
                     {machine} comes with {b_kind} x {b_count}."
                )));
            }
            true
        }
        None => machine.starts_with("n1-") && gpu.n1_counts.contains(&count),
    };
    if !fits {
        let need = if gpu.n1_counts.is_empty() {
            format!(
                "{kind} needs its own machine family (e.g. {})",
                family_hint(kind)
            )
        } else {
            format!(
                "{kind} attaches to n1-* machine types in counts {:?}",
                gpu.n1_counts
            )
        };
        return Err(invalid(format!(
            "Accelerator {kind} x {count} is not supported with machine type {machine}: {need}."
        )));
    }
    gpu_sharing(a, kind)?;
    Ok(Accel::Gpu {
        kind: kind.to_owned(),
        count,
    })
}

/// `gpuPartitionSize` (a MIG size of this GPU model) and `gpuSharingConfig` (a known
/// strategy, 2..=48 clients; MPS only on whole GPUs).
fn gpu_sharing(a: &AcceleratorConfig, kind: &str) -> Result<(), SimError> {
    if let Some(size) = a.gpu_partition_size.as_deref().filter(|s| !s.is_empty())
        && gpu_sharing::partitions_per_gpu(kind, size).is_none()
    {
        let sizes: Vec<&str> = gpu_sharing::partition_sizes(kind)
            .iter()
            .map(|(s, _)| *s)
            .collect();
        return Err(invalid(if sizes.is_empty() {
            format!("GPU partitioning is not supported for accelerator type {kind}.")
        } else {
            format!(
                "Invalid value for field \"acceleratorConfig.gpuPartitionSize\": \"{size}\" is not supported for {kind}; supported sizes: {}.",
                sizes.join(", ")
            )
        }));
    }
    let Some(s) = &a.gpu_sharing_config else {
        return Ok(());
    };
    let Some(strategy) = gpu_sharing::Strategy::parse(&s.gpu_sharing_strategy) else {
        return Err(invalid(format!(
            "Invalid value for field \"gpuSharingConfig.gpuSharingStrategy\": \"{}\" (TIME_SHARING or MPS).",
            s.gpu_sharing_strategy
        )));
    };
    let (lo, hi) = (gpu_sharing::MIN_CLIENTS, gpu_sharing::MAX_CLIENTS);
    if !(i64::from(lo)..=i64::from(hi)).contains(&s.max_shared_clients_per_gpu) {
        return Err(invalid(format!(
            "Invalid value for field \"gpuSharingConfig.maxSharedClientsPerGpu\": {}; must be between {lo} and {hi}.",
            s.max_shared_clients_per_gpu
        )));
    }
    if strategy == gpu_sharing::Strategy::Mps && a.gpu_partition_size.is_some() {
        return Err(invalid(
            "NVIDIA MPS cannot be used with GPU partitions (gpuPartitionSize).",
        ));
    }
    Ok(())
}

fn family_hint(kind: &str) -> &'static str {
    match kind {
        "nvidia-l4" => "g2-standard-4",
        "nvidia-tesla-a100" => "a2-highgpu-1g",
        "nvidia-a100-80gb" => "a2-ultragpu-1g",
        "nvidia-h100-80gb" => "a3-highgpu-8g",
        "nvidia-h100-mega-80gb" => "a3-megagpu-8g",
        "nvidia-h200-141gb" => "a3-ultragpu-8g",
        _ => "a4-highgpu-8g",
    }
}

fn tpu_shape(
    p: &NodePool,
    config: &NodeConfig,
    t: &TpuMachine,
    zones: &[String],
) -> Result<(Accel, u32), SimError> {
    if !config.accelerators.is_empty() {
        return Err(invalid(format!(
            "Machine type {} is a TPU machine type: do not set nodePool.config.accelerators.",
            t.machine
        )));
    }
    let placement = p.placement_policy.clone().unwrap_or_default();
    let topology = placement
        .tpu_topology
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| t.topologies[0].to_owned());
    if !t.topologies.contains(&topology.as_str()) {
        return Err(invalid(format!(
            "Invalid TPU topology \"{topology}\" for machine type {}; valid topologies: {}.",
            t.machine,
            t.topologies.join(", ")
        )));
    }
    let chips = catalog::topology_chips(&topology).unwrap_or(t.chips_per_host);
    let hosts = (chips / t.chips_per_host).max(1);
    if hosts > 1 {
        if placement.kind.as_deref() != Some("COMPACT") || placement.tpu_topology.is_none() {
            return Err(invalid(format!(
                "Multi-host TPU slice {topology} ({hosts} hosts of {}) needs placementPolicy {{type: COMPACT, tpuTopology: \"{topology}\"}}.",
                t.machine
            )));
        }
        if zones.len() != 1 {
            return Err(invalid(
                "A multi-host TPU node pool must be in exactly one zone.",
            ));
        }
    }
    Ok((
        Accel::Tpu {
            kind: t.accelerator.to_owned(),
            topology,
            chips_per_host: t.chips_per_host,
        },
        hosts,
    ))
}
