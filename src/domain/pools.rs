//! Node pool shape rules (Kinetic's): autoscaling bounds, TPU slice multiples, spot,
//! reservations, max run duration, labels, taints (a failover pair's come with its
//! compute class, [`super::compute_class`]) and placement — decided before any
//! operation exists, so bad requests never reach the cloud.
//!
//! Invariant: a [`PoolShape`] is a pool GKE accepts and that later operations can
//! rebuild exactly (spot and reservation are part of it, never re-derived).

use std::collections::BTreeMap;

use super::accelerators::{Kind, Resolved};
use super::gpu_sharing::GpuSharing;
use super::provisioning::{Provisioning, Resolution, default_max_run};
use super::resource_names::LABELS;

/// Why a requested pool is refused (each maps to an API reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    #[error("spot pools cannot consume a reservation: choose spot or a reservation, not both")]
    SpotWithReservation,
    #[error(
        "accelerator {0:?} asks for spot VMs but \"spot\" is false: drop \":spot\" for on-demand VMs, or drop \"spot\": false"
    )]
    SpotConflict(String),
    #[error(
        "minNodes {min} is not a multiple of {hosts}, the host count of one {name} slice: use {lower} or {upper}"
    )]
    NotWholeSlices {
        min: u32,
        hosts: u32,
        name: String,
        lower: u32,
        upper: u32,
    },
    #[error("minNodes {0} is more than 1000")]
    TooMany(u32),
    #[error(
        "reservation {0:?} is not a valid reservation name (lowercase letters, digits, hyphens; at most 63), or projects/OWNER_PROJECT/reservations/NAME for one shared from another project"
    )]
    BadReservation(String),
}

impl PoolError {
    pub fn reason(&self) -> &'static str {
        match self {
            PoolError::SpotWithReservation => "SPOT_WITH_RESERVATION",
            PoolError::SpotConflict(_) => "SPOT_CONFLICT",
            PoolError::NotWholeSlices { .. } => "TPU_MIN_NODES_NOT_WHOLE_SLICES",
            PoolError::TooMany(_) => "INVALID_MIN_NODES",
            PoolError::BadReservation(_) => "INVALID_RESERVATION",
        }
    }
}

/// Role of a pool in a spot/on-demand failover pair (seed 003); `SPOT` / `ON_DEMAND`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FailoverRole {
    Spot,
    OnDemand,
}

impl FailoverRole {
    pub fn as_str(self) -> &'static str {
        match self {
            FailoverRole::Spot => "SPOT",
            FailoverRole::OnDemand => "ON_DEMAND",
        }
    }
}

/// A taint's effect; serialised in GKE's spelling (`NO_SCHEDULE`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TaintEffect {
    /// GKE's spelling: NO_SCHEDULE | PREFER_NO_SCHEDULE | NO_EXECUTE.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NO_SCHEDULE",
            TaintEffect::PreferNoSchedule => "PREFER_NO_SCHEDULE",
            TaintEffect::NoExecute => "NO_EXECUTE",
        }
    }

    /// From GKE's spelling ([`TaintEffect::as_str`]); `None` for any other text.
    pub fn from_gke(s: &str) -> Option<TaintEffect> {
        [
            TaintEffect::NoSchedule,
            TaintEffect::PreferNoSchedule,
            TaintEffect::NoExecute,
        ]
        .into_iter()
        .find(|e| e.as_str() == s)
    }

    /// Kubernetes' spelling: NoSchedule | PreferNoSchedule | NoExecute.
    pub fn kube_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A Kubernetes taint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: TaintEffect,
}

/// Everything that defines a pool beyond its name.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolShape {
    pub accelerator: Resolved,
    pub min_nodes: u32,
    pub max_nodes: u32,
    pub spot: bool,
    pub reservation: Option<String>,
    /// `"86400s"` except for spot TPU pools (flex-start: as asked, at most 7 days).
    pub max_run_duration: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    /// COMPACT placement topology for multi-host TPU slices.
    pub placement_topology: Option<&'static str>,
    pub failover: Option<FailoverRole>,
    /// How the nodes are obtained ([`super::provisioning`]); spot and reservation agree.
    pub provisioning: Provisioning,
    /// GPU time-sharing / MPS and MIG partitions ([`super::gpu_sharing::check`]).
    pub gpu_sharing: Option<GpuSharing>,
}

/// A reservation name, or GKE's shared form `projects/OWNER/reservations/NAME`.
fn valid_reservation(r: &str) -> bool {
    super::reservation::ReservationRef::parse(r).is_some()
}

impl PoolShape {
    /// Give a shaped pool its resolved mode: the mode itself, and the run duration asked
    /// for (flex-start: seven days unless asked otherwise). Spot and the reservation were
    /// already shaped from the same [`Resolution`].
    pub fn apply_provisioning(&mut self, r: &Resolution) {
        self.provisioning = r.mode;
        if let Some(d) = r
            .max_run_duration
            .clone()
            .or_else(|| default_max_run(r.mode))
        {
            self.max_run_duration = Some(d);
        }
    }
}

/// Whether a pool of `acc` is spot: an explicit `spot` must agree with an accelerator
/// spelled `:spot` (`{"accelerator": "l4:spot", "spot": false}` is refused, never guessed).
pub fn spot_of(acc: &Resolved, spot: Option<bool>) -> Result<bool, PoolError> {
    match spot {
        Some(false) if acc.spot => Err(PoolError::SpotConflict(acc.canonical())),
        Some(s) => Ok(s || acc.spot),
        None => Ok(acc.spot),
    }
}

/// Shape a pool of `acc` (its `spot` flag or `spot` here makes it spot).
pub fn shape(
    acc: &Resolved,
    min_nodes: u32,
    spot: bool,
    reservation: Option<&str>,
    failover: Option<FailoverRole>,
) -> Result<PoolShape, PoolError> {
    let spot = spot || acc.spot || failover == Some(FailoverRole::Spot);
    let spot = spot && failover != Some(FailoverRole::OnDemand);
    let reservation = reservation.map(str::trim).filter(|r| !r.is_empty());
    if spot && reservation.is_some() {
        return Err(PoolError::SpotWithReservation);
    }
    if let Some(r) = reservation
        && !valid_reservation(r)
    {
        return Err(PoolError::BadReservation(r.to_owned()));
    }
    if min_nodes > 1000 {
        return Err(PoolError::TooMany(min_nodes));
    }
    let hosts = acc.hosts_per_slice.unwrap_or(1).max(1);
    if acc.is_multi_host() && !min_nodes.is_multiple_of(hosts) {
        return Err(PoolError::NotWholeSlices {
            min: min_nodes,
            hosts,
            name: acc.base_name(),
            lower: min_nodes / hosts * hosts,
            upper: (min_nodes / hosts + 1) * hosts,
        });
    }
    let max_nodes = match acc.kind {
        Kind::Gpu => min_nodes + 10,
        Kind::Tpu => min_nodes + hosts,
    };
    let mut labels: BTreeMap<String, String> = LABELS
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let taints = Vec::new();
    // Seed 003's `gpu-pool-type` labels stay (they say which side of a pair a node is
    // on); its spot taint does not: a pair's two pools carry their compute class's taint
    // ([`super::compute_class::join_class`]) instead, which keeps other pods off both
    // pools, and a second taint on the spot pool alone would send every pod that
    // tolerates only the class's taint (GKE adds that toleration itself) to on-demand.
    match failover {
        Some(FailoverRole::Spot) => {
            labels.insert("gpu-pool-type".into(), "spot".into());
        }
        Some(FailoverRole::OnDemand) => {
            labels.insert("gpu-pool-type".into(), "on-demand".into());
        }
        None => {}
    }
    Ok(PoolShape {
        accelerator: Resolved {
            spot,
            ..acc.clone()
        },
        min_nodes,
        max_nodes,
        spot,
        reservation: reservation.map(str::to_owned),
        max_run_duration: (!(spot && acc.kind == Kind::Tpu)).then(|| "86400s".to_owned()),
        labels,
        taints,
        placement_topology: if acc.is_multi_host() {
            acc.topology
        } else {
            None
        },
        failover,
        provisioning: if spot {
            Provisioning::Spot
        } else if reservation.is_some() {
            Provisioning::Reservation
        } else {
            Provisioning::OnDemand
        },
        gpu_sharing: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::testing::acc;

    #[test]
    fn gpu_pools() {
        let p = shape(&acc("l4"), 0, false, None, None).unwrap();
        assert_eq!((p.min_nodes, p.max_nodes), (0, 10));
        assert_eq!(p.max_run_duration.as_deref(), Some("86400s"));
        assert_eq!(p.labels["kinetic"], "true");
        assert_eq!(p.labels["goog-packaged-solution"], "kinetic");
        assert!(p.taints.is_empty() && !p.spot && p.placement_topology.is_none());
        let p = shape(&acc("a100x4"), 2, false, Some("my-res"), None).unwrap();
        assert_eq!((p.min_nodes, p.max_nodes), (2, 12));
        assert_eq!(p.reservation.as_deref(), Some("my-res"));
        let p = shape(&acc("l4:spot"), 0, false, None, None).unwrap();
        assert!(p.spot);
        assert_eq!(
            p.max_run_duration.as_deref(),
            Some("86400s"),
            "spot GPU keeps the 24 h limit"
        );
        assert_eq!(
            shape(&acc("l4"), 0, true, Some("r"), None).unwrap_err(),
            PoolError::SpotWithReservation
        );
        assert_eq!(
            shape(&acc("l4:spot"), 0, false, Some("r"), None)
                .unwrap_err()
                .reason(),
            "SPOT_WITH_RESERVATION"
        );
        assert_eq!(
            shape(&acc("l4"), 0, false, Some("Bad_Res"), None)
                .unwrap_err()
                .reason(),
            "INVALID_RESERVATION"
        );
    }

    #[test]
    fn spot_must_agree_with_the_accelerator() {
        assert_eq!(spot_of(&acc("l4:spot"), None), Ok(true));
        assert_eq!(spot_of(&acc("l4:spot"), Some(true)), Ok(true));
        assert_eq!(spot_of(&acc("l4"), Some(true)), Ok(true));
        assert_eq!(spot_of(&acc("l4"), Some(false)), Ok(false));
        assert_eq!(spot_of(&acc("l4"), None), Ok(false));
        let e = spot_of(&acc("l4:spot"), Some(false)).unwrap_err();
        assert_eq!(e.reason(), "SPOT_CONFLICT");
        assert!(e.to_string().contains("gpu-l4:spot"), "{e}");
    }

    #[test]
    fn tpu_pools() {
        let p = shape(&acc("v5e-16"), 0, false, None, None).unwrap();
        assert_eq!((p.min_nodes, p.max_nodes), (0, 4));
        assert_eq!(p.placement_topology, Some("4x4"));
        let p = shape(&acc("v5e-16"), 8, false, None, None).unwrap();
        assert_eq!(p.max_nodes, 12);
        let e = shape(&acc("v5e-16"), 6, false, None, None).unwrap_err();
        assert_eq!(e.reason(), "TPU_MIN_NODES_NOT_WHOLE_SLICES");
        assert!(e.to_string().contains("use 4 or 8"), "{e}");
        let p = shape(&acc("v5e-8"), 3, false, None, None).unwrap();
        assert_eq!(
            (p.max_nodes, p.placement_topology),
            (4, None),
            "single-host: no placement"
        );
        let p = shape(&acc("v5e-16"), 0, true, None, None).unwrap();
        assert_eq!(
            p.max_run_duration, None,
            "spot TPU pools have no max run duration"
        );
    }

    #[test]
    fn failover_pairs() {
        let s = shape(&acc("l4"), 0, false, None, Some(FailoverRole::Spot)).unwrap();
        assert!(s.spot);
        assert_eq!(s.labels["gpu-pool-type"], "spot");
        assert!(
            s.taints.is_empty(),
            "the pair's class taint is added with its name"
        );
        let o = shape(
            &acc("l4:spot"),
            0,
            false,
            None,
            Some(FailoverRole::OnDemand),
        )
        .unwrap();
        assert!(!o.spot, "the fallback pool is on demand");
        assert_eq!(o.labels["gpu-pool-type"], "on-demand");
        assert!(o.taints.is_empty());
        assert_eq!(o.accelerator.machine_type, s.accelerator.machine_type);
    }
}
