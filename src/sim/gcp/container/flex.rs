//! GKE's rules for flex-start and queued-provisioning node pools, as the simulator
//! enforces them on `nodePools.create`: flex-start VMs are neither spot nor reserved,
//! run at most seven days, start at zero nodes and are created by the autoscaler with
//! location policy ANY and auto-repair off; queued provisioning needs flex-start's
//! settings too; both need a GKE version that runs flex-start for the accelerator
//! (GPUs 1.32.2-gke.1652000, TPUs 1.33.0-gke.1712000; TPU v3 and v4 never).
//!
//! Invariant: a pool that passes [`check`] is one GKE's own documentation creates
//! (`--flex-start [--enable-queued-provisioning] --enable-autoscaling --num-nodes=0
//! --location-policy=ANY --reservation-affinity=none --no-enable-autorepair`).

use crate::sim::error::SimError;

use super::lookup::{F, invalid};
use super::model::{Accel, PoolRec, is_flex, is_queued};

/// `1.32.2-gke.1652000` as comparable numbers (missing parts are 0).
fn version(v: &str) -> (u64, u64, u64, u64) {
    let (semver, build) = v.split_once("-gke.").unwrap_or((v, "0"));
    let mut parts = semver.split('.').map(|p| p.parse().unwrap_or(0));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        build.parse().unwrap_or(0),
    )
}

/// GKE's refusals of a flex-start or queued pool on a cluster running `cluster_version`.
pub fn check(rec: &PoolRec, cluster_version: &str) -> Result<(), SimError> {
    let p = &rec.spec;
    let (flex, queued) = (is_flex(p), is_queued(p));
    if !flex && !queued {
        return Ok(());
    }
    let what = if queued {
        "Queued provisioning"
    } else {
        "Flex-start"
    };
    let config = p.config.clone().unwrap_or_default();
    if config.spot == Some(true) {
        return Err(invalid(format!(
            "{what} node pools cannot use Spot VMs: unset nodePool.config.spot."
        )));
    }
    let no_reservation = config
        .reservation_affinity
        .as_ref()
        .is_some_and(|r| r.consume_reservation_type == "NO_RESERVATION");
    if !no_reservation {
        return Err(invalid(format!(
            "{what} node pools must not consume reservations: set nodePool.config.reservationAffinity.consumeReservationType to NO_RESERVATION."
        )));
    }
    let autoscaling = p.autoscaling.clone().unwrap_or_default();
    if autoscaling.enabled != Some(true) {
        return Err(invalid(format!(
            "{what} node pools need autoscaling enabled: their nodes are created by the cluster autoscaler."
        )));
    }
    if autoscaling.location_policy.as_deref() != Some("ANY") {
        return Err(invalid(format!(
            "{what} node pools need nodePool.autoscaling.locationPolicy ANY."
        )));
    }
    if p.initial_node_count.unwrap_or(0) != 0 {
        return Err(invalid(format!(
            "{what} node pools start with 0 nodes: nodePool.initialNodeCount must be 0."
        )));
    }
    if p.management.as_ref().and_then(|m| m.auto_repair) != Some(false) {
        return Err(invalid(format!(
            "{what} node pools need node auto-repair disabled (nodePool.management.autoRepair: false)."
        )));
    }
    if let Some(d) = &config.max_run_duration {
        let secs: f64 = d.trim_end_matches('s').parse().unwrap_or(f64::MAX);
        if secs > 604_800.0 {
            return Err(invalid(format!(
                "Flex-start VMs run for at most 7 days: nodePool.config.maxRunDuration \"{d}\" is longer than \"604800s\"."
            )));
        }
    }
    let (min, tpu) = match &rec.shape.accel {
        Accel::Tpu { kind, .. } => {
            if kind.starts_with("tpu-v3") || kind.starts_with("tpu-v4") {
                return Err(invalid(format!(
                    "{what} does not support TPU type \"{kind}\"."
                )));
            }
            ("1.33.0-gke.1712000", true)
        }
        Accel::Gpu { .. } => ("1.32.2-gke.1652000", false),
        Accel::None => {
            return Err(invalid(format!(
                "{what} node pools need GPUs or TPUs; machine type \"{}\" has none.",
                rec.shape.machine
            )));
        }
    };
    if tpu && flex && !queued && rec.shape.hosts > 1 {
        return Err(invalid(
            "Flex-start without queued provisioning supports single-host TPU slices only.",
        ));
    }
    if version(cluster_version) < version(min) {
        return Err(SimError::precondition(
            F,
            format!(
                "{what} requires GKE version {min} or later; the cluster runs {cluster_version}."
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::version;

    #[test]
    fn versions_compare_by_number() {
        assert!(version("1.32.1-gke.9") < version("1.32.2-gke.1652000"));
        assert!(version("1.33.5-gke.1080000") > version("1.32.2-gke.1652000"));
        assert!(version("1.32.10-gke.1") > version("1.32.2-gke.1652000"));
    }
}
