//! What GKE's admission adds to a pod before the scheduler sees it.
//!
//! - ExtendedResourceToleration (enabled on GKE): a pod that requests an extended
//!   resource (`nvidia.com/gpu`, `google.com/tpu`) gets `{key: <resource>, operator:
//!   Exists, effect: NoSchedule}`, matching the taints GKE puts on GPU nodes
//!   (`nvidia.com/gpu=present:NoSchedule`) and TPU nodes (`google.com/tpu=present:NoSchedule`).
//! - Custom compute classes: a pod whose `nodeSelector` selects
//!   `cloud.google.com/compute-class: <class>` gets the toleration of the class taint
//!   `cloud.google.com/compute-class=<class>:NoSchedule` that GKE requires on node pools
//!   serving the class.
//!
//! Nothing else is added: spot nodes' taints (`cloud.google.com/gke-spot`, Kinetic's
//! `gpu-pool-type=spot`) need the pod's own toleration.
//!
//! Invariant: the pod's own tolerations are kept; additions only ever widen them.

use super::{GPU, PodFacts, TPU, Toleration};

/// The compute class label and taint key.
pub const COMPUTE_CLASS: &str = "cloud.google.com/compute-class";

/// The tolerations the pod has once admitted.
pub fn admitted_tolerations(pod: &PodFacts) -> Vec<Toleration> {
    let mut out = pod.tolerations.clone();
    let requests = pod.requests();
    for resource in [GPU, TPU] {
        if requests.get(resource).is_some_and(|v| *v > 0) {
            out.push(Toleration {
                key: Some(resource.into()),
                operator: Some("Exists".into()),
                value: None,
                effect: Some("NoSchedule".into()),
            });
        }
    }
    if let Some(class) = pod.node_selector.get(COMPUTE_CLASS) {
        out.push(Toleration {
            key: Some(COMPUTE_CLASS.into()),
            operator: Some("Equal".into()),
            value: Some(class.clone()),
            effect: Some("NoSchedule".into()),
        });
    }
    out
}
