//! One pod template against one pool: can its pods ever land there (and if not, the
//! first rule that forbids it), then the room [`super::capacity`] finds for them.
//!
//! Invariant: the static rules run in a fixed order, from "wrong kind of node" to
//! "wrong driver", and the first failing one is the pool's reason; capacity is only
//! counted for a pool that passes them all.

use std::collections::BTreeMap;

use super::admission::admitted_tolerations;
use super::capacity::{Room, room};
use super::cuda::{image_cuda, pool_max_cuda, show};
pub use super::reasons::Failure;
use super::reasons::Reason;
use super::selectors::{Keys, mentions, selects, untolerated, wanted};
pub use super::selectors::{ZONE_LABELS, zones_allowed};
use super::{ClusterFacts, GPU, PodFacts, PoolFacts, PoolKind, TPU};

pub const GPU_LABEL: &str = "cloud.google.com/gke-accelerator";
pub const TPU_LABEL: &str = "cloud.google.com/gke-tpu-accelerator";
pub const TOPOLOGY_LABEL: &str = "cloud.google.com/gke-tpu-topology";

fn fail(reason: Reason, message: String, fix: String) -> Result<(), Failure> {
    Err(Failure {
        reason,
        message,
        fix,
    })
}

/// The judgement of one template on one pool.
pub type Judgement = Result<Room, Failure>;

/// The pod's view of the pool: `pods` pods of `pod` (after admission).
pub fn judge(pod: &PodFacts, replicas: u32, pool: &PoolFacts, cluster: &ClusterFacts) -> Judgement {
    static_rules(pod, pool, cluster)?;
    Ok(room(pod, u64::from(replicas), pool, cluster))
}

fn acc_name(pool: &PoolFacts) -> String {
    pool.accelerator_type
        .clone()
        .unwrap_or_else(|| "no accelerator".into())
}

/// Rules 1-7, in order.
pub fn static_rules(
    pod: &PodFacts,
    pool: &PoolFacts,
    cluster: &ClusterFacts,
) -> Result<(), Failure> {
    let (gpus, tpus) = (pod.units(GPU), pod.units(TPU));
    let id = &pool.pool_id;
    // 1. The right kind of accelerator.
    let wrong_kind =
        (gpus > 0 && pool.kind != PoolKind::Gpu) || (tpus > 0 && pool.kind != PoolKind::Tpu);
    let gpu_selected = !selects(pod, &pool.labels, Keys::Only(&[GPU_LABEL]));
    let tpu_selected = !selects(pod, &pool.labels, Keys::Only(&[TPU_LABEL]));
    if wrong_kind || gpu_selected || (tpu_selected && pool.kind != PoolKind::Tpu) {
        let want = wanted(pod, GPU_LABEL)
            .into_iter()
            .chain(wanted(pod, TPU_LABEL))
            .chain((gpus > 0).then(|| format!("{gpus} {GPU}")))
            .chain((tpus > 0).then(|| format!("{tpus} {TPU}")))
            .collect::<Vec<_>>()
            .join(", ");
        return fail(
            Reason::NoMatchingPool,
            format!("pool {id} has {}; the pods want {want}", acc_name(pool)),
            format!(
                "add a node pool of that accelerator (kinetic pool add <accelerator>), or change the pods' {GPU_LABEL} / {TPU_LABEL} selector to an accelerator the cluster has"
            ),
        );
    }
    // 2. TPU slice shape.
    if pool.kind == PoolKind::Tpu {
        tpu_shape(pod, tpus, pool)?;
    }
    // 3. GPU partitions and sharing the pods select, then other labels.
    super::sharing::selected(pod, pool)?;
    let no_zone = Keys::Except(&ZONE_LABELS);
    if !selects(pod, &pool.labels, no_zone) {
        let keys: Vec<String> = pod
            .node_selector
            .iter()
            .filter(|(k, v)| {
                !ZONE_LABELS.contains(&k.as_str()) && pool.labels.get(k.as_str()) != Some(*v)
            })
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let what = if keys.is_empty() {
            "its required node affinity".to_owned()
        } else {
            keys.join(", ")
        };
        return fail(
            Reason::NodeSelectorMatchesNothing,
            format!("pool {id}'s nodes do not carry {what}"),
            format!(
                "remove or correct the nodeSelector / node affinity ({what}); pool {id} nodes are labelled {}",
                show_labels(&pool.labels)
            ),
        );
    }
    // 4. Zones.
    if zones_allowed(pod, pool).next().is_none() {
        let want = ZONE_LABELS
            .iter()
            .flat_map(|k| wanted(pod, k))
            .collect::<Vec<_>>()
            .join(", ");
        return fail(
            Reason::ZonePinned,
            format!(
                "the pods are pinned to zone {want}; pool {id} runs in {}",
                pool.zones.join(", ")
            ),
            format!(
                "drop the topology.kubernetes.io/zone selector or affinity, or pin to {}",
                pool.zones.join(" or ")
            ),
        );
    }
    // 5. Taints, after admission.
    let tolerations = admitted_tolerations(pod);
    let missing = untolerated(&tolerations, &pool.taints);
    if let Some(t) = missing.first() {
        let fix = if t.key == GPU || t.key == TPU {
            format!(
                "request the accelerator in the container's resources.limits ({}: 1) so GKE adds the toleration, or add tolerations: [{{key: {}, operator: Exists, effect: {}}}]",
                t.key, t.key, t.effect
            )
        } else {
            format!(
                "add tolerations: [{{key: {}, operator: Equal, value: \"{}\", effect: {}}}]",
                t.key, t.value, t.effect
            )
        };
        return fail(
            Reason::MissingToleration,
            format!(
                "pool {id} has the taint {}={}:{} that nothing in the pod tolerates (GKE adds tolerations only for requested {GPU}/{TPU} and a selected compute class)",
                t.key, t.value, t.effect
            ),
            fix,
        );
    }
    // 6. Size of one pod against one node (in nvidia.com/gpu units: partitions or
    // shares when the pool's GPUs are partitioned or shared).
    let units = pool.units_per_node();
    if pool.kind == PoolKind::Gpu && gpus > u64::from(units) {
        let shared = pool.units_per_gpu > 1;
        let what = if shared {
            format!(
                "{units} {GPU} units ({} GPUs x {} partitions or shares each)",
                pool.accelerators_per_node, pool.units_per_gpu
            )
        } else {
            units.to_string()
        };
        return fail(
            Reason::AcceleratorCountTooLarge,
            format!(
                "one pod requests {gpus} {GPU}; nodes of pool {id} ({}) have {what}",
                pool.machine_type
            ),
            format!(
                "request at most {units} GPUs per pod (split the work across pods), or add a pool of a machine with {gpus} or more GPUs{}",
                if shared {
                    " (or one without partitions/sharing)"
                } else {
                    ""
                }
            ),
        );
    }
    super::sharing::shared_request(pod, pool)?;
    // 7. CUDA against the driver.
    if pool.kind == PoolKind::Gpu && gpus > 0 {
        cuda_fits(pod, pool, cluster)?;
    }
    Ok(())
}

fn show_labels(labels: &BTreeMap<String, String>) -> String {
    labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn tpu_shape(pod: &PodFacts, tpus: u64, pool: &PoolFacts) -> Result<(), Failure> {
    let id = &pool.pool_id;
    let topo = pool.tpu_topology.clone().unwrap_or_default();
    let fix_selectors = format!(
        "select {TPU_LABEL}: {} and {TOPOLOGY_LABEL}: {topo}, or add a pool of the slice the pods select",
        acc_name(pool)
    );
    if !selects(pod, &pool.labels, Keys::Only(&[TPU_LABEL, TOPOLOGY_LABEL])) {
        let want: Vec<String> = [TPU_LABEL, TOPOLOGY_LABEL]
            .iter()
            .flat_map(|k| wanted(pod, k))
            .collect();
        return fail(
            Reason::TpuTopologyMismatch,
            format!(
                "the pods select TPU {}; pool {id} is {} with topology {topo}",
                want.join(" "),
                acc_name(pool)
            ),
            fix_selectors,
        );
    }
    let per_host = u64::from(pool.accelerators_per_node);
    if tpus > 0 && tpus != per_host {
        return fail(
            Reason::TpuTopologyMismatch,
            format!(
                "one pod requests {tpus} {TPU}; each host of pool {id} ({topo}) has {per_host} chips and a TPU pod must take all of them"
            ),
            format!("request {TPU}: {per_host} in the container's limits (one pod per host)"),
        );
    }
    if tpus == 0 && !mentions(pod, &[TPU_LABEL, TOPOLOGY_LABEL]) {
        return fail(
            Reason::NoMatchingPool,
            format!("pool {id} is a TPU pool and the pods request no {TPU}"),
            format!("request {TPU}: {per_host} to run on pool {id}"),
        );
    }
    Ok(())
}

fn cuda_fits(pod: &PodFacts, pool: &PoolFacts, cluster: &ClusterFacts) -> Result<(), Failure> {
    let Some((driver, max)) = pool_max_cuda(
        pool.driver_version.as_deref(),
        cluster.gke_version.as_deref(),
    ) else {
        return Ok(());
    };
    for image in pod.images() {
        if let Some(need) = image_cuda(image)
            && need > max
        {
            return fail(
                Reason::CudaDriverMismatch,
                format!(
                    "image {image} is built for CUDA {}; pool {} runs driver {driver}, which supports CUDA {} at most",
                    show(need),
                    pool.pool_id,
                    show(max)
                ),
                format!(
                    "use an image built for CUDA {} or older, or run the pods on a pool whose driver supports CUDA {} (gpuDriverVersion LATEST, or a newer GKE version)",
                    show(max),
                    show(need)
                ),
            );
        }
    }
    Ok(())
}
