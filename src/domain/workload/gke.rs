//! What GKE itself puts on a node pool's nodes, besides the labels and taints the pool
//! was created with: the labels the scheduler can select on and the accelerator taints.
//!
//! Invariant: only GKE's documented automatic labels and taints are added, and a
//! recorded label or taint with the same key is never overwritten.

use super::judge::{GPU_LABEL, TOPOLOGY_LABEL, TPU_LABEL};
use super::{GPU, PoolFacts, PoolKind, TPU, Taint};

pub const NODEPOOL_LABEL: &str = "cloud.google.com/gke-nodepool";
pub const SPOT_LABEL: &str = "cloud.google.com/gke-spot";

impl PoolFacts {
    /// Add GKE's automatic node labels (pool, machine, accelerator, TPU topology, spot,
    /// driver) and taints (`nvidia.com/gpu=present:NoSchedule` on GPU nodes,
    /// `google.com/tpu=present:NoSchedule` on TPU nodes).
    pub fn with_gke_defaults(mut self) -> PoolFacts {
        let mut add = |k: &str, v: &str| {
            self.labels
                .entry(k.to_owned())
                .or_insert_with(|| v.to_owned());
        };
        add(NODEPOOL_LABEL, &self.pool_id.clone());
        add(
            "node.kubernetes.io/instance-type",
            &self.machine_type.clone(),
        );
        if let Some(family) = self.machine_type.split('-').next() {
            add("cloud.google.com/machine-family", family);
        }
        add("kubernetes.io/os", "linux");
        if self.spot {
            add(SPOT_LABEL, "true");
        }
        let acc = self.accelerator_type.clone().unwrap_or_default();
        let taint_key = match self.kind {
            PoolKind::Gpu => {
                add(GPU_LABEL, &acc);
                if let Some(d) = self
                    .driver_version
                    .clone()
                    .filter(|d| d != "INSTALLATION_DISABLED")
                {
                    add(
                        "cloud.google.com/gke-gpu-driver-version",
                        &d.to_ascii_lowercase(),
                    );
                }
                GPU
            }
            PoolKind::Tpu => {
                add(TPU_LABEL, &acc);
                if let Some(t) = self.tpu_topology.clone() {
                    add(TOPOLOGY_LABEL, &t);
                }
                TPU
            }
            PoolKind::Cpu => return self,
        };
        if !self.taints.iter().any(|t| t.key == taint_key) {
            self.taints.push(Taint {
                key: taint_key.into(),
                value: "present".into(),
                effect: "NoSchedule".into(),
            });
        }
        self
    }
}
