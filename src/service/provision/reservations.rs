//! The reservation check of `pool add` and `up`: before a pool bound to a specific
//! reservation is accepted (or previewed), the reservation is read from its owner
//! project and must be in one of the pool's zones, hold the pool's machine type and
//! accelerators, and have `minNodes` VMs free.
//!
//! Invariant: a refusal is a 409 (FAILED_PRECONDITION) with RESERVATION_NOT_FOUND,
//! RESERVATION_MISMATCH (`field`, `wanted`, `found`) or RESERVATION_EXHAUSTED (`count`,
//! `inUseCount`, `needed`), the same for a preview and an apply; a reservation that
//! cannot be read for another reason (403, 5xx) is a warning, not a refusal: the
//! pool-create step reads it again before creating the pool.

use crate::cloud::Cloud;
use crate::cloud::gcp::compute::reservations::Verdict;
use crate::domain::accelerators::{Kind, Resolved};
use crate::domain::pools::PoolShape;
use crate::domain::reservation::{
    Refusal, ReservationRef, Wanted, not_found_message, not_shared_message, refusal_message,
};
use crate::domain::resource_names::ClusterNames;

use super::super::{Error, Result};

/// What a pool of `s` in `zones` (empty: the cluster's zone) needs from its reservation.
fn wanted(n: &ClusterNames, s: &PoolShape, zones: &[String]) -> Wanted {
    wanted_nodes(n, &s.accelerator, zones, s.min_nodes)
}

/// What `nodes` nodes of accelerator `a` in `zones` (empty: the cluster's zone) need.
fn wanted_nodes(n: &ClusterNames, a: &Resolved, zones: &[String], nodes: u32) -> Wanted {
    Wanted {
        zones: if zones.is_empty() {
            vec![n.zone.clone()]
        } else {
            zones.to_vec()
        },
        machine_type: a.machine_type.to_owned(),
        accelerator: (a.kind == Kind::Gpu)
            .then(|| (a.gke_accelerator_type.to_owned(), i64::from(a.count))),
        min_nodes: i64::from(nodes),
    }
}

/// The 409 for a refusal.
pub fn refusal_error(r: &ReservationRef, zone: &str, refusal: &Refusal) -> Error {
    let e = Error::precondition(refusal.reason(), refusal_message(r, zone, refusal));
    let meta = refusal.metadata(r, zone);
    meta.into_iter().fold(e, |e, (k, v)| e.with(k, v))
}

/// Check the reservation of each shape that names one; returns warnings for those that
/// could not be read.
pub async fn check_reservations(
    cloud: &Cloud,
    n: &ClusterNames,
    shapes: &[PoolShape],
    zones: &[String],
) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for s in shapes {
        let Some(raw) = s.reservation.as_deref() else {
            continue;
        };
        let Some(r) = ReservationRef::parse(raw) else {
            continue; // the shape rules refused it already
        };
        let w = wanted(n, s, zones);
        warnings.extend(check_one(cloud, n, &r, &w).await?);
    }
    Ok(warnings)
}

/// Check one reservation `r` for `w`: Ok(Some(warning)) when it could not be read.
async fn check_one(
    cloud: &Cloud,
    n: &ClusterNames,
    r: &ReservationRef,
    w: &Wanted,
) -> Result<Option<String>> {
    let compute = &cloud.gcp.compute;
    match compute.check_reservation(&n.project, &n.region, r, w).await {
        Ok(Verdict::Holds(_)) => Ok(None),
        Ok(Verdict::NotFound { owner, searched }) => Err(Error::precondition(
            "RESERVATION_NOT_FOUND",
            not_found_message(r, &owner, &n.project, &searched),
        )
        .with("reservation", r)
        .with("project", &owner)),
        Ok(Verdict::NotShared { owner, zone }) => Err(Error::precondition(
            "RESERVATION_NOT_FOUND",
            not_shared_message(r, &owner, &zone, &n.project),
        )
        .with("reservation", r)
        .with("project", &owner)
        .with("zone", &zone)),
        Ok(Verdict::Refused(l, refusal)) => Err(refusal_error(r, &l.zone, &refusal)),
        Err(e) => {
            tracing::warn!(error = %e, reservation = %r, "reservation check skipped");
            Ok(Some(format!(
                "reservation {r} not checked ({e}); the pool-create step checks it again{}",
                if r.owner.is_some() {
                    ": kineticd needs roles/compute.viewer (compute.reservations.get) on the owner project"
                } else {
                    ""
                }
            )))
        }
    }
}

/// The check of a resize of a pool of `acc` in `zones` bound to reservation `raw`
/// whose minimum grows by `growth` nodes (per zone): the reservation must still hold the
/// pool's machine type and accelerators and have `growth` more VMs free (the pool's
/// current nodes are already counted in its `inUseCount`). Same refusals as
/// [`check_reservations`]; a reservation that cannot be read is a warning.
pub async fn check_resize_growth(
    cloud: &Cloud,
    n: &ClusterNames,
    acc: &Resolved,
    raw: &str,
    zones: &[String],
    growth: u32,
) -> Result<Vec<String>> {
    let Some(r) = ReservationRef::parse(raw) else {
        return Ok(Vec::new()); // refused when the pool was added
    };
    if growth == 0 {
        return Ok(Vec::new());
    }
    let w = wanted_nodes(n, acc, zones, growth);
    let warning = check_one(cloud, n, &r, &w).await?;
    Ok(warning
        .map(|w| {
            w.replace(
                "the pool-create step checks it again",
                "GKE's autoscaler may not find the VMs",
            )
        })
        .into_iter()
        .collect())
}
