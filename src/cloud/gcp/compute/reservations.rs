//! Compute Engine zonal reservations: `reservations.get`, `reservations.list`,
//! `reservations.insert`, `reservations.delete`, and [`Compute::locate_reservation`], which finds the
//! reservation a pool names (in its owner project) among the zones of the pool's region.
//!
//! Invariant: one method per Google call; `insert` carries a `requestId`, so a retried
//! call (same id) is deduplicated by Compute; a 404 from `get` is "not in this zone"
//! (Compute also answers 404 to a project the reservation is not shared with), any
//! other error is returned as it is, never read as absence.

use uuid::Uuid;

use super::super::error::GcpError;
use super::super::http::Call;
use super::super::types::compute::Operation;
use super::super::types::reservation::{Reservation, ReservationList, ShareSettings};
use super::{Compute, SVC, all_pages, paged};
use crate::domain::reservation::{Found, Refusal, ReservationRef, Wanted, check, last_segment};

/// What [`Compute::check_reservation`] decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The reservation can hold the pool.
    Holds(Located),
    /// No zone of the region has it (or it is not shared with the pool's project).
    NotFound {
        owner: String,
        searched: Vec<String>,
    },
    /// It exists in another project that does not share it with the pool's project
    /// (Compute would answer the pool's VMs as if it did not exist).
    NotShared {
        owner: String,
        zone: String,
    },
    Refused(Located, Refusal),
}

/// Where [`Compute::locate_reservation`] found the reservation.
#[derive(Debug, Clone, PartialEq)]
pub struct Located {
    pub zone: String,
    pub reservation: Reservation,
}

impl Located {
    /// What the reservation holds, for [`crate::domain::reservation::check`].
    pub fn found(&self) -> Found {
        let sku = self
            .reservation
            .specific_reservation
            .clone()
            .unwrap_or_default();
        let props = sku.instance_properties.clone().unwrap_or_default();
        Found {
            zone: self
                .reservation
                .zone
                .as_deref()
                .map(last_segment)
                .unwrap_or(&self.zone)
                .to_owned(),
            machine_type: last_segment(&props.machine_type).to_owned(),
            accelerators: props
                .guest_accelerators
                .iter()
                .map(|a| {
                    (
                        last_segment(&a.accelerator_type).to_owned(),
                        i64::from(a.accelerator_count.unwrap_or(0)),
                    )
                })
                .collect(),
            count: sku.count.unwrap_or(0),
            in_use: sku.in_use_count.unwrap_or(0),
        }
    }
}

impl Compute {
    /// `reservations.get`: 404 when the zone has no such reservation, or when it is not
    /// shared with the caller's project.
    pub async fn get_reservation(
        &self,
        project: &str,
        zone: &str,
        name: &str,
    ) -> Result<Reservation, GcpError> {
        let path = format!("projects/{project}/zones/{zone}/reservations/{name}");
        self.http.get(SVC, "reservations.get", path).await
    }

    /// `reservations.list`, one page.
    pub async fn list_reservations_page(
        &self,
        project: &str,
        zone: &str,
        max_results: Option<u32>,
        page_token: Option<&str>,
    ) -> Result<ReservationList, GcpError> {
        let call = reservations(project, zone);
        self.http.call(paged(call, max_results, page_token)).await
    }

    /// `reservations.list`, every page.
    pub async fn list_reservations(
        &self,
        project: &str,
        zone: &str,
    ) -> Result<Vec<Reservation>, GcpError> {
        all_pages::<ReservationList>(&self.http, reservations(project, zone), None).await
    }

    /// `reservations.insert`: POST `projects/{p}/zones/{z}/reservations?requestId=`; a
    /// zonal operation.
    pub async fn insert_reservation(
        &self,
        project: &str,
        zone: &str,
        reservation: &Reservation,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let path = format!("projects/{project}/zones/{zone}/reservations");
        self.post("reservations.insert", path, reservation, request_id)
            .await
    }

    /// `reservations.delete` (kineticd never deletes a reservation; for tests and tools).
    pub async fn delete_reservation(
        &self,
        project: &str,
        zone: &str,
        name: &str,
        request_id: Uuid,
    ) -> Result<Operation, GcpError> {
        let path = format!("projects/{project}/zones/{zone}/reservations/{name}");
        self.delete("reservations.delete", path, request_id).await
    }

    /// The reservation `name` of `owner`, looked for in `zones` in order (the pool's
    /// zones first, then the rest of its region): `None` when no zone has it (or it is
    /// not shared with the caller); any error other than 404 is returned.
    pub async fn locate_reservation(
        &self,
        owner: &str,
        name: &str,
        zones: &[String],
    ) -> Result<Option<Located>, GcpError> {
        for zone in zones {
            match self.get_reservation(owner, zone, name).await {
                Ok(reservation) => {
                    return Ok(Some(Located {
                        zone: zone.clone(),
                        reservation,
                    }));
                }
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Read the reservation a pool in `project`/`region` names and decide whether it can
    /// hold the pool: a reservation of another project must list `project` in its
    /// `shareSettings` (reading it needs `compute.reservations.get` on the owner
    /// project, which sharing does not give); it is looked for in the pool's zones, then (to tell "another zone" from
    /// "does not exist") in the other zones of the region, as `regions.get` lists them.
    pub async fn check_reservation(
        &self,
        project: &str,
        region: &str,
        reservation: &ReservationRef,
        wanted: &Wanted,
    ) -> Result<Verdict, GcpError> {
        let owner = reservation.owner_or(project);
        let name = reservation.name.as_str();
        if let Some(l) = self.locate_reservation(owner, name, &wanted.zones).await? {
            return Ok(verdict(l, owner, project, wanted));
        }
        let others: Vec<String> = self
            .get_region(project, region)
            .await?
            .zones
            .iter()
            .map(|z| last_segment(z).to_owned())
            .filter(|z| !wanted.zones.contains(z))
            .collect();
        if let Some(l) = self.locate_reservation(owner, name, &others).await? {
            return Ok(verdict(l, owner, project, wanted));
        }
        let mut searched = wanted.zones.clone();
        searched.extend(others);
        Ok(Verdict::NotFound {
            owner: owner.to_owned(),
            searched,
        })
    }
}

/// `reservations.list` of a zone (a page size and token still to add).
fn reservations<'a>(project: &str, zone: &str) -> Call<'a> {
    let path = format!("projects/{project}/zones/{zone}/reservations");
    Call::get(SVC, "reservations.list", path)
}

fn verdict(l: Located, owner: &str, project: &str, wanted: &Wanted) -> Verdict {
    if !ShareSettings::shared_with(l.reservation.share_settings.as_ref(), owner, project) {
        return Verdict::NotShared {
            owner: owner.to_owned(),
            zone: l.zone,
        };
    }
    match check(wanted, &l.found()) {
        Ok(()) => Verdict::Holds(l),
        Err(r) => Verdict::Refused(l, r),
    }
}
