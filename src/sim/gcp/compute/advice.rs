//! Simulated capacity advice (`advice.capacity`): Compute's obtainability estimate for
//! `size` VMs of a machine shape in the zones of a region, answered from the
//! simulator's own capacity model: a zone that does not offer the shape has no
//! capacity, a zone out of stock of the accelerator (`/sim/v1/stockouts`, or configured)
//! scores 0, scarce GPUs (offered in few zones) and spot VMs score lower, and larger
//! requests lower still.
//!
//! Invariant: the answer is a pure function of the request and the stockouts at the
//! time of the call (nothing changes); it is Compute's shape: one recommendation with
//! its scores and, when obtainable, one shard per zone chosen (ANY_SINGLE_ZONE: the best
//! zone; otherwise every zone that scores above 0).

use axum::Json;
use axum::body::Bytes;
use axum::extract::Path;

use crate::cloud::gcp::types::advice::{
    CapacityAdviceRequest, CapacityAdviceResponse, Recommendation, Scores, Shard,
};
use crate::sim::Sim;
use crate::sim::body::strict;
use crate::sim::error::SimError;
use crate::sim::gcp::container;

use super::catalog;
use super::handlers::{F, check_region};

/// The machine type and accelerator the request asks about.
fn shape(req: &CapacityAdviceRequest) -> Result<(String, Option<String>), SimError> {
    let sel = req
        .instance_flexibility_policy
        .as_ref()
        .and_then(|p| p.instance_selections.values().next())
        .ok_or_else(|| {
            SimError::invalid(F, "Invalid value for field 'instanceFlexibilityPolicy': at least one instance selection is required.")
        })?;
    let machine = sel.machine_types.first().cloned().ok_or_else(|| {
        SimError::invalid(F, "Invalid value for field 'instanceFlexibilityPolicy.instanceSelections.machineTypes': at least one machine type is required.")
    })?;
    if catalog::vcpus(&machine).is_none() {
        return Err(SimError::invalid(
            F,
            format!("Invalid value for field 'machineTypes': '{machine}'. Unknown machine type."),
        ));
    }
    let accel = sel
        .guest_accelerators
        .first()
        .map(|a| {
            a.accelerator_type
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .or_else(|| catalog::bundled_gpu(&machine).map(|(a, _)| a.to_owned()))
        .or_else(|| catalog::tpu_machine(&machine).map(|t| t.accelerator.to_owned()));
    Ok((machine, accel))
}

/// Whether `zone` offers `machine` with `accel` attached.
fn offered(machine: &str, accel: Option<&str>, zone: &str) -> bool {
    if !catalog::machine_in_zone(machine, zone) {
        return false;
    }
    match accel {
        Some(a) if catalog::gpu_by_name(a).is_some() => {
            catalog::gpus_in_zone(zone).iter().any(|g| g.name == a)
        }
        _ => true,
    }
}

/// The model's obtainability of `size` VMs in one zone that offers the shape.
fn score(accel: Option<&str>, model: &str, size: i32, stocked_out: bool) -> f64 {
    if stocked_out {
        return 0.0;
    }
    let base = match model {
        "SPOT" => 0.7,
        "FLEX_START" => 0.8,
        _ => 0.9,
    };
    let scarce = accel
        .and_then(catalog::gpu_by_name)
        .is_some_and(|g| g.scarce);
    let base = if scarce { base - 0.2 } else { base };
    // Each VM asked for lowers the odds a little, down to a floor.
    let size = f64::from(size.max(1));
    ((base - 0.01 * (size - 1.0)).max(0.1) * 100.0).round() / 100.0
}

/// `POST /compute/v1/projects/{p}/regions/{r}/advice/capacity`.
pub fn capacity(
    sim: &Sim,
    Path((project, region)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<CapacityAdviceResponse>, SimError> {
    check_region(&project, &region)?;
    let req: CapacityAdviceRequest = strict(F, &body)?;
    let size = req.size.unwrap_or(1);
    if size < 1 {
        return Err(SimError::invalid(
            F,
            format!("Invalid value for field 'size': {size}. Must be greater than or equal to 1."),
        ));
    }
    let (machine, accel) = shape(&req)?;
    let model = req
        .instance_properties
        .as_ref()
        .and_then(|p| p.scheduling.as_ref())
        .and_then(|s| s.provisioning_model.clone())
        .unwrap_or_else(|| "STANDARD".into());
    let policy = req.distribution_policy.clone().unwrap_or_default();
    let mut zones: Vec<String> = policy
        .zones
        .iter()
        .map(|z| z.zone.rsplit('/').next().unwrap_or("").to_owned())
        .collect();
    if zones.is_empty() {
        zones = catalog::zones_of(&region);
    }
    if let Some(z) = zones
        .iter()
        .find(|z| catalog::zone_region(z) != Some(region.as_str()))
    {
        return Err(SimError::invalid(
            F,
            format!(
                "Invalid value for field 'distributionPolicy.zones': '{z}'. The zone is not in region {region}."
            ),
        ));
    }
    let w = sim.world();
    let mut scored: Vec<(String, f64)> = zones
        .into_iter()
        .filter(|z| offered(&machine, accel.as_deref(), z))
        .map(|z| {
            let out = accel
                .as_deref()
                .is_some_and(|a| container::stocked_out(sim, &w.container, &z, a));
            let s = score(accel.as_deref(), &model, size, out);
            (z, s)
        })
        .collect();
    drop(w);
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let single = policy.target_shape.as_deref() == Some("ANY_SINGLE_ZONE");
    let chosen: Vec<&(String, f64)> = if single {
        scored.iter().take(1).filter(|(_, s)| *s > 0.0).collect()
    } else {
        scored.iter().filter(|(_, s)| *s > 0.0).collect()
    };
    let obtainability = if single {
        chosen.first().map_or(0.0, |(_, s)| *s)
    } else if chosen.is_empty() {
        0.0
    } else {
        chosen.iter().map(|(_, s)| *s).fold(0.0, f64::max)
    };
    let per = |i: usize| {
        let n = i32::try_from(chosen.len().max(1)).unwrap_or(1);
        size / n + i32::from(i32::try_from(i).unwrap_or(0) < size % n)
    };
    let shards = chosen
        .iter()
        .enumerate()
        .map(|(i, (z, _))| Shard {
            zone: Some(z.clone()),
            machine_type: Some(machine.clone()),
            instance_count: Some(if single { size } else { per(i) }),
            provisioning_model: Some(model.clone()),
        })
        .collect();
    let uptime = (model == "SPOT" && obtainability > 0.0).then(|| "10800s".to_owned());
    Ok(Json(CapacityAdviceResponse {
        recommendations: vec![Recommendation {
            scores: Some(Scores {
                obtainability: Some(obtainability),
                estimated_uptime: uptime,
            }),
            shards,
        }],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stockouts_scarcity_spot_and_size_lower_the_score() {
        assert_eq!(score(Some("nvidia-l4"), "STANDARD", 1, false), 0.9);
        assert_eq!(score(Some("nvidia-l4"), "STANDARD", 1, true), 0.0);
        assert_eq!(score(Some("nvidia-l4"), "SPOT", 1, false), 0.7);
        assert_eq!(score(Some("nvidia-h100-80gb"), "STANDARD", 1, false), 0.7);
        assert_eq!(score(Some("nvidia-l4"), "STANDARD", 11, false), 0.8);
        assert_eq!(score(None, "STANDARD", 1000, false), 0.1);
    }
}
