//! `POST /v1/teams/{team}/placements:search`: where `count` accelerators of a type can
//! be had now for the team. Free accelerators on the team's running nodes first, then
//! free VMs of its projects' reservations, then new pools in the zones that offer the
//! type, ranked by quota headroom, price, Compute's capacity advice and kineticd's own
//! record of capacity failures per zone ([`rank`]).
//!
//! Invariant: a read (VIEWER+; it changes nothing); the question is checked before the
//! cloud is asked (400 INVALID_PLACEMENT_QUERY naming `field`, or UNKNOWN_ACCELERATOR);
//! every cloud read runs at once under one deadline (`KINETIC_PLACEMENT_DEADLINE_SECONDS`)
//! and what could not be read is a warning ([`reads`]). Zones named in the question
//! must be in reach of the team's projects: a zone Compute says does not exist there is
//! 400, like a malformed one.

pub mod access_cache;
pub mod auto_zones;
pub mod rank;
pub mod reads;

use std::collections::{BTreeMap, BTreeSet};

use crate::domain::accelerators::{Choice, Kind, Resolved};
use crate::domain::provisioning::Provisioning;
use crate::domain::reservation::last_segment;
use crate::domain::resource_names::ClusterNames;
use crate::domain::{ClusterName, ProjectId, Role, TeamId, ZoneName, quota};
use crate::model::placement::{PlacementQuery, PlacementSearch};
use crate::store::{self, clusters::ClusterFilter};

use super::access::{self, Caller};
use super::provision::parse_accelerator;
use super::{Error, Result, Services};
use rank::{Candidate, Facts, Free, Headroom, Reserved};
use reads::{Ask, Reads};

/// The most accelerators one search may ask for.
pub const MAX_COUNT: i64 = 10_000;
/// The most zones one search may name.
pub const MAX_ZONES: usize = 50;
/// How far back capacity failures count.
const STOCKOUT_DAYS: i32 = 7;

/// A checked question.
#[derive(Debug, Clone)]
pub struct Question {
    pub acc: Resolved,
    pub count: u64,
    pub mode: Provisioning,
    pub zones: Vec<ZoneName>,
}

fn refuse(field: &str, message: impl Into<String>) -> Error {
    Error::invalid("INVALID_PLACEMENT_QUERY", message).with("field", field)
}

/// Check `q` (400 INVALID_PLACEMENT_QUERY naming the field, or UNKNOWN_ACCELERATOR).
pub fn question(q: &PlacementQuery) -> Result<Question> {
    let spec = q
        .accelerator
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            refuse(
                "accelerator",
                "\"accelerator\" is required: h100x8, gpu-l4, tpu-v5litepod-16, ... (GET /v1/accelerators lists them)",
            )
        })?;
    let acc = match parse_accelerator(spec)? {
        Choice::Accelerator(a) => a,
        Choice::Cpu => {
            return Err(refuse(
                "accelerator",
                "placements are for accelerators: choose a GPU or TPU (GET /v1/accelerators)",
            ));
        }
    };
    let count = q.count.ok_or_else(|| {
        refuse(
            "count",
            "\"count\" is required: how many accelerators (GPUs or TPU chips) in all",
        )
    })?;
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(refuse(
            "count",
            format!("\"count\" must be between 1 and {MAX_COUNT}, not {count}"),
        ));
    }
    let mode = match q.provisioning.as_deref() {
        None | Some("") if acc.spot => Provisioning::Spot,
        None | Some("") => Provisioning::OnDemand,
        Some(p) => Provisioning::parse(p).map_err(|e| refuse("provisioning", e.to_string()))?,
    };
    if acc.spot && mode != Provisioning::Spot {
        return Err(refuse(
            "provisioning",
            format!(
                "accelerator {spec} asks for spot VMs but provisioning is {}: drop one",
                mode.as_str()
            ),
        ));
    }
    let given = q.zones.as_deref().unwrap_or_default();
    if given.len() > MAX_ZONES {
        return Err(refuse(
            "zones",
            format!("at most {MAX_ZONES} zones, not {}", given.len()),
        ));
    }
    let mut zones: Vec<ZoneName> = Vec::new();
    for z in given {
        let zone = ZoneName::parse(z)
            .map_err(|e| refuse("zones", format!("zone {z:?}: {e}")).with("zone", z))?;
        if !zones.contains(&zone) {
            zones.push(zone);
        }
    }
    Ok(Question {
        acc,
        count: count.unsigned_abs(),
        mode,
        zones,
    })
}

/// `placements:search` for `team`.
pub async fn search(
    svc: &Services,
    caller: &Caller,
    team: &TeamId,
    q: &PlacementQuery,
) -> Result<PlacementSearch> {
    let team = team.as_str();
    access::require(&svc.db, caller, team, Role::Viewer, "searching placements").await?;
    let question = question(q)?;
    let projects = store::teams::get_team(&svc.db, team)
        .await?
        .map(|t| t.projects)
        .unwrap_or_default();
    let filter = ClusterFilter {
        team: Some(team.to_owned()),
        ..ClusterFilter::default()
    };
    let clusters = store::clusters::list(&svc.db, &filter, None, 1_000).await?;
    let mut warnings = Vec::new();
    if projects.is_empty() {
        if !question.zones.is_empty() {
            return Err(refuse(
                "zones",
                format!(
                    "team {team} has no projects, so no zone is in its reach: ask a team ADMIN to add one (PATCH /v1/teams/{team})"
                ),
            ));
        }
        warnings.push(format!(
            "team {team} has no projects: there is nowhere to look (PATCH /v1/teams/{team} adds one)"
        ));
    }
    let names: Vec<ClusterNames> = clusters
        .iter()
        .filter_map(|c| {
            Some(ClusterNames::new(
                &ProjectId::parse(&c.project_id).ok()?,
                &ZoneName::parse(&c.zone).ok()?,
                &ClusterName::parse(&c.name).ok()?,
            ))
        })
        .collect();
    let plan = Targets::of(&names, &projects, &question.zones);
    // Clusters outside the regions of the zones asked about have nothing to offer.
    let names: Vec<ClusterNames> = names
        .into_iter()
        .filter(|n| {
            plan.regions
                .contains_key(&(n.project.clone(), n.region.clone()))
        })
        .collect();
    if plan.regions.is_empty() && question.zones.is_empty() && !projects.is_empty() {
        warnings.push(format!(
            "team {team} has no clusters: name \"zones\" to be advised where to up one"
        ));
    }
    let zone_filter: Vec<String> = question.zones.iter().map(ToString::to_string).collect();
    let ask = Ask {
        acc: &question.acc,
        mode: question.mode,
        vms: u32::try_from(rank::vms(&question.acc, question.count)).unwrap_or(u32::MAX),
        zones: &zone_filter,
        reservations: matches!(
            question.mode,
            Provisioning::OnDemand | Provisioning::Reservation
        ),
    };
    let regions: Vec<(String, String)> = plan.regions.keys().cloned().collect();
    let r = reads::read(
        &svc.cloud,
        &svc.cluster_access,
        &ask,
        names,
        regions,
        svc.placement_deadline,
    )
    .await;
    check_reach(&r, &zone_filter)?;
    warnings.extend(r.warnings.iter().cloned());
    let every_zone: Vec<String> = r
        .regions
        .iter()
        .flat_map(|g| g.zones.iter().map(|z| z.zone.clone()))
        .chain(zone_filter.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let stockouts = store::capacity_failures::per_zone(&svc.db, &every_zone, STOCKOUT_DAYS).await?;
    let facts = Facts {
        acc: &question.acc,
        count: question.count,
        mode: question.mode,
        prices: &svc.prices,
        free: free(&question.acc, &r, &zone_filter, &svc.prices),
        reserved: reserved(&question.acc, &r, &plan),
        candidates: candidates(&r, &plan),
        quota: headroom_for(&question.acc, question.mode, &r),
        stockouts,
    };
    Ok(PlacementSearch {
        placements: rank::rank(&facts),
        warnings,
    })
}

/// Where to look: per candidate (project, region) the team's cluster there that a new
/// pool would join (the first by name), if it has one.
struct Targets {
    regions: BTreeMap<(String, String), Option<String>>,
}

impl Targets {
    fn of(clusters: &[ClusterNames], projects: &[String], zones: &[ZoneName]) -> Targets {
        let mut regions: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
        let wanted: BTreeSet<&str> = zones.iter().map(ZoneName::region).collect();
        for n in clusters {
            if !wanted.is_empty() && !wanted.contains(n.region.as_str()) {
                continue;
            }
            let name = format!(
                "projects/{}/zones/{}/clusters/{}",
                n.project, n.zone, n.cluster
            );
            let slot = regions
                .entry((n.project.clone(), n.region.clone()))
                .or_default();
            if slot.as_ref().is_none_or(|s| name < *s) {
                *slot = Some(name);
            }
        }
        // A named zone in a region where the team has no cluster: asked of the team's
        // first project (a new cluster would go there).
        if let Some(first) = projects.first() {
            for region in wanted {
                if !regions.keys().any(|(_, r)| r == region) {
                    regions.insert((first.clone(), region.to_owned()), None);
                }
            }
        }
        Targets { regions }
    }

    fn cluster(&self, project: &str, region: &str) -> Option<String> {
        self.regions
            .get(&(project.to_owned(), region.to_owned()))
            .cloned()
            .flatten()
    }
}

/// 400 for a named zone Compute says is not there (its region 404, or not among the
/// region's zones); zones whose region could not be read pass with the read's warning.
fn check_reach(r: &Reads, zones: &[String]) -> Result<()> {
    for z in zones {
        let Some(region) = r
            .regions
            .iter()
            .find(|g| ZoneName::parse(z).is_ok_and(|n| n.region() == g.region))
        else {
            continue;
        };
        let listed = match &region.region_read {
            Ok(reg) => reg.zones.iter().any(|u| last_segment(u) == z),
            Err((404, _)) => false,
            Err(_) => true,
        };
        if !listed {
            return Err(refuse(
                "zones",
                format!(
                    "zone {z} does not exist in the reach of project {}: name zones of its regions",
                    region.project
                ),
            )
            .with("zone", z)
            .with("project", &region.project));
        }
    }
    Ok(())
}

/// Free accelerators of the type per pool and zone, from the clusters read.
fn free(
    acc: &Resolved,
    r: &Reads,
    zones: &[String],
    prices: &crate::domain::pricing::PriceTable,
) -> Vec<Free> {
    use crate::service::capacity::compute::{Facts as CapFacts, compute};
    let mut out = Vec::new();
    for c in &r.clusters {
        let Ok((nodes, pods)) = &c.read else { continue };
        let cap = compute(&CapFacts {
            nodes,
            pods,
            pools: &[],
            prices,
        });
        let zone_of: BTreeMap<&str, &str> = nodes
            .iter()
            .map(|n| (n.name.as_str(), n.zone.as_deref().unwrap_or(&c.names.zone)))
            .collect();
        let cluster = format!(
            "projects/{}/zones/{}/clusters/{}",
            c.names.project, c.names.zone, c.names.cluster
        );
        for p in &cap.node_pools {
            if p.accelerator_type != acc.gke_accelerator_type || p.gpu_units.is_some() {
                continue;
            }
            let mut by_zone: BTreeMap<&str, u64> = BTreeMap::new();
            for n in p.nodes.iter().filter(|n| n.schedulable) {
                let z = zone_of.get(n.name.as_str()).copied().unwrap_or("");
                *by_zone.entry(z).or_default() += n.counts.free;
            }
            for (zone, free) in by_zone {
                if free == 0 || (!zones.is_empty() && !zones.iter().any(|z| z == zone)) {
                    continue;
                }
                out.push(Free {
                    cluster: cluster.clone(),
                    pool: p.pool_id.clone(),
                    zone: zone.to_owned(),
                    region: c.names.region.clone(),
                    free,
                    spot: p.spot,
                });
            }
        }
    }
    out
}

/// Reservations holding the shape with free VMs.
fn reserved(acc: &Resolved, r: &Reads, plan: &Targets) -> Vec<Reserved> {
    let mut out = Vec::new();
    for g in &r.regions {
        for z in &g.zones {
            for res in z.reservations.iter().flatten() {
                if res.status.as_deref().is_some_and(|s| s != "READY") {
                    continue;
                }
                let Some(sku) = &res.specific_reservation else {
                    continue;
                };
                let props = sku.instance_properties.clone().unwrap_or_default();
                if last_segment(&props.machine_type) != acc.machine_type {
                    continue;
                }
                if acc.kind == Kind::Gpu
                    && !props.guest_accelerators.is_empty()
                    && !props
                        .guest_accelerators
                        .iter()
                        .any(|a| last_segment(&a.accelerator_type) == acc.gke_accelerator_type)
                {
                    continue;
                }
                let free = sku.count.unwrap_or(0) - sku.in_use_count.unwrap_or(0);
                if free <= 0 {
                    continue;
                }
                out.push(Reserved {
                    name: format!(
                        "projects/{}/zones/{}/reservations/{}",
                        g.project, z.zone, res.name
                    ),
                    zone: z.zone.clone(),
                    region: g.region.clone(),
                    cluster: plan.cluster(&g.project, &g.region),
                    free_vms: free.unsigned_abs(),
                });
            }
        }
    }
    out
}

/// Zones that offer the type (or could not say: then kept, the warning says why).
fn candidates(r: &Reads, plan: &Targets) -> Vec<Candidate> {
    r.regions
        .iter()
        .flat_map(|g| {
            g.zones
                .iter()
                .filter(|z| z.offered != Some(false))
                .map(|z| Candidate {
                    zone: z.zone.clone(),
                    region: g.region.clone(),
                    cluster: plan.cluster(&g.project, &g.region),
                    obtainability: z.obtainability,
                })
        })
        .collect()
}

/// Per region read, the quota metric's headroom for `acc` in `mode`.
fn headroom_for(acc: &Resolved, mode: Provisioning, r: &Reads) -> BTreeMap<String, Headroom> {
    let Some(metric) = quota::metric_for(acc, mode) else {
        return BTreeMap::new();
    };
    r.regions
        .iter()
        .filter_map(|g| {
            let region = g.region_read.as_ref().ok()?;
            let qu = region.quota(&metric)?;
            Some((
                g.region.clone(),
                Headroom {
                    metric: metric.clone(),
                    headroom: (qu.limit - qu.usage).max(0.0) as u64,
                },
            ))
        })
        .collect()
}
