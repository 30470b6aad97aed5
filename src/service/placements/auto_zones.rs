//! `zones: ["auto"]` of `pool add`: the zones of the cluster's region a spot pool spreads
//! over, as the placement advice ranks them (quota, Compute's capacity advice,
//! kineticd's stockout record, price), with GKE's `locationPolicy: ANY` so the
//! autoscaler itself creates nodes wherever capacity is.
//!
//! Invariant: a zone is left out only on evidence (it does not offer the type, or
//! Compute's advice says 0 obtainable); zones that could not be judged are kept, with a
//! note; when nothing could be read the pool stays in the cluster's zone, and the notes
//! say so. The notes name every zone chosen or left out and why.

use crate::domain::accelerators::Resolved;
use crate::domain::provisioning::Provisioning;
use crate::domain::resource_names::ClusterNames;
use crate::model::placement::Placement;
use crate::store;

use super::super::{Result, Services};
use super::rank::{self, Candidate, Facts};
use super::reads::{self, Ask};

/// The zones chosen, best first, and the plan notes explaining them.
pub struct AutoZones {
    pub zones: Vec<String>,
    pub notes: Vec<String>,
}

/// The spot pool of `acc` (of `count` accelerators at its minimum) in cluster `n`'s
/// region: the zones to spread over.
pub async fn choose(
    svc: &Services,
    n: &ClusterNames,
    acc: &Resolved,
    nodes: u32,
) -> Result<AutoZones> {
    let mode = Provisioning::Spot;
    let count = u64::from(nodes.max(1)) * u64::from(acc.count.max(1));
    let ask = Ask {
        acc,
        mode,
        vms: nodes.max(1),
        zones: &[],
        reservations: false,
    };
    let region = (n.project.clone(), n.region.clone());
    let r = reads::read(
        &svc.cloud,
        &svc.cluster_access,
        &ask,
        Vec::new(),
        vec![region],
        svc.placement_deadline,
    )
    .await;
    let mut notes: Vec<String> = r
        .warnings
        .iter()
        .map(|w| format!("zones auto: {w}"))
        .collect();
    let all: Vec<String> = r
        .regions
        .iter()
        .flat_map(|g| g.zones.iter().map(|z| z.zone.clone()))
        .collect();
    let stockouts = store::capacity_failures::per_zone(&svc.db, &all, 7).await?;
    let cluster = format!(
        "projects/{}/zones/{}/clusters/{}",
        n.project, n.zone, n.cluster
    );
    let mut candidates: Vec<Candidate> = Vec::new();
    for g in &r.regions {
        for z in &g.zones {
            match (z.offered, z.obtainability) {
                (Some(false), _) => notes.push(format!(
                    "zones auto: {} left out: it does not offer {}",
                    z.zone,
                    acc.base_name()
                )),
                (_, Some(o)) if o <= 0.0 => notes.push(format!(
                    "zones auto: {} left out: Compute's capacity advice says no spot {} VMs can be had there now",
                    z.zone, acc.machine_type
                )),
                _ => candidates.push(Candidate {
                    zone: z.zone.clone(),
                    region: g.region.clone(),
                    cluster: Some(cluster.clone()),
                    obtainability: z.obtainability,
                }),
            }
        }
    }
    let facts = Facts {
        acc,
        count,
        mode,
        prices: &svc.prices,
        free: Vec::new(),
        reserved: Vec::new(),
        candidates,
        quota: super::headroom_for(acc, mode, &r),
        stockouts,
    };
    let ranked: Vec<Placement> = rank::rank(&facts);
    if ranked.is_empty() {
        notes.push(format!(
            "zones auto: no zone of {} could be judged; the pool stays in the cluster's zone {} (GKE's locationPolicy ANY still lets it scale there)",
            n.region, n.zone
        ));
        return Ok(AutoZones {
            zones: vec![n.zone.clone()],
            notes,
        });
    }
    let zones: Vec<String> = ranked.iter().map(|p| p.zone.clone()).collect();
    let why: Vec<String> = ranked
        .iter()
        .map(|p| {
            let advice = p.obtainability.map_or_else(
                || "no advice".to_owned(),
                |o| format!("obtainability {o:.2}"),
            );
            format!(
                "{} (score {:.1}: {advice}, {} stockouts in 7 days)",
                p.zone, p.score, p.recent_stockouts
            )
        })
        .collect();
    notes.insert(
        0,
        format!(
            "zones auto: the spot pool spreads over {} zones of {}, ranked by placement advice: {}; GKE's locationPolicy ANY lets the autoscaler create nodes in whichever of them has capacity",
            zones.len(),
            n.region,
            why.join("; ")
        ),
    );
    Ok(AutoZones { zones, notes })
}
