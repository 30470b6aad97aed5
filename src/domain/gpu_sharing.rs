//! GPU sharing (time-sharing, NVIDIA MPS) and multi-instance GPU (MIG) partitions of a
//! GPU pool, as GKE accepts them: which GPU models take which partition sizes, how many
//! partitions one GPU yields, the range of clients per GPU, and the node labels GKE puts
//! on such nodes.
//!
//! Invariant: a [`GpuSharing`] names a combination GKE accepts for its GPU model, so its
//! [`GpuSharing::units_per_gpu`] is the number of `nvidia.com/gpu` units GKE's device
//! plugin advertises for one physical GPU.
//!
//! Sources: the partition sizes and partitions per GPU are GKE's device plugin's table
//! (GoogleCloudPlatform/container-engine-accelerators, `pkg/gpu/nvidia/mig/mig.go`,
//! `gpuPartitionSizeMaxCount`), the supported models GKE's "Running multi-instance GPUs"
//! (cloud.google.com/kubernetes-engine/docs/how-to/gpus-multi: A100 40GB, A100 80GB,
//! H100 80GB, H200 141GB, B200); the labels and the 2..=48 clients GKE's "About GPU
//! sharing strategies" / "Share GPUs with multiple workloads using NVIDIA MPS" pages
//! (cloud.google.com/kubernetes-engine/docs/concepts/timesharing-gpus,
//! .../how-to/nvidia-mps-gpus) and the ComputeClass `gpuSharing` reference.

use super::accelerators::{Kind, Resolved};
use super::gke_version::GkeVersion;

/// Fewest containers that may share one GPU (or one partition).
pub const MIN_CLIENTS: u32 = 2;
/// Most containers that may share one GPU (or one partition).
pub const MAX_CLIENTS: u32 = 48;

/// Node label: the MIG partition size of the node's GPUs.
pub const PARTITION_LABEL: &str = "cloud.google.com/gke-gpu-partition-size";
/// Node label: `time-sharing` or `mps`.
pub const STRATEGY_LABEL: &str = "cloud.google.com/gke-gpu-sharing-strategy";
/// Node label: the most containers sharing one GPU.
pub const MAX_CLIENTS_LABEL: &str = "cloud.google.com/gke-max-shared-clients-per-gpu";

/// (GKE accelerator type, [(partition size, partitions per GPU)]).
static PARTITIONS: &[(&str, &[(&str, u32)])] = &[
    (
        "nvidia-tesla-a100",
        &[
            ("1g.5gb", 7),
            ("2g.10gb", 3),
            ("3g.20gb", 2),
            ("7g.40gb", 1),
        ],
    ),
    (
        "nvidia-a100-80gb",
        &[
            ("1g.10gb", 7),
            ("2g.20gb", 3),
            ("3g.40gb", 2),
            ("7g.80gb", 1),
        ],
    ),
    (
        "nvidia-h100-80gb",
        &[
            ("1g.10gb", 7),
            ("1g.20gb", 4),
            ("2g.20gb", 3),
            ("3g.40gb", 2),
            ("7g.80gb", 1),
        ],
    ),
    (
        "nvidia-h200-141gb",
        &[
            ("1g.18gb", 7),
            ("1g.35gb", 4),
            ("2g.35gb", 3),
            ("3g.71gb", 2),
            ("4g.71gb", 1),
            ("7g.141gb", 1),
        ],
    ),
    (
        "nvidia-b200",
        &[
            ("1g.23gb", 7),
            ("1g.45gb", 4),
            ("2g.45gb", 3),
            ("3g.90gb", 2),
            ("4g.90gb", 1),
            ("7g.180gb", 1),
        ],
    ),
];

/// The partition sizes of a GPU model (empty: the model has no MIG).
pub fn partition_sizes(gke_accelerator_type: &str) -> &'static [(&'static str, u32)] {
    PARTITIONS
        .iter()
        .find(|(t, _)| *t == gke_accelerator_type)
        .map_or(&[], |(_, s)| s)
}

/// Partitions one GPU of `gke_accelerator_type` yields at `size` (None: not a size of it).
pub fn partitions_per_gpu(gke_accelerator_type: &str, size: &str) -> Option<u32> {
    partition_sizes(gke_accelerator_type)
        .iter()
        .find(|(s, _)| *s == size)
        .map(|(_, n)| *n)
}

/// GKE's GPU sharing strategies (`TIME_SHARING` / `MPS`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schema(as = GpuSharingStrategy)]
pub enum Strategy {
    TimeSharing,
    Mps,
}

impl Strategy {
    pub const ALL: [Strategy; 2] = [Strategy::TimeSharing, Strategy::Mps];

    /// GKE's `gpuSharingStrategy` spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::TimeSharing => "TIME_SHARING",
            Strategy::Mps => "MPS",
        }
    }

    /// The value of [`STRATEGY_LABEL`] on the nodes.
    pub fn label_value(self) -> &'static str {
        match self {
            Strategy::TimeSharing => "time-sharing",
            Strategy::Mps => "mps",
        }
    }

    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The oldest GKE version (Standard clusters) with this strategy: time-sharing
    /// 1.23.7-gke.1400, NVIDIA MPS 1.27.7-gke.1088000 (GKE's how-to pages'
    /// "Requirements").
    pub fn min_version(self) -> GkeVersion {
        match self {
            Strategy::TimeSharing => GkeVersion {
                major: 1,
                minor: 23,
                patch: 7,
                build: 1400,
            },
            Strategy::Mps => GkeVersion {
                major: 1,
                minor: 27,
                patch: 7,
                build: 1_088_000,
            },
        }
    }
}

/// Sharing of each GPU (or each partition) between containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharing {
    pub strategy: Strategy,
    pub max_clients_per_gpu: u32,
}

/// How the GPUs of a pool's nodes are split into schedulable units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSharing {
    /// MIG partition size (`1g.5gb`) and the partitions one GPU yields at it.
    pub partition: Option<(&'static str, u32)>,
    pub sharing: Option<Sharing>,
}

impl GpuSharing {
    /// `nvidia.com/gpu` units one physical GPU is advertised as.
    pub fn units_per_gpu(&self) -> u32 {
        self.partition.map_or(1, |(_, n)| n) * self.sharing.map_or(1, |s| s.max_clients_per_gpu)
    }

    /// The node labels GKE adds to such nodes.
    pub fn node_labels(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some((size, _)) = self.partition {
            out.push((PARTITION_LABEL, size.to_owned()));
        }
        if let Some(s) = self.sharing {
            out.push((STRATEGY_LABEL, s.strategy.label_value().to_owned()));
            out.push((MAX_CLIENTS_LABEL, s.max_clients_per_gpu.to_string()));
        }
        out
    }
}

/// `nvidia.com/gpu` units a node with `gpus` GPUs of `gke_accelerator_type` advertises
/// when they are partitioned (`partition_size`) or shared (`clients` per GPU); `None`
/// when neither (units are the GPUs).
pub fn units_per_node(
    gke_accelerator_type: &str,
    gpus: u32,
    partition_size: Option<&str>,
    clients: Option<u32>,
) -> Option<u32> {
    if partition_size.is_none() && clients.is_none() {
        return None;
    }
    let parts = partition_size.map_or(Some(1), |s| partitions_per_gpu(gke_accelerator_type, s))?;
    Some(gpus * parts * clients.unwrap_or(1).max(1))
}

impl GpuSharing {
    /// The sharing of a stored pool (`None` when it has neither, or its stored values
    /// are not a combination this table knows).
    pub fn from_stored(
        gke_accelerator_type: &str,
        partition_size: Option<&str>,
        strategy: Option<Strategy>,
        clients: Option<u32>,
    ) -> Option<GpuSharing> {
        let partition = match partition_size {
            None => None,
            Some(size) => {
                let (s, n) = partition_sizes(gke_accelerator_type)
                    .iter()
                    .find(|(s, _)| *s == size)?;
                Some((*s, *n))
            }
        };
        let sharing = match (strategy, clients) {
            (Some(strategy), Some(c)) => Some(Sharing {
                strategy,
                max_clients_per_gpu: c,
            }),
            _ => None,
        };
        (partition.is_some() || sharing.is_some()).then_some(GpuSharing { partition, sharing })
    }

    /// The sharing GKE's node labels say a node has (`accelerator_type` from
    /// `cloud.google.com/gke-accelerator`); `None` for whole GPUs.
    pub fn from_node_labels(
        accelerator_type: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> Option<GpuSharing> {
        let clients = labels.get(MAX_CLIENTS_LABEL).and_then(|c| c.parse().ok());
        let strategy = labels.get(STRATEGY_LABEL).and_then(|s| {
            Strategy::ALL
                .into_iter()
                .find(|v| v.label_value() == s.as_str())
        });
        GpuSharing::from_stored(
            accelerator_type,
            labels.get(PARTITION_LABEL).map(String::as_str),
            strategy,
            clients,
        )
    }
}

/// Why a pool's sharing or partitioning is refused (each maps to an API reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharingError {
    #[error(
        "GPU sharing and partitions are for GPU pools: {0} is a TPU; drop \"sharing\" and \"partitionSize\""
    )]
    NotGpu(String),
    #[error(
        "{gpu} has no multi-instance GPU partitions: partitionSize needs one of {supported}; or drop \"partitionSize\" (use \"sharing\" to share whole GPUs)"
    )]
    NoMig { gpu: String, supported: String },
    #[error("partitionSize {size:?} is not a partition size of {gpu}: use one of {valid}")]
    BadPartition {
        size: String,
        gpu: String,
        valid: String,
    },
    #[error("sharing.strategy {0:?} is not one of TIME_SHARING, MPS")]
    BadStrategy(String),
    #[error(
        "sharing.maxClientsPerGpu {0} is out of range: GKE shares one GPU between {MIN_CLIENTS} and {MAX_CLIENTS} containers"
    )]
    ClientsOutOfRange(u32),
    #[error(
        "MPS cannot be combined with partitionSize: use TIME_SHARING on partitioned GPUs, or MPS on whole GPUs"
    )]
    MpsWithPartitions,
}

impl SharingError {
    pub fn reason(&self) -> &'static str {
        match self {
            SharingError::NoMig { .. } | SharingError::BadPartition { .. } => {
                "INVALID_PARTITION_SIZE"
            }
            _ => "INVALID_SHARING",
        }
    }

    /// The valid partition sizes, when the error is about one.
    pub fn valid_sizes(&self) -> Option<&str> {
        match self {
            SharingError::BadPartition { valid, .. } => Some(valid),
            _ => None,
        }
    }
}

/// GPU models with MIG, as their canonical accelerator names would say.
fn mig_models() -> String {
    PARTITIONS
        .iter()
        .map(|(t, _)| *t)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Check the sharing and partitioning of a pool of `acc`: `None` when neither is asked.
pub fn check(
    acc: &Resolved,
    partition_size: Option<&str>,
    sharing: Option<(&str, u32)>,
) -> Result<Option<GpuSharing>, SharingError> {
    let partition_size = partition_size.map(str::trim).filter(|s| !s.is_empty());
    if partition_size.is_none() && sharing.is_none() {
        return Ok(None);
    }
    if acc.kind != Kind::Gpu {
        return Err(SharingError::NotGpu(acc.base_name()));
    }
    let partition = match partition_size {
        None => None,
        Some(size) => {
            let sizes = partition_sizes(acc.gke_accelerator_type);
            if sizes.is_empty() {
                return Err(SharingError::NoMig {
                    gpu: acc.gke_accelerator_type.to_owned(),
                    supported: mig_models(),
                });
            }
            let Some((s, n)) = sizes.iter().find(|(s, _)| *s == size) else {
                return Err(SharingError::BadPartition {
                    size: size.to_owned(),
                    gpu: acc.gke_accelerator_type.to_owned(),
                    valid: sizes.iter().map(|(s, _)| *s).collect::<Vec<_>>().join(", "),
                });
            };
            Some((*s, *n))
        }
    };
    let sharing = match sharing {
        None => None,
        Some((strategy, clients)) => {
            let strategy = Strategy::parse(strategy)
                .ok_or_else(|| SharingError::BadStrategy(strategy.to_owned()))?;
            if !(MIN_CLIENTS..=MAX_CLIENTS).contains(&clients) {
                return Err(SharingError::ClientsOutOfRange(clients));
            }
            if strategy == Strategy::Mps && partition.is_some() {
                return Err(SharingError::MpsWithPartitions);
            }
            Some(Sharing {
                strategy,
                max_clients_per_gpu: clients,
            })
        }
    };
    Ok(Some(GpuSharing { partition, sharing }))
}

#[cfg(test)]
#[path = "gpu_sharing_tests.rs"]
mod tests;
