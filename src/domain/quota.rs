//! Regional Compute Engine quota metrics for accelerators, and what a new pool needs.
//!
//! Invariant: a pool is checked against the metric Compute Engine charges it to (spot
//! and flex-start pools against the PREEMPTIBLE_ metric), counting the accelerators of the nodes the
//! pool must be able to start: its minimum, and at least one node (one slice for a
//! multi-host TPU), since a pool that cannot start a single node is of no use.

use super::accelerators::Resolved;
use super::provisioning::Provisioning;

/// The on-demand quota metric of a GKE accelerator type, if Compute has one.
fn base_metric(gke_accelerator_type: &str) -> Option<&'static str> {
    Some(match gke_accelerator_type {
        "nvidia-l4" => "NVIDIA_L4_GPUS",
        "nvidia-tesla-t4" => "NVIDIA_T4_GPUS",
        "nvidia-tesla-v100" => "NVIDIA_V100_GPUS",
        "nvidia-tesla-p4" => "NVIDIA_P4_GPUS",
        "nvidia-tesla-p100" => "NVIDIA_P100_GPUS",
        "nvidia-tesla-a100" => "NVIDIA_A100_GPUS",
        "nvidia-a100-80gb" => "NVIDIA_A100_80GB_GPUS",
        "nvidia-h100-80gb" => "NVIDIA_H100_GPUS",
        "tpu-v5-lite-podslice" => "TPU_LITE_PODSLICE_V5",
        "tpu-v4-podslice" => "TPU_PODSLICE_V4",
        _ => return None,
    })
}

/// The metric a pool of `acc` is charged to.
pub fn metric(acc: &Resolved, spot: bool) -> Option<String> {
    let base = base_metric(acc.gke_accelerator_type)?;
    Some(if spot {
        format!("PREEMPTIBLE_{base}")
    } else {
        base.to_owned()
    })
}

/// The metric a pool of `acc` provisioned in `mode` is charged to. Flex-start VMs
/// (with or without queued provisioning) "consume preemptible quota" (Google Cloud
/// blog, "GPUs when you need them: Introducing Flex-start VMs",
/// cloud.google.com/blog/products/compute/introducing-flex-start-vms-for-the-compute-engine-instance-api),
/// like spot VMs.
pub fn metric_for(acc: &Resolved, mode: Provisioning) -> Option<String> {
    metric(
        acc,
        acc.spot || matches!(mode, Provisioning::Spot) || mode.is_flex_start(),
    )
}

/// Whether a recorded pool (its `spot` flag and stored mode) is charged to the
/// PREEMPTIBLE_ metrics: spot and flex-start pools are.
pub fn preemptible(spot: bool, mode: Option<Provisioning>) -> bool {
    spot || mode.is_some_and(Provisioning::is_flex_start)
}

/// Accelerators (GPUs or TPU chips) a pool with `min_nodes` needs to start.
pub fn needed(acc: &Resolved, min_nodes: u32) -> u64 {
    let nodes = min_nodes.max(acc.hosts_per_slice.unwrap_or(1).max(1));
    u64::from(acc.per_node()) * u64::from(nodes)
}

/// A failed pre-check: the numbers the API error reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Shortfall {
    pub metric: String,
    pub limit: f64,
    pub usage: f64,
    pub needed: u64,
}

/// Check `needed` against a metric's limit and usage.
pub fn check(metric: &str, limit: f64, usage: f64, needed: u64) -> Result<(), Shortfall> {
    if usage + needed as f64 > limit {
        Err(Shortfall {
            metric: metric.to_owned(),
            limit,
            usage,
            needed,
        })
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::testing::acc;

    #[test]
    fn metrics_and_needs() {
        assert_eq!(metric(&acc("l4"), false).as_deref(), Some("NVIDIA_L4_GPUS"));
        assert_eq!(
            metric(&acc("l4"), true).as_deref(),
            Some("PREEMPTIBLE_NVIDIA_L4_GPUS")
        );
        assert_eq!(needed(&acc("a100x4"), 0), 4, "one node at least");
        assert_eq!(needed(&acc("a100x4"), 3), 12);
        // v5litepod-16: 4 hosts of 4 chips; one whole slice.
        assert_eq!(needed(&acc("tpu-v5litepod-16"), 0), 16);
        assert_eq!(
            metric(&acc("tpu-v5litepod-16"), false).as_deref(),
            Some("TPU_LITE_PODSLICE_V5")
        );
        assert_eq!(
            metric_for(&acc("h100x8"), Provisioning::FlexStart).as_deref(),
            Some("PREEMPTIBLE_NVIDIA_H100_GPUS")
        );
        assert_eq!(
            metric_for(&acc("l4"), Provisioning::Queued).as_deref(),
            Some("PREEMPTIBLE_NVIDIA_L4_GPUS")
        );
        assert_eq!(
            metric_for(&acc("l4"), Provisioning::Reservation).as_deref(),
            Some("NVIDIA_L4_GPUS")
        );
        assert!(preemptible(false, Some(Provisioning::Queued)) && preemptible(true, None));
        assert!(!preemptible(false, None) && !preemptible(false, Some(Provisioning::OnDemand)));
        assert!(check("M", 8.0, 4.0, 4).is_ok());
        assert_eq!(check("M", 8.0, 5.0, 4).unwrap_err().needed, 4);
    }
}
