//! Read-only Compute facts: `regions.get` (zones and quotas with live usage),
//! `zones.get`/`zones.list`, `acceleratorTypes.list`/`get` (GPUs per zone) and
//! `machineTypes.get` (TPU machine types only where the TPUs are), lists paged by
//! [`crate::sim::gcp::list`] (by name).
//!
//! Invariant: quota usage is computed from the GKE pools at read time; the catalogue
//! (zones, GPUs per zone) never changes while the simulator runs.

use axum::Json;
use axum::extract::{Path, Query};

use crate::cloud::gcp::types::compute::{
    AcceleratorType, MachineType, MachineTypeAccelerator, Quota, Region, Zone,
};
use crate::sim::Sim;
use crate::sim::error::SimError;
use crate::sim::gcp::container;
use crate::sim::gcp::list::{ComputeList, PageQuery};

use super::catalog;
use super::handlers::{base, check_region, check_zone, zonal_not_found};
use super::quota;

/// A stable numeric id for a name (Compute ids are uint64 strings).
fn id_of(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h.to_string()
}

pub fn get_region(
    sim: &Sim,
    Path((project, region)): Path<(String, String)>,
) -> Result<Json<Region>, SimError> {
    check_region(&project, &region)?;
    let base = base(sim, &project);
    let w = sim.world();
    let usage = container::usage(&w, &project, &region);
    let quotas = quota::limits(&w, &region)
        .into_iter()
        .map(|(metric, limit)| Quota {
            usage: usage.get(metric.as_str()).copied().unwrap_or(0.0),
            metric,
            limit,
            owner: None,
        })
        .collect();
    let r = Region {
        id: Some(id_of(&region)),
        kind: Some("compute#region".into()),
        name: region.clone(),
        description: Some(region.clone()),
        status: Some("UP".into()),
        zones: catalog::zones_of(&region)
            .into_iter()
            .map(|z| format!("{base}/zones/{z}"))
            .collect(),
        quotas,
        self_link: Some(format!("{base}/regions/{region}")),
    };
    Ok(Json(r))
}

pub fn list_accelerator_types(
    sim: &Sim,
    Path((project, zone)): Path<(String, String)>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ComputeList<AcceleratorType>>, SimError> {
    list(sim, &project, &zone, &q).map(Json)
}

/// The zone's URL when it exists, else Compute's 404 for it.
fn zone_url(sim: &Sim, project: &str, zone: &str) -> Result<String, SimError> {
    check_zone(project, zone)?;
    Ok(format!("{}/zones/{zone}", base(sim, project)))
}

pub(super) fn accelerator_type(zone_url: &str, zone: &str, g: &catalog::Gpu) -> AcceleratorType {
    AcceleratorType {
        id: Some(id_of(&format!("{zone}/{}", g.name))),
        kind: Some("compute#acceleratorType".into()),
        name: g.name.to_owned(),
        description: Some(g.description.to_owned()),
        maximum_cards_per_instance: i32::try_from(g.max_cards).ok(),
        zone: Some(zone_url.to_owned()),
        self_link: Some(format!("{zone_url}/acceleratorTypes/{}", g.name)),
    }
}

fn list(
    sim: &Sim,
    project: &str,
    zone: &str,
    q: &PageQuery,
) -> Result<ComputeList<AcceleratorType>, SimError> {
    let zone_url = zone_url(sim, project, zone)?;
    let all = catalog::gpus_in_zone(zone)
        .into_iter()
        .map(|g| (g.name.to_owned(), accelerator_type(&zone_url, zone, g)))
        .collect();
    let link = format!("{zone_url}/acceleratorTypes");
    ComputeList::page("compute#acceleratorTypeList", link, all, q)
}

pub fn get_accelerator_type(
    sim: &Sim,
    Path((project, zone, name)): Path<(String, String, String)>,
) -> Result<Json<AcceleratorType>, SimError> {
    let url = zone_url(sim, &project, &zone)?;
    let gpu = catalog::gpus_in_zone(&zone)
        .into_iter()
        .find(|g| g.name == name);
    let Some(g) = gpu else {
        let what = format!("acceleratorTypes/{name}");
        return Err(zonal_not_found(&project, &zone, &what));
    };
    Ok(Json(accelerator_type(&url, &zone, g)))
}

pub fn get_machine_type(
    sim: &Sim,
    Path((project, zone, name)): Path<(String, String, String)>,
) -> Result<Json<MachineType>, SimError> {
    let url = zone_url(sim, &project, &zone)?;
    if !catalog::machine_in_zone(&name, &zone) {
        let what = format!("machineTypes/{name}");
        return Err(zonal_not_found(&project, &zone, &what));
    }
    Ok(Json(MachineType {
        id: Some(id_of(&format!("{zone}/{name}"))),
        kind: Some("compute#machineType".into()),
        description: Some(name.clone()),
        guest_cpus: catalog::vcpus(&name).and_then(|n| i32::try_from(n).ok()),
        accelerators: catalog::bundled_gpu(&name)
            .map(|(gpu, count)| MachineTypeAccelerator {
                guest_accelerator_type: gpu.to_owned(),
                guest_accelerator_count: i32::try_from(count).unwrap_or(0),
            })
            .into_iter()
            .collect(),
        zone: Some(zone.clone()),
        self_link: Some(format!("{url}/machineTypes/{name}")),
        name,
        ..MachineType::default()
    }))
}

fn zone(sim: &Sim, project: &str, name: &str) -> Option<Zone> {
    let region = catalog::zone_region(name)?;
    let base = base(sim, project);
    Some(Zone {
        id: Some(id_of(name)),
        kind: Some("compute#zone".into()),
        name: name.to_owned(),
        description: Some(name.to_owned()),
        status: Some("UP".into()),
        region: Some(format!("{base}/regions/{region}")),
        available_cpu_platforms: Vec::new(),
        creation_timestamp: Some("1969-12-31T16:00:00.000-08:00".into()),
        self_link: Some(format!("{base}/zones/{name}")),
    })
}

pub fn get_zone(
    sim: &Sim,
    Path((project, name)): Path<(String, String)>,
) -> Result<Json<Zone>, SimError> {
    let found = zone(sim, &project, &name).ok_or_else(|| zonal_not_found(&project, &name, ""));
    found.map(Json)
}

pub fn list_zones(
    sim: &Sim,
    Path(project): Path<String>,
    Query(q): Query<PageQuery>,
) -> Result<Json<ComputeList<Zone>>, SimError> {
    let all = catalog::all_zones()
        .iter()
        .filter_map(|z| zone(sim, &project, z).map(|zone| (z.clone(), zone)))
        .collect();
    let link = format!("{}/zones", base(sim, &project));
    let listed = ComputeList::page("compute#zoneList", link, all, &q);
    listed.map(Json)
}
