//! Where a pool may go, asked of Compute before any preview and before anything is
//! written: the zone exists (`zones.get`), and it offers the accelerator — a GPU through
//! `acceleratorTypes.get`, a TPU through `machineTypes.get` of its GKE machine type
//! (`ct5lp-hightpu-4t`): Compute lists TPU machine types only in the zones that have
//! those TPUs, and it is what GKE checks a TPU node pool against.
//!
//! Invariant: a zone or an accelerator is refused only on Compute's word (404), with the
//! alternatives in the error's metadata; any other failure to read is 503 UNAVAILABLE
//! (never a pass, never a 500) — except a project whose Compute Engine API is not
//! enabled yet (403 SERVICE_DISABLED), which cannot be asked until `up` enables it: the
//! check is then skipped with a plan warning saying so.

use std::collections::BTreeSet;

use crate::cloud::Cloud;
use crate::cloud::gcp::GcpError;
use crate::cloud::gcp::types::compute::Zone;
use crate::domain::RpcCode;
use crate::domain::accelerators::{Kind, Resolved};

use super::super::{Error, Result};

/// 503 UNAVAILABLE: Compute could not answer what `what` needed.
fn unavailable(e: &GcpError, what: &str) -> Error {
    Error::new(
        RpcCode::Unavailable,
        "CLOUD_UNAVAILABLE",
        format!(
            "could not check {what}: Compute Engine's {} answered {} {} ({}); nothing was changed, retry shortly",
            e.method, e.http_status, e.reason, e.message
        ),
    )
    .with("service", e.service)
    .with("method", e.method)
    .with("cloudReason", &e.reason)
}

/// Compute's API is off in the project (it answers nothing until `up` enables it).
fn region_of(z: &Zone) -> &str {
    z.region_name().unwrap_or("")
}

/// `zone` exists in the project's Compute (400 INVALID_ZONE listing its region's zones,
/// or the regions when the region does not exist either); `Ok(false)`: Compute's API is
/// not enabled in the project, nothing could be checked.
async fn check_zone(cloud: &Cloud, project: &str, zone: &str) -> Result<bool> {
    let compute = &cloud.gcp.compute;
    match compute.get_zone(project, zone).await {
        Ok(_) => return Ok(true),
        Err(e) if e.is_not_found() => {}
        Err(e) if e.is_service_disabled() => return Ok(false),
        Err(e) => return Err(unavailable(&e, &format!("zone {zone}"))),
    }
    let all = compute
        .list_zones(project)
        .await
        .map_err(|e| unavailable(&e, &format!("zone {zone}")))?;
    let region = zone.rsplit_once('-').map_or(zone, |(r, _)| r);
    let mut same: Vec<&str> = all
        .iter()
        .filter(|z| region_of(z) == region)
        .map(|z| z.name.as_str())
        .collect();
    same.sort_unstable();
    let e = if same.is_empty() {
        let regions: BTreeSet<&str> = all.iter().map(region_of).collect();
        let regions: Vec<&str> = regions.into_iter().filter(|r| !r.is_empty()).collect();
        Error::invalid(
            "INVALID_ZONE",
            format!(
                "zone {zone} does not exist: Compute Engine has no region {region}; use a zone of one of its regions ({})",
                regions.join(", ")
            ),
        )
        .with("regions", regions.join(","))
    } else {
        Error::invalid(
            "INVALID_ZONE",
            format!(
                "zone {zone} does not exist; region {region} has zones {}",
                same.join(", ")
            ),
        )
    };
    Err(e
        .with("zone", zone)
        .with("region", region)
        .with("zones", same.join(",")))
}

/// Whether `zone` offers `acc` (an error: Compute could not say).
pub async fn offered(
    cloud: &Cloud,
    project: &str,
    zone: &str,
    acc: &Resolved,
) -> std::result::Result<bool, GcpError> {
    let c = &cloud.gcp.compute;
    let found = match acc.kind {
        Kind::Gpu => c
            .get_accelerator_type(project, zone, acc.gke_accelerator_type)
            .await
            .map(|_| ()),
        Kind::Tpu => c
            .get_machine_type(project, zone, acc.machine_type)
            .await
            .map(|_| ()),
    };
    match found {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e),
    }
}

/// Every zone of `zones` exists and offers `acc` when given (400 INVALID_ZONE, or 400
/// ACCELERATOR_NOT_IN_ZONE listing the zones of the region that do); returns the plan
/// warnings (the check skipped while Compute's API is off in the project).
pub async fn check_placement(
    cloud: &Cloud,
    project: &str,
    zones: &[String],
    acc: Option<&Resolved>,
) -> Result<Vec<String>> {
    for zone in zones {
        if !check_zone(cloud, project, zone).await? {
            return Ok(vec![format!(
                "zone {} and accelerator not checked: the Compute Engine API is not enabled in project {project} yet (up enables it first)",
                zones.join(", ")
            )]);
        }
        let Some(acc) = acc else { continue };
        let what = format!("whether {zone} offers {}", acc.base_name());
        if offered(cloud, project, zone, acc)
            .await
            .map_err(|e| unavailable(&e, &what))?
        {
            continue;
        }
        return Err(not_in_zone(cloud, project, zone, acc).await);
    }
    Ok(Vec::new())
}

/// 400 ACCELERATOR_NOT_IN_ZONE, with the region's zones that offer `acc` (those Compute
/// could not answer for are left out and counted in the message).
async fn not_in_zone(cloud: &Cloud, project: &str, zone: &str, acc: &Resolved) -> Error {
    let region = zone.rsplit_once('-').map_or(zone, |(r, _)| r);
    let (zones, region_read) = match cloud.gcp.compute.get_region(project, region).await {
        Ok(r) => (
            r.zones
                .iter()
                .filter_map(|z| z.rsplit('/').next().map(str::to_owned))
                .collect(),
            true,
        ),
        Err(_) => (Vec::new(), false),
    };
    let answers =
        futures::future::join_all(zones.iter().map(|z| offered(cloud, project, z, acc))).await;
    let mut offering = Vec::new();
    let mut unknown = 0;
    for (z, a) in zones.iter().zip(answers) {
        match a {
            Ok(true) => offering.push(z.as_str()),
            Ok(false) => {}
            Err(_) => unknown += 1,
        }
    }
    let name = acc.base_name();
    let elsewhere = if !region_read {
        format!("the other zones of {region} could not be checked; retry to see them")
    } else if offering.is_empty() {
        format!(
            "no zone of {region} offers it: choose another accelerator or region (GET /v1/accelerators)"
        )
    } else {
        format!("zones of {region} that do: {}", offering.join(", "))
    };
    let unchecked = if unknown > 0 {
        format!(" ({unknown} zones could not be checked)")
    } else {
        String::new()
    };
    Error::invalid(
        "ACCELERATOR_NOT_IN_ZONE",
        format!("zone {zone} does not offer {name}; {elsewhere}{unchecked}"),
    )
    .with("accelerator", name)
    .with("zone", zone)
    .with("region", region)
    .with("zones", offering.join(","))
}
