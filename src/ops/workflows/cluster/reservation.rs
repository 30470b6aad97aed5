//! The reservation check inside the pool-create step: right before `nodePools.create`,
//! the reservation a pool's record names is read again (it may have been deleted,
//! consumed or changed since the pool was accepted).
//!
//! Invariant: a pool whose reservation is gone, mismatched or without `minNodes` free
//! VMs is never created: the step fails terminally with the same reason and metadata as
//! the API's 409 (RESERVATION_NOT_FOUND / _MISMATCH / _EXHAUSTED). A read refused with
//! 403 is logged and the pool is created (GKE refuses a reservation it cannot use);
//! other read errors are the step's error (retryable ones are retried).

use crate::cloud::gcp::compute::reservations::Verdict;
use crate::domain::accelerators::Kind;
use crate::domain::reservation::{
    Refusal, ReservationRef, Wanted, not_found_message, not_shared_message, refusal_message,
};
use crate::ops::steps::{RpcCode, StepError};
use crate::store::PoolSpecRecord;

use super::gcp_error;
use super::step::Step;
use crate::plan::ActionId;

/// What the pool of record `p` needs from its reservation.
fn wanted(zone: &str, p: &PoolSpecRecord) -> Wanted {
    Wanted {
        zones: if p.zones.is_empty() {
            vec![zone.to_owned()]
        } else {
            p.zones.clone()
        },
        machine_type: p.machine_type.clone(),
        accelerator: match (p.kind, &p.gke_accelerator_type) {
            (Kind::Gpu, Some(t)) => Some((t.clone(), p.accelerator_count.unwrap_or(1))),
            _ => None,
        },
        min_nodes: p.min_nodes,
    }
}

fn refused(r: &ReservationRef, zone: &str, refusal: &Refusal) -> StepError {
    let e = StepError::terminal(
        RpcCode::FailedPrecondition,
        refusal.reason(),
        refusal_message(r, zone, refusal),
    );
    let meta = refusal.metadata(r, zone);
    meta.into_iter().fold(e, |e, (k, v)| e.with(k, v))
}

/// Check the reservation of pool `p` (nothing to do when it names none).
pub async fn check<Id: ActionId>(s: &Step<'_, Id>, p: &PoolSpecRecord) -> Result<(), StepError> {
    let Some(r) = p.reservation.as_deref().and_then(ReservationRef::parse) else {
        return Ok(());
    };
    let n = s.names;
    let w = wanted(&n.zone, p);
    let compute = &s.env.cloud.gcp.compute;
    match compute
        .check_reservation(&n.project, &n.region, &r, &w)
        .await
    {
        Ok(Verdict::Holds(_)) => Ok(()),
        Ok(Verdict::NotFound { owner, searched }) => Err(StepError::terminal(
            RpcCode::FailedPrecondition,
            "RESERVATION_NOT_FOUND",
            not_found_message(&r, &owner, &n.project, &searched),
        )
        .with("reservation", &r)
        .with("project", &owner)),
        Ok(Verdict::NotShared { owner, zone }) => Err(StepError::terminal(
            RpcCode::FailedPrecondition,
            "RESERVATION_NOT_FOUND",
            not_shared_message(&r, &owner, &zone, &n.project),
        )
        .with("reservation", &r)
        .with("project", &owner)
        .with("zone", &zone)),
        Ok(Verdict::Refused(l, refusal)) => Err(refused(&r, &l.zone, &refusal)),
        Err(e) if e.http_status == 403 => {
            tracing::warn!(error = %e, reservation = %r, pool = %p.pool_id, "reservation not readable; creating the pool without the check");
            Ok(())
        }
        Err(e) => Err(gcp_error(e)),
    }
}
