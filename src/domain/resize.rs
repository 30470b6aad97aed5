//! Pool resize rules (Kinetic's): which fields an update names (AIP-134 `updateMask`),
//! the bounds a pool ends up with, and how a failover pair's on-demand pool follows its
//! spot pool.
//!
//! Invariant: every [`Bounds`] returned here is one GKE accepts and Kinetic's pool rule
//! allows: `0 <= min <= max`, `1 <= max <= MAX_NODES`, whole slices for multi-host TPUs;
//! and a failover pair it returns keeps the on-demand pool's `max` at least the spot
//! pool's, so every pod the spot pool can hold can fail over.
//!
//! Semantics (documented in the API reference):
//! - no `updateMask`: the fields present in the body are updated; none -> NOTHING_TO_UPDATE;
//! - `updateMask=minNodes,maxNodes` (camelCase or snake_case paths, `*` = both): the
//!   fields named are updated; one named but absent from the body is reset to its
//!   default (minNodes 0; maxNodes Kinetic's default for the new minNodes); body fields
//!   the mask does not name are ignored (the plan warns);
//! - a field not updated keeps its value; if that leaves `max < min`, the request is
//!   refused with the fix (send maxNodes, or name it in the mask to reset it).

use super::accelerators::{Kind, Resolved};
use super::provisioning::Provisioning;

/// The most nodes (per zone) a Kinetic pool may have: GKE's limit of 1,000 nodes per
/// node pool zone ("Nodes per node pool zone", cloud.google.com/kubernetes-engine/quotas),
/// the same cap `pool add` puts on `minNodes`.
pub const MAX_NODES: u32 = 1000;

/// Autoscaling bounds of a pool, per zone (GKE's minNodeCount / maxNodeCount).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub min: u32,
    pub max: u32,
}

/// What an update does to one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Not updated: the pool keeps its value.
    Keep,
    Set(u32),
    /// Named in the mask but absent from the body: back to the default.
    Reset,
}

/// The update a request asks for, and the body fields its mask ignores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub min: Change,
    pub max: Change,
    /// Body fields present but not named by the mask (AIP-134: ignored).
    pub ignored: Vec<&'static str>,
}

/// Why a resize is refused (each maps to an API reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResizeError {
    #[error(
        "updateMask names {0:?}, which is not an updatable field: use minNodes, maxNodes or * (comma-separated)"
    )]
    UnknownField(String),
    #[error("nothing to update: send minNodes and/or maxNodes (or name them in updateMask)")]
    NothingToUpdate,
    #[error("{field} {n} is more than {MAX_NODES} (GKE's limit of nodes per node pool zone)")]
    TooMany { field: &'static str, n: u32 },
    #[error("maxNodes must be at least 1 (GKE refuses an autoscaling maximum of 0)")]
    MaxZero,
    #[error(
        "maxNodes {max} is below minNodes {min}: send a maxNodes of at least {min} (Kinetic's default for minNodes {min} is {default}), or name maxNodes in updateMask without a value to reset it to that default"
    )]
    MaxBelowMin { min: u32, max: u32, default: u32 },
    #[error(
        "{field} {n} is not a multiple of {hosts}, the host count of one {name} slice: use {lower} or {upper}"
    )]
    NotWholeSlices {
        field: &'static str,
        n: u32,
        hosts: u32,
        name: String,
        lower: u32,
        upper: u32,
    },
    #[error(
        "minNodes {min} asked of a {mode} pool: flex-start pools keep no warm nodes (GKE creates them with 0 nodes and grows them only when workloads ask{queued}), so their minimum stays 0; send minNodes 0 (or leave it out) and change maxNodes only"
    )]
    FlexWarm {
        mode: &'static str,
        min: u32,
        queued: &'static str,
    },
    #[error(
        "maxNodes {max} of this on-demand fallback pool is below maxNodes {spot_max} of its spot pool {spot_pool}: pods on the spot pool could not all fail over; give maxNodes >= {spot_max}, or resize the spot pool first"
    )]
    FallbackTooSmall {
        max: u32,
        spot_max: u32,
        spot_pool: String,
    },
}

impl ResizeError {
    pub fn reason(&self) -> &'static str {
        match self {
            ResizeError::UnknownField(_) => "INVALID_UPDATE_MASK",
            ResizeError::NothingToUpdate => "NOTHING_TO_UPDATE",
            ResizeError::TooMany {
                field: "minNodes", ..
            } => "INVALID_MIN_NODES",
            ResizeError::TooMany { .. }
            | ResizeError::MaxZero
            | ResizeError::MaxBelowMin { .. } => "INVALID_MAX_NODES",
            ResizeError::NotWholeSlices {
                field: "minNodes", ..
            } => "TPU_MIN_NODES_NOT_WHOLE_SLICES",
            ResizeError::NotWholeSlices { .. } => "TPU_MAX_NODES_NOT_WHOLE_SLICES",
            ResizeError::FallbackTooSmall { .. } => "FAILOVER_MAX_TOO_SMALL",
            // The same reason `pool add` gives for warm nodes on a flex-start pool.
            ResizeError::FlexWarm { .. } => "PROVISIONING_CONFLICT",
        }
    }
}

/// The update of a request: its `updateMask` (None or empty: the fields the body has)
/// and the body's `minNodes` / `maxNodes`.
pub fn update(
    mask: Option<&str>,
    min: Option<u32>,
    max: Option<u32>,
) -> Result<Update, ResizeError> {
    let mask = mask.map(str::trim).filter(|m| !m.is_empty());
    let Some(mask) = mask else {
        if min.is_none() && max.is_none() {
            return Err(ResizeError::NothingToUpdate);
        }
        let change = |v: Option<u32>| v.map_or(Change::Keep, Change::Set);
        return Ok(Update {
            min: change(min),
            max: change(max),
            ignored: Vec::new(),
        });
    };
    let (mut named_min, mut named_max) = (false, false);
    for path in mask.split(',').map(str::trim) {
        match path {
            "*" => (named_min, named_max) = (true, true),
            "minNodes" | "min_nodes" => named_min = true,
            "maxNodes" | "max_nodes" => named_max = true,
            other => return Err(ResizeError::UnknownField(other.to_owned())),
        }
    }
    let change = |named: bool, v: Option<u32>| match (named, v) {
        (false, _) => Change::Keep,
        (true, Some(v)) => Change::Set(v),
        (true, None) => Change::Reset,
    };
    let mut ignored = Vec::new();
    if !named_min && min.is_some() {
        ignored.push("minNodes");
    }
    if !named_max && max.is_some() {
        ignored.push("maxNodes");
    }
    Ok(Update {
        min: change(named_min, min),
        max: change(named_max, max),
        ignored,
    })
}

/// Hosts of one slice of `acc` (1 for GPUs and single-host TPUs).
fn hosts(acc: &Resolved) -> u32 {
    if acc.is_multi_host() {
        acc.hosts_per_slice.unwrap_or(1).max(1)
    } else {
        1
    }
}

/// Kinetic's default maximum for `min` nodes of `acc` (as `pool add` sets it): `min + 10`
/// for GPUs, `min` plus one slice for TPUs, capped at [`MAX_NODES`] in whole slices.
pub fn default_max(acc: &Resolved, min: u32) -> u32 {
    let step = match acc.kind {
        Kind::Gpu => 10,
        Kind::Tpu => acc.hosts_per_slice.unwrap_or(1).max(1),
    };
    let h = hosts(acc);
    let cap = MAX_NODES / h * h;
    (min + step).min(cap).max(min.max(1))
}

fn whole_slices(acc: &Resolved, field: &'static str, n: u32) -> Result<(), ResizeError> {
    let h = hosts(acc);
    if n.is_multiple_of(h) {
        return Ok(());
    }
    Err(ResizeError::NotWholeSlices {
        field,
        n,
        hosts: h,
        name: acc.base_name(),
        lower: n / h * h,
        upper: (n / h + 1) * h,
    })
}

/// The bounds a pool of `acc` at `current` ends up with after `u`.
pub fn target(acc: &Resolved, current: Bounds, u: &Update) -> Result<Bounds, ResizeError> {
    let min = match u.min {
        Change::Keep => current.min,
        Change::Set(v) => v,
        Change::Reset => 0,
    };
    if min > MAX_NODES {
        return Err(ResizeError::TooMany {
            field: "minNodes",
            n: min,
        });
    }
    whole_slices(acc, "minNodes", min)?;
    let max = match u.max {
        Change::Keep => current.max,
        Change::Set(v) => v,
        Change::Reset => default_max(acc, min),
    };
    if max > MAX_NODES {
        return Err(ResizeError::TooMany {
            field: "maxNodes",
            n: max,
        });
    }
    if max == 0 {
        return Err(ResizeError::MaxZero);
    }
    if max < min {
        return Err(ResizeError::MaxBelowMin {
            min,
            max,
            default: default_max(acc, min),
        });
    }
    whole_slices(acc, "maxNodes", max)?;
    Ok(Bounds { min, max })
}

/// A pool of provisioning `mode` may end at `to`: flex-start pools (FLEX_START, QUEUED)
/// keep `minNodes` 0, as `pool add` creates them (GKE's flex-start pools are created with
/// `--num-nodes=0` and scale from zero; their autoscaling is sent as total bounds with a
/// total minimum of 0 by the workflow's flex-start wire).
pub fn check_mode(mode: Provisioning, to: Bounds) -> Result<(), ResizeError> {
    if mode.is_flex_start() && to.min > 0 {
        return Err(ResizeError::FlexWarm {
            mode: mode.as_str(),
            min: to.min,
            queued: if mode == Provisioning::Queued {
                ", and a QUEUED pool only for a ProvisioningRequest"
            } else {
                ""
            },
        });
    }
    Ok(())
}

/// The on-demand fallback's new bounds when its spot pool goes to `spot`: its maximum is
/// raised to the spot pool's when below it (never lowered; its minimum is kept). `None`:
/// the fallback needs no change.
pub fn fallback_follows(spot: Bounds, fallback: Bounds) -> Option<Bounds> {
    (fallback.max < spot.max).then_some(Bounds {
        min: fallback.min,
        max: spot.max,
    })
}

/// A fallback resized on its own must still cover its spot pool's maximum.
pub fn check_fallback(fallback: Bounds, spot: Bounds, spot_pool: &str) -> Result<(), ResizeError> {
    if fallback.max < spot.max {
        return Err(ResizeError::FallbackTooSmall {
            max: fallback.max,
            spot_max: spot.max,
            spot_pool: spot_pool.to_owned(),
        });
    }
    Ok(())
}

/// Nodes (per zone) a resize adds to the pool's minimum: what the quota pre-check counts.
pub fn min_growth(from: Bounds, to: Bounds) -> u32 {
    to.min.saturating_sub(from.min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::testing::acc;

    const B: fn(u32, u32) -> Bounds = |min, max| Bounds { min, max };

    #[test]
    fn masks_follow_aip_134() {
        let u = update(None, Some(3), None).unwrap();
        assert_eq!((u.min, u.max), (Change::Set(3), Change::Keep));
        assert_eq!(update(None, None, None), Err(ResizeError::NothingToUpdate));
        assert_eq!(
            update(Some("  "), None, None).unwrap_err().reason(),
            "NOTHING_TO_UPDATE"
        );
        let u = update(Some("minNodes,maxNodes"), Some(2), None).unwrap();
        assert_eq!((u.min, u.max), (Change::Set(2), Change::Reset));
        let u = update(Some("*"), None, None).unwrap();
        assert_eq!((u.min, u.max), (Change::Reset, Change::Reset));
        let u = update(Some("max_nodes"), Some(2), Some(9)).unwrap();
        assert_eq!((u.min, u.max), (Change::Keep, Change::Set(9)));
        assert_eq!(u.ignored, ["minNodes"]);
        let e = update(Some("minNodes,spot"), Some(1), None).unwrap_err();
        assert_eq!(e, ResizeError::UnknownField("spot".into()));
        assert_eq!(e.reason(), "INVALID_UPDATE_MASK");
        assert!(update(Some("minNodes,,maxNodes"), Some(1), None).is_err());
    }

    #[test]
    fn gpu_bounds() {
        let l4 = acc("l4");
        let set = |min: Option<u32>, max: Option<u32>| update(None, min, max).unwrap();
        assert_eq!(target(&l4, B(0, 10), &set(Some(2), None)), Ok(B(2, 10)));
        assert_eq!(target(&l4, B(0, 10), &set(None, Some(4))), Ok(B(0, 4)));
        let e = target(&l4, B(0, 10), &set(Some(12), None)).unwrap_err();
        assert_eq!(e.reason(), "INVALID_MAX_NODES");
        assert!(
            e.to_string().contains("default for minNodes 12 is 22"),
            "{e}"
        );
        let reset = update(Some("minNodes,maxNodes"), Some(12), None).unwrap();
        assert_eq!(target(&l4, B(0, 10), &reset), Ok(B(12, 22)));
        assert_eq!(
            target(&l4, B(5, 15), &update(Some("*"), None, None).unwrap()),
            Ok(B(0, 10))
        );
        assert_eq!(
            target(&l4, B(0, 10), &set(None, Some(0))),
            Err(ResizeError::MaxZero)
        );
        assert_eq!(
            target(&l4, B(0, 10), &set(Some(1001), Some(1001)))
                .unwrap_err()
                .reason(),
            "INVALID_MIN_NODES"
        );
        assert_eq!(
            target(&l4, B(0, 10), &set(None, Some(1001)))
                .unwrap_err()
                .reason(),
            "INVALID_MAX_NODES"
        );
        assert_eq!(default_max(&l4, 995), 1000, "capped at the GKE limit");
        assert_eq!(default_max(&l4, 0), 10);
    }

    #[test]
    fn multi_host_tpus_resize_in_whole_slices() {
        let v5e = acc("v5e-16");
        let set = |min: Option<u32>, max: Option<u32>| update(None, min, max).unwrap();
        assert_eq!(target(&v5e, B(0, 4), &set(Some(8), Some(12))), Ok(B(8, 12)));
        let e = target(&v5e, B(0, 4), &set(Some(6), Some(12))).unwrap_err();
        assert_eq!(e.reason(), "TPU_MIN_NODES_NOT_WHOLE_SLICES");
        assert!(e.to_string().contains("use 4 or 8"), "{e}");
        let e = target(&v5e, B(0, 4), &set(None, Some(6))).unwrap_err();
        assert_eq!(e.reason(), "TPU_MAX_NODES_NOT_WHOLE_SLICES");
        let reset = update(Some("*"), Some(4), None).unwrap();
        assert_eq!(target(&v5e, B(0, 4), &reset), Ok(B(4, 8)), "one slice more");
        assert_eq!(default_max(&v5e, 1000), 1000);
        // Single-host TPUs take any count.
        assert_eq!(
            target(&acc("v5e-8"), B(0, 1), &set(Some(3), Some(5))),
            Ok(B(3, 5))
        );
    }

    #[test]
    fn the_fallback_covers_the_spot_pools_maximum() {
        assert_eq!(fallback_follows(B(2, 20), B(0, 10)), Some(B(0, 20)));
        assert_eq!(fallback_follows(B(0, 5), B(0, 10)), None, "never lowered");
        assert_eq!(fallback_follows(B(0, 10), B(1, 10)), None);
        assert!(check_fallback(B(0, 10), B(0, 10), "gpu-l4-1a2b").is_ok());
        let e = check_fallback(B(0, 8), B(0, 10), "gpu-l4-1a2b").unwrap_err();
        assert_eq!(e.reason(), "FAILOVER_MAX_TOO_SMALL");
        assert!(e.to_string().contains("gpu-l4-1a2b"), "{e}");
        assert_eq!(min_growth(B(1, 10), B(3, 10)), 2);
        assert_eq!(min_growth(B(3, 10), B(1, 10)), 0);
    }

    #[test]
    fn flex_start_pools_keep_min_nodes_at_zero() {
        for mode in [Provisioning::FlexStart, Provisioning::Queued] {
            assert_eq!(check_mode(mode, B(0, 20)), Ok(()));
            let e = check_mode(mode, B(2, 20)).unwrap_err();
            assert_eq!(e.reason(), "PROVISIONING_CONFLICT");
            assert!(e.to_string().contains(mode.as_str()), "{e}");
            assert!(e.to_string().contains("send minNodes 0"), "{e}");
        }
        let e = check_mode(Provisioning::Queued, B(1, 2)).unwrap_err();
        assert!(e.to_string().contains("ProvisioningRequest"), "{e}");
        for mode in [
            Provisioning::OnDemand,
            Provisioning::Spot,
            Provisioning::Reservation,
        ] {
            assert_eq!(check_mode(mode, B(3, 20)), Ok(()), "{mode:?}");
        }
    }
}
