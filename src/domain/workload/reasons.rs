//! Why a workload cannot run on a pool, in the check's vocabulary: the reasons API.md
//! lists ([`Reason`]), a pool's failure to hold the pods ([`Failure`]) and a problem the
//! report gives ([`Problem`]). Plain data the rules (`judge`, `capacity`, `sharing`,
//! `queued`) and the report share.
//!
//! Invariant: every reason has one API spelling (`as_str`) and one depth: how far a pool
//! got through the rules before that reason stopped it.

/// Workload-check reasons (API.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    NoMatchingPool,
    TpuTopologyMismatch,
    NodeSelectorMatchesNothing,
    ZonePinned,
    MissingToleration,
    AcceleratorCountTooLarge,
    CudaDriverMismatch,
    PoolAtMax,
    QuotaExhausted,
    GpuLimitMissing,
    SpotOnlyNoFallback,
    /// A QUEUED pool's growth is needed: only a ProvisioningRequest obtains it.
    ProvisioningRequestNeeded,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoMatchingPool => "NO_MATCHING_POOL",
            Reason::TpuTopologyMismatch => "TPU_TOPOLOGY_MISMATCH",
            Reason::NodeSelectorMatchesNothing => "NODE_SELECTOR_MATCHES_NOTHING",
            Reason::ZonePinned => "ZONE_PINNED",
            Reason::MissingToleration => "MISSING_TOLERATION",
            Reason::AcceleratorCountTooLarge => "ACCELERATOR_COUNT_TOO_LARGE",
            Reason::CudaDriverMismatch => "CUDA_DRIVER_MISMATCH",
            Reason::PoolAtMax => "POOL_AT_MAX",
            Reason::QuotaExhausted => "QUOTA_EXHAUSTED",
            Reason::GpuLimitMissing => "GPU_LIMIT_MISSING",
            Reason::SpotOnlyNoFallback => "SPOT_ONLY_NO_FALLBACK",
            Reason::ProvisioningRequestNeeded => "PROVISIONING_REQUEST_NEEDED",
        }
    }

    /// How far a pool got before this rule stopped it.
    pub(super) fn depth(self) -> u8 {
        match self {
            Reason::NoMatchingPool => 1,
            Reason::TpuTopologyMismatch => 2,
            Reason::NodeSelectorMatchesNothing => 3,
            Reason::ZonePinned => 4,
            Reason::MissingToleration => 5,
            Reason::AcceleratorCountTooLarge => 6,
            Reason::CudaDriverMismatch => 7,
            _ => 8,
        }
    }
}

/// Why a pool can never hold the pods.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: Reason,
    pub message: String,
    pub fix: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub reason: Reason,
    pub message: String,
    pub fix: String,
}
