//! Simulated `reservations.insert` (a zonal operation that adds the reservation when
//! DONE, `requestId` deduplicated) and `reservations.delete` (gone at once), with
//! Compute's checks of a new reservation (name, zone, count, machine type and GPUs
//! offered in the zone, share settings).
//!
//! Invariant: a body is parsed strictly and checked before anything changes; a replayed
//! `requestId` returns the operation it started; a name taken (or being created) is 409.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query};

use crate::cloud::gcp::types::compute::Operation;
use crate::cloud::gcp::types::reservation::{Reservation, ShareSettings};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::error::SimError;

use super::handlers::{F, Rq, base, check_zone, request_id};
use super::reservations::{ZoneOp, key};
use super::{catalog, operation};

/// Virtual time a reservation takes to be created.
const CREATE: std::time::Duration = std::time::Duration::from_secs(5);

fn invalid(msg: impl Into<String>) -> SimError {
    SimError::invalid(F, msg)
}

/// Compute's checks of a new reservation.
fn validate(r: &Reservation, zone: &str) -> Result<(), SimError> {
    if !crate::sim::gcp::is_lowercase_label(&r.name, 63) {
        return Err(invalid(format!(
            "Invalid value for field 'resource.name': '{}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{{0,61}}[a-z0-9])?)'",
            r.name
        )));
    }
    if let Some(z) = r.zone.as_deref()
        && z.rsplit('/').next() != Some(zone)
    {
        return Err(invalid(format!(
            "Invalid value for field 'resource.zone': '{z}'. Zone must match the request zone '{zone}'."
        )));
    }
    let Some(sku) = &r.specific_reservation else {
        return Err(invalid(
            "Invalid value for field 'resource.specificReservation': ''. A specific reservation is required.",
        ));
    };
    if sku.count.unwrap_or(0) <= 0 {
        return Err(invalid(
            "Invalid value for field 'resource.specificReservation.count': '0'. Must be greater than 0.",
        ));
    }
    let machine = sku
        .instance_properties
        .as_ref()
        .map(|p| p.machine_type.as_str())
        .unwrap_or("");
    if sku.source_instance_template.is_none() && !catalog::machine_in_zone(machine, zone) {
        return Err(invalid(format!(
            "Invalid value for field 'resource.specificReservation.instanceProperties.machineType': '{machine}'. Machine type with name '{machine}' does not exist in zone '{zone}'."
        )));
    }
    for a in sku
        .instance_properties
        .iter()
        .flat_map(|p| &p.guest_accelerators)
    {
        let t = a.accelerator_type.rsplit('/').next().unwrap_or("");
        if !catalog::gpus_in_zone(zone).iter().any(|g| g.name == t) {
            return Err(invalid(format!(
                "Invalid value for field 'resource.specificReservation.instanceProperties.guestAccelerators[0].acceleratorType': '{t}'. Accelerator type '{t}' does not exist in zone '{zone}'."
            )));
        }
    }
    if let Some(s) = &r.share_settings {
        match s.share_type.as_deref() {
            Some("SPECIFIC_PROJECTS") if s.project_map.is_empty() => {
                return Err(invalid(
                    "Invalid value for field 'resource.shareSettings.projectMap': ''. SPECIFIC_PROJECTS needs at least one project.",
                ));
            }
            Some("LOCAL") | None if !s.project_map.is_empty() => {
                return Err(invalid(
                    "Invalid value for field 'resource.shareSettings.projectMap': a LOCAL reservation is not shared with other projects.",
                ));
            }
            None | Some("LOCAL" | "SPECIFIC_PROJECTS" | "ORGANIZATION") => {}
            Some(t) => {
                return Err(invalid(format!(
                    "Invalid value for field 'resource.shareSettings.shareType': '{t}'."
                )));
            }
        }
    }
    Ok(())
}

fn op_name() -> String {
    format!(
        "operation-{}-{:013x}-{:08x}",
        chrono::Utc::now().timestamp_millis(),
        rand::random::<u64>() & 0x1f_ffff_ffff_ffff,
        rand::random::<u32>()
    )
}

pub fn insert(
    sim: &Sim,
    Path((project, zone)): Path<(String, String)>,
    Query(q): Query<Rq>,
    body: Bytes,
) -> Result<Json<Operation>, SimError> {
    let mut r: Reservation = strict(F, &body)?;
    let rid = request_id(&q)?;
    let clock = sim.clock();
    let mut w = sim.world();
    if let Some(name) = rid
        .as_ref()
        .and_then(|id| w.compute.reservations.requests.get(id))
    {
        let known = w
            .compute
            .reservations
            .operations
            .iter()
            .find(|o| &o.op.name == name);
        if let Some(o) = known {
            return Ok(Json(o.op.clone()));
        }
    }
    check_zone(&project, &zone)?;
    validate(&r, &zone)?;
    let k = key(&project, &zone, &r.name);
    let what = format!("projects/{project}/zones/{zone}/reservations/{}", r.name);
    let pending = w
        .compute
        .reservations
        .operations
        .iter()
        .any(|o| o.op.status != "DONE" && o.insert.as_ref().is_some_and(|(ok, _)| *ok == k));
    if w.compute.reservations.items.contains_key(&k) || pending {
        return Err(SimError::already_exists(F, &what));
    }
    let base = base(sim, &project);
    let zone_url = format!("{base}/zones/{zone}");
    let now = clock.now();
    let stamp = w.compute.stamp(clock, now);
    let id = rand::random::<u64>().to_string();
    r.id = Some(id.clone());
    r.kind = Some("compute#reservation".into());
    r.zone = Some(zone_url.clone());
    r.self_link = Some(format!("{zone_url}/reservations/{}", r.name));
    r.creation_timestamp = Some(stamp.clone());
    r.status = Some("READY".into());
    r.specific_reservation_required.get_or_insert(false);
    r.share_settings.get_or_insert_with(|| ShareSettings {
        share_type: Some("LOCAL".into()),
        ..ShareSettings::default()
    });
    if let Some(s) = r.specific_reservation.as_mut() {
        s.in_use_count = Some(0);
        s.assured_count = s.count;
    }
    let name = op_name();
    let op = Operation {
        target_link: r.self_link.clone(),
        target_id: Some(id),
        zone: Some(zone_url.clone()),
        ..operation::pending(&zone_url, &name, "insert", &stamp)
    };
    w.compute.reservations.operations.push(ZoneOp {
        op: op.clone(),
        project,
        zone,
        done_at: now + CREATE,
        insert: Some((k, r)),
    });
    if let Some(id) = rid {
        w.compute.reservations.requests.insert(id, name);
    }
    Ok(Json(op))
}

/// `reservations.delete`: gone at once (a DONE zonal operation).
pub fn delete(
    sim: &Sim,
    Path((project, zone, name)): Path<(String, String, String)>,
    Query(q): Query<Rq>,
) -> Result<Json<Operation>, SimError> {
    let rid = request_id(&q)?;
    check_zone(&project, &zone)?;
    let clock = sim.clock();
    let mut w = sim.world();
    let r = w.compute.reservations.take(&project, &zone, &name)?;
    let stamp = w.compute.stamp(clock, clock.now());
    let zone_url = format!("{}/zones/{zone}", base(sim, &project));
    let op_name = op_name();
    let op = Operation {
        target_link: r.self_link.clone(),
        target_id: r.id.clone(),
        zone: Some(zone_url.clone()),
        user: None,
        ..operation::done(&zone_url, &op_name, "delete", &stamp)
    };
    w.compute.reservations.operations.push(ZoneOp {
        op: op.clone(),
        project: project.clone(),
        zone: zone.clone(),
        done_at: clock.now(),
        insert: None,
    });
    if let Some(id) = rid {
        w.compute.reservations.requests.insert(id, op_name);
    }
    Ok(Json(op))
}
