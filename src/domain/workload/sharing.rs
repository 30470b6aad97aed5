//! The GPU partition and sharing labels a pod selects (`cloud.google.com/gke-gpu-
//! partition-size`, `...-gpu-sharing-strategy`, `...-max-shared-clients-per-gpu`)
//! against a pool's: a mismatch says which pool to add rather than only "no node".
//!
//! Invariant: only those three keys are judged here; a pod that does not mention them
//! passes (GKE Standard does not require the selectors).

use super::reasons::{Failure, Reason};
use super::selectors::{Keys, selects, wanted};
use super::{GPU, PodFacts, PoolFacts, PoolKind};
use crate::domain::gpu_sharing::{MAX_CLIENTS_LABEL, PARTITION_LABEL, STRATEGY_LABEL};

const KEYS: [&str; 3] = [PARTITION_LABEL, STRATEGY_LABEL, MAX_CLIENTS_LABEL];

/// Rule 3a: the pool's nodes carry the partition and sharing labels the pods select.
pub fn selected(pod: &PodFacts, pool: &PoolFacts) -> Result<(), Failure> {
    if selects(pod, &pool.labels, Keys::Only(&KEYS)) {
        return Ok(());
    }
    let id = &pool.pool_id;
    let want: Vec<String> = KEYS
        .iter()
        .flat_map(|k| wanted(pod, k).into_iter().map(move |v| format!("{k}={v}")))
        .collect();
    let has: Vec<String> = KEYS
        .iter()
        .filter_map(|k| pool.labels.get(*k).map(|v| format!("{k}={v}")))
        .collect();
    let has = if has.is_empty() {
        "whole GPUs (no partitions, no sharing)".to_owned()
    } else {
        has.join(", ")
    };
    let partition = wanted(pod, PARTITION_LABEL);
    let add = match partition.first() {
        Some(size) => format!(
            "add a GPU pool with \"partitionSize\": \"{size}\" (POST .../nodePools; MIG sizes depend on the GPU: A100, H100, H200, B200)"
        ),
        None => {
            "add a GPU pool with the \"sharing\" the pods select (POST .../nodePools)".to_owned()
        }
    };
    Err(Failure {
        reason: Reason::NodeSelectorMatchesNothing,
        message: format!(
            "the pods select {}; pool {id} has {has}",
            if want.is_empty() {
                "GPU partitions or sharing by node affinity".to_owned()
            } else {
                want.join(", ")
            }
        ),
        fix: format!("{add}, or change the pods' selector to what a pool has (pool {id}: {has})"),
    })
}

/// Rule 6a: on shared GPUs (time-sharing, MPS) a container may take one `nvidia.com/gpu`
/// unless the node has a single GPU (or partition): GKE's device plugin refuses the rest
/// at admission ("at most 1 nvidia.com/gpu can be requested on nodes which have more
/// than 1 physical GPU or MIG partitions"), so such pods never run there.
pub fn shared_request(pod: &PodFacts, pool: &PoolFacts) -> Result<(), Failure> {
    if pool.kind != PoolKind::Gpu {
        return Ok(());
    }
    let Some(clients) = pool
        .labels
        .get(MAX_CLIENTS_LABEL)
        .filter(|_| pool.labels.contains_key(STRATEGY_LABEL))
        .and_then(|c| c.parse::<u32>().ok())
        .filter(|c| *c > 0)
    else {
        return Ok(());
    };
    let devices = pool.units_per_node() / clients;
    let per_container = pod
        .containers
        .iter()
        .map(|c| {
            let m = c
                .requests
                .get(GPU)
                .or(c.limits.get(GPU))
                .copied()
                .unwrap_or(0);
            (m + 999) / 1000
        })
        .max()
        .unwrap_or(0);
    if per_container <= 1 || devices <= 1 {
        return Ok(());
    }
    let id = &pool.pool_id;
    Err(Failure {
        reason: Reason::AcceleratorCountTooLarge,
        message: format!(
            "a container requests {per_container} {GPU}; pool {id} shares its GPUs ({} per GPU) on nodes of {devices} GPUs or partitions, where GKE admits at most 1 {GPU} per container",
            clients
        ),
        fix: format!(
            "request {GPU}: 1 per container on shared GPUs (split the work across containers or pods), or run on a pool without \"sharing\""
        ),
    })
}
