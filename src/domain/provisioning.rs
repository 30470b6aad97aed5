//! How a pool's nodes are obtained: on demand, spot, from a reservation, flex-start
//! (Dynamic Workload Scheduler) or flex-start with queued provisioning — what each mode
//! implies, which requests contradict it, the GKE versions and accelerators it needs,
//! and its run-duration limit.
//!
//! Invariant: a [`Resolution`] is consistent: a flex-start mode never comes with spot, a
//! reservation, a failover pair or warm nodes, its run duration is at most seven days,
//! and a `RESERVATION` mode always names its reservation. Every request field that
//! contradicts the mode is refused, never silently dropped.
//!
//! Sources (GKE documentation, read 2026-12):
//! - "About flex-start provisioning mode in GKE" (cloud.google.com/kubernetes-engine/docs/concepts/dws,
//!   also at .../concepts/provisioning-model):
//!   GPUs need GKE 1.32.2-gke.1652000 or later, TPUs 1.33.0-gke.1712000 or later; TPU v3
//!   and v4 are not supported; flex-start without queueing runs single-host TPU slices;
//!   VMs run for at most seven days.
//! - "Run a large-scale workload with flex-start with queued provisioning"
//!   (.../docs/how-to/provisioningrequest): cluster 1.32.2-gke.1652000 or later; the node
//!   pool is created with `--flex-start --enable-queued-provisioning --enable-autoscaling
//!   --num-nodes=0 --location-policy=ANY --reservation-affinity=none --no-enable-autorepair`.
//! - "About Flex-start VMs" (cloud.google.com/compute/docs/instances/about-flex-start-vms):
//!   accelerator-optimized machine types only (A2, A3, A4, G2, ...), so GPUs attached to N1
//!   machines (T4, V100, P4, P100) cannot be flex-start.

use serde::{Deserialize, Serialize};
use std::fmt;
use utoipa::ToSchema;

use super::accelerators::{Kind, Resolved};
use super::gke_version::GkeVersion;

/// The longest run a flex-start VM may have: seven days.
pub const FLEX_MAX_RUN_SECONDS: u64 = 7 * 24 * 3600;

/// Oldest GKE version with flex-start (and flex-start with queued provisioning) for GPUs.
pub const FLEX_GPU_MIN: GkeVersion = GkeVersion {
    major: 1,
    minor: 32,
    patch: 2,
    build: 1_652_000,
};

/// Oldest GKE version with flex-start for TPUs.
pub const FLEX_TPU_MIN: GkeVersion = GkeVersion {
    major: 1,
    minor: 33,
    patch: 0,
    build: 1_712_000,
};

/// The node label GKE puts on flex-start nodes.
pub const FLEX_START_LABEL: &str = "cloud.google.com/gke-flex-start";
/// The node label and `NoSchedule` taint (value `true`) of queued-provisioning nodes:
/// only pods that tolerate it (a ProvisioningRequest's) land there.
pub const QUEUED_KEY: &str = "cloud.google.com/gke-queued";

/// A pool's provisioning mode (the API's `provisioning`), `ON_DEMAND` ... `QUEUED`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Provisioning {
    #[default]
    OnDemand,
    Spot,
    Reservation,
    FlexStart,
    /// Flex-start with queued provisioning: nodes only for a ProvisioningRequest.
    Queued,
}

impl Provisioning {
    pub const ALL: [Provisioning; 5] = [
        Provisioning::OnDemand,
        Provisioning::Spot,
        Provisioning::Reservation,
        Provisioning::FlexStart,
        Provisioning::Queued,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Provisioning::OnDemand => "ON_DEMAND",
            Provisioning::Spot => "SPOT",
            Provisioning::Reservation => "RESERVATION",
            Provisioning::FlexStart => "FLEX_START",
            Provisioning::Queued => "QUEUED",
        }
    }

    /// The mode named `s` (the API's spelling).
    pub fn parse(s: &str) -> Result<Provisioning, ProvisioningError> {
        Provisioning::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| ProvisioningError::Unknown(s.chars().take(40).collect()))
    }

    /// Flex-start VMs (with or without queueing).
    pub fn is_flex_start(self) -> bool {
        matches!(self, Provisioning::FlexStart | Provisioning::Queued)
    }

    /// The node labels GKE adds for this mode.
    pub fn node_labels(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Provisioning::FlexStart => vec![(FLEX_START_LABEL, "true")],
            Provisioning::Queued => vec![(FLEX_START_LABEL, "true"), (QUEUED_KEY, "true")],
            _ => Vec::new(),
        }
    }

    /// The node taints (key, value, Kubernetes effect) GKE adds for this mode.
    pub fn node_taints(self) -> Vec<(&'static str, &'static str, &'static str)> {
        match self {
            Provisioning::Queued => vec![(QUEUED_KEY, "true", "NoSchedule")],
            _ => Vec::new(),
        }
    }

    /// The oldest GKE version that runs this mode for `acc`, if the mode needs one.
    pub fn min_version(self, acc: &Resolved) -> Option<GkeVersion> {
        if !self.is_flex_start() {
            return None;
        }
        Some(match acc.kind {
            Kind::Gpu => FLEX_GPU_MIN,
            Kind::Tpu => FLEX_TPU_MIN,
        })
    }
}

impl fmt::Display for Provisioning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a provisioning request is refused (each maps to an API reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProvisioningError {
    #[error("provisioning {0:?} is not one of ON_DEMAND, SPOT, RESERVATION, FLEX_START, QUEUED")]
    Unknown(String),
    #[error("provisioning {mode} contradicts {field}: {fix}")]
    Conflict {
        mode: Provisioning,
        field: &'static str,
        fix: &'static str,
    },
    #[error(
        "provisioning RESERVATION needs \"reservation\" (the name of a reservation in the cluster's zone)"
    )]
    ReservationRequired,
    #[error("maxRunDuration {0:?} is not a whole number of seconds like \"86400s\" (at least 1s)")]
    BadDuration(String),
    #[error(
        "maxRunDuration {text:?} is longer than {FLEX_MAX_RUN_SECONDS}s (7 days), the longest a flex-start VM runs: ask for {FLEX_MAX_RUN_SECONDS}s or less"
    )]
    TooLong { text: String },
    #[error("{mode} does not support {accelerator}: {why}")]
    Unsupported {
        mode: Provisioning,
        accelerator: String,
        why: &'static str,
    },
}

impl ProvisioningError {
    pub fn reason(&self) -> &'static str {
        match self {
            ProvisioningError::Unknown(_) => "INVALID_PROVISIONING",
            ProvisioningError::Conflict { .. } => "PROVISIONING_CONFLICT",
            ProvisioningError::ReservationRequired => "RESERVATION_REQUIRED",
            ProvisioningError::BadDuration(_) | ProvisioningError::TooLong { .. } => {
                "INVALID_MAX_RUN_DURATION"
            }
            ProvisioningError::Unsupported { .. } => "FLEX_START_UNSUPPORTED",
        }
    }
}

/// The provisioning fields of a pool request, as sent.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    pub provisioning: Option<&'a str>,
    pub spot: Option<bool>,
    pub reservation: Option<&'a str>,
    pub failover: bool,
    pub min_nodes: u32,
    pub max_run_duration: Option<&'a str>,
}

/// What a request's provisioning fields decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    pub mode: Provisioning,
    /// What to pass on as the request's `spot` (the accelerator's `:spot` still counts).
    pub spot: Option<bool>,
    pub reservation: Option<String>,
    /// The run duration asked for, normalised to `"{n}s"`.
    pub max_run_duration: Option<String>,
}

fn conflict(mode: Provisioning, field: &'static str, fix: &'static str) -> ProvisioningError {
    ProvisioningError::Conflict { mode, field, fix }
}

/// `"{n}s"` with `n` whole seconds, at least 1.
fn seconds(text: &str) -> Result<u64, ProvisioningError> {
    text.trim()
        .strip_suffix('s')
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n >= 1)
        .ok_or_else(|| ProvisioningError::BadDuration(text.chars().take(40).collect()))
}

/// A requested run duration, normalised (flex-start: at most seven days).
fn duration(mode: Provisioning, text: Option<&str>) -> Result<Option<String>, ProvisioningError> {
    let Some(text) = text else {
        return Ok(None);
    };
    let n = seconds(text)?;
    if mode.is_flex_start() && n > FLEX_MAX_RUN_SECONDS {
        return Err(ProvisioningError::TooLong {
            text: text.chars().take(40).collect(),
        });
    }
    Ok(Some(format!("{n}s")))
}

/// The mode a request implies when it names none: spot, a reservation, or on demand.
fn implied(acc: &Resolved, req: &Request<'_>) -> Provisioning {
    let reservation = req.reservation.is_some_and(|r| !r.trim().is_empty());
    if req.spot == Some(true) || acc.spot {
        Provisioning::Spot
    } else if reservation {
        Provisioning::Reservation
    } else {
        Provisioning::OnDemand
    }
}

/// Whether `acc` can run flex-start VMs in `mode`.
fn check_accelerator(mode: Provisioning, acc: &Resolved) -> Result<(), ProvisioningError> {
    let unsupported = |why| ProvisioningError::Unsupported {
        mode,
        accelerator: acc.base_name(),
        why,
    };
    match acc.kind {
        Kind::Gpu if acc.machine_type.starts_with("n1-") => Err(unsupported(
            "flex-start VMs are accelerator-optimized machines (A2, A3, A4, G2); GPUs attached to N1 machines cannot be flex-start: choose gpu-l4, an A100, H100, H200 or B200, or ON_DEMAND / SPOT",
        )),
        Kind::Tpu
            if matches!(
                acc.gke_accelerator_type,
                "tpu-v3-podslice" | "tpu-v4-podslice"
            ) =>
        {
            Err(unsupported(
                "GKE flex-start does not run TPU v3 or v4: choose v5e, v5p or v6e, or ON_DEMAND / SPOT",
            ))
        }
        Kind::Tpu if mode == Provisioning::FlexStart && acc.is_multi_host() => Err(unsupported(
            "flex-start without queueing runs single-host TPU slices only: use QUEUED for a multi-host slice (all its hosts come at once)",
        )),
        _ => Ok(()),
    }
}

/// Decide a request's mode and check that its fields agree with it.
pub fn resolve(acc: &Resolved, req: &Request<'_>) -> Result<Resolution, ProvisioningError> {
    let reservation = req
        .reservation
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(str::to_owned);
    let Some(named) = req.provisioning else {
        // No mode named: the old fields decide, and the pool rules refuse their
        // contradictions with their own reasons (SPOT_WITH_RESERVATION, SPOT_CONFLICT).
        let mode = implied(acc, req);
        return Ok(Resolution {
            mode,
            spot: req.spot,
            reservation,
            max_run_duration: duration(mode, req.max_run_duration)?,
        });
    };
    let mode = Provisioning::parse(named)?;
    let spot_asked = req.spot == Some(true) || acc.spot;
    // The contradictions of each named mode, in the order they are reported: the first
    // that holds is refused with its field and its fix.
    let has_reservation = reservation.is_some();
    let contradictions: Vec<(bool, &'static str, &'static str)> = match mode {
        Provisioning::OnDemand => vec![
            (
                spot_asked,
                "spot",
                "drop \"spot\" (and \":spot\" in the accelerator) for on-demand VMs, or ask for SPOT",
            ),
            (
                has_reservation,
                "reservation",
                "ask for RESERVATION to consume a reservation, or drop \"reservation\"",
            ),
        ],
        Provisioning::Spot => vec![
            (
                req.spot == Some(false),
                "spot: false",
                "drop \"spot\": false, or ask for ON_DEMAND",
            ),
            (
                has_reservation,
                "reservation",
                "spot VMs cannot consume a reservation: ask for RESERVATION, or drop \"reservation\"",
            ),
        ],
        Provisioning::Reservation => vec![(
            spot_asked,
            "spot",
            "spot VMs cannot consume a reservation: drop \"spot\" (and \":spot\" in the accelerator)",
        )],
        Provisioning::FlexStart | Provisioning::Queued => vec![
            (
                spot_asked,
                "spot",
                "flex-start VMs are not spot VMs: drop \"spot\" (and \":spot\" in the accelerator), or ask for SPOT",
            ),
            (
                has_reservation,
                "reservation",
                "flex-start VMs never consume a reservation: drop \"reservation\", or ask for RESERVATION",
            ),
            (
                req.failover,
                "failover",
                "a failover pair is a spot pool plus an on-demand pool: drop \"failover\", or drop \"provisioning\"",
            ),
            (
                req.min_nodes > 0,
                "minNodes",
                "flex-start pools keep no warm nodes (nodes come when workloads ask): drop \"minNodes\" or set it to 0",
            ),
        ],
    };
    if let Some(&(_, field, fix)) = contradictions.iter().find(|c| c.0) {
        return Err(conflict(mode, field, fix));
    }
    match mode {
        Provisioning::Reservation if !has_reservation => {
            return Err(ProvisioningError::ReservationRequired);
        }
        Provisioning::FlexStart | Provisioning::Queued => check_accelerator(mode, acc)?,
        _ => {}
    }
    if req.failover && !matches!(mode, Provisioning::Spot | Provisioning::Reservation) {
        return Err(conflict(
            mode,
            "failover",
            "a failover pair is a spot pool plus an on-demand pool: ask for SPOT (or no provisioning) with \"failover\"",
        ));
    }
    let max_run_duration = duration(mode, req.max_run_duration)?;
    Ok(Resolution {
        mode,
        spot: match mode {
            Provisioning::Spot => Some(true),
            Provisioning::FlexStart | Provisioning::Queued | Provisioning::Reservation => {
                Some(false)
            }
            Provisioning::OnDemand => req.spot,
        },
        reservation,
        max_run_duration,
    })
}

/// The run duration a flex-start pool gets when the request names none: the longest.
pub fn default_max_run(mode: Provisioning) -> Option<String> {
    mode.is_flex_start()
        .then(|| format!("{FLEX_MAX_RUN_SECONDS}s"))
}

#[cfg(test)]
#[path = "provisioning_tests.rs"]
mod tests;
