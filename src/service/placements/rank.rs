//! The ranking of a placement search: from plain facts (free accelerators per pool and
//! zone, free reserved VMs, candidate zones with their quota headroom, capacity advice
//! and stockout history, the price table) to scored, explained placements.
//!
//! Invariant: pure and deterministic. Kinds are banded (EXISTING_CAPACITY 200..300,
//! RESERVATION 100..200, NEW_POOL 0..100) so capacity already paid for always ranks
//! first; within a band a placement that covers more of the request ranks higher, and a
//! new pool is weighed by quota headroom (35), Compute's obtainability (35), the zone's
//! stockouts in the last 7 days (20, halved by the first, and so on) and price (10). An
//! unknown fact counts half, never as good or as bad.

use std::collections::BTreeMap;

use crate::domain::accelerators::Resolved;
use crate::domain::pricing::{PriceTable, cents};
use crate::domain::provisioning::Provisioning;
use crate::model::placement::{Placement, PlacementKind};

/// Free accelerators of one pool in one zone.
#[derive(Debug, Clone)]
pub struct Free {
    pub cluster: String,
    pub pool: String,
    pub zone: String,
    pub region: String,
    pub free: u64,
    pub spot: bool,
}

/// A reservation with free VMs that hold the shape.
#[derive(Debug, Clone)]
pub struct Reserved {
    /// `projects/{p}/zones/{z}/reservations/{r}`.
    pub name: String,
    pub zone: String,
    pub region: String,
    pub cluster: Option<String>,
    pub free_vms: u64,
}

/// A zone a new pool could go to.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub zone: String,
    pub region: String,
    pub cluster: Option<String>,
    pub obtainability: Option<f64>,
}

/// A region's quota for the accelerator: the metric and what it still allows.
#[derive(Debug, Clone)]
pub struct Headroom {
    pub metric: String,
    pub headroom: u64,
}

/// Everything the ranking weighs.
pub struct Facts<'a> {
    pub acc: &'a Resolved,
    pub count: u64,
    pub mode: Provisioning,
    pub prices: &'a PriceTable,
    pub free: Vec<Free>,
    pub reserved: Vec<Reserved>,
    pub candidates: Vec<Candidate>,
    /// By region (absent: not read, or no metric for the type).
    pub quota: BTreeMap<String, Headroom>,
    /// Capacity failures by zone in the last 7 days.
    pub stockouts: BTreeMap<String, i64>,
}

/// Accelerators a new pool starts to give `count`: whole nodes (whole slices).
pub fn units(acc: &Resolved, count: u64) -> u64 {
    let per = u64::from(acc.count.max(1));
    count.div_ceil(per) * per
}

/// VMs a new pool starts to give `count`.
pub fn vms(acc: &Resolved, count: u64) -> u64 {
    units(acc, count) / u64::from(acc.per_node().max(1))
}

/// The price of one accelerator an hour in `mode` (None: not in the table).
fn unit_price(f: &Facts<'_>) -> Option<f64> {
    let p = f.prices.per_unit_hour.get(f.acc.gke_accelerator_type)?;
    Some(match f.mode {
        Provisioning::Spot => p.spot,
        Provisioning::FlexStart | Provisioning::Queued => p.flex_start.unwrap_or(p.on_demand),
        Provisioning::OnDemand | Provisioning::Reservation => p.on_demand,
    })
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn stockout_reason(n: i64, zone: &str) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "{n} operation{} failed for lack of capacity in {zone} in the last 7 days",
            if n == 1 { "" } else { "s" }
        )
    })
}

/// The share of the request a placement covers, 0..1.
fn cover(free: u64, count: u64) -> f64 {
    (free.min(count) as f64) / (count.max(1) as f64)
}

fn covers(free: u64, count: u64) -> String {
    if free >= count {
        format!("covers the {count} asked for")
    } else {
        format!("covers {free} of the {count} asked for")
    }
}

fn headroom_of(f: &Facts<'_>, region: &str) -> Option<u64> {
    f.quota.get(region).map(|h| h.headroom)
}

fn stockouts(f: &Facts<'_>, zone: &str) -> u32 {
    f.stockouts
        .get(zone)
        .map_or(0, |n| u32::try_from(*n).unwrap_or(u32::MAX))
}

fn existing(f: &Facts<'_>, x: &Free) -> Placement {
    let name = f.acc.gke_accelerator_type;
    let mut reasons = vec![
        format!(
            "{} {name} free now on {}pool {} of cluster {}, already running: no added cost",
            x.free,
            if x.spot { "spot " } else { "" },
            x.pool,
            x.cluster
        ),
        covers(x.free, f.count),
    ];
    reasons.extend(stockout_reason(i64::from(stockouts(f, &x.zone)), &x.zone));
    Placement {
        kind: PlacementKind::ExistingCapacity,
        zone: x.zone.clone(),
        cluster: Some(x.cluster.clone()),
        pool: Some(x.pool.clone()),
        free_accelerators: Some(x.free),
        reservation: None,
        quota_headroom: headroom_of(f, &x.region),
        hourly_cost_usd: 0.0,
        obtainability: None,
        recent_stockouts: stockouts(f, &x.zone),
        score: round1(200.0 + 100.0 * cover(x.free, f.count)),
        reasons,
    }
}

fn reservation(f: &Facts<'_>, r: &Reserved) -> Placement {
    let free = r.free_vms * u64::from(f.acc.per_node());
    let mut reasons = vec![
        format!(
            "reservation {} has {} free VM{} of {} ({free} accelerators); reserved VMs are paid for whether used or not: no added cost",
            r.name,
            r.free_vms,
            if r.free_vms == 1 { "" } else { "s" },
            f.acc.machine_type
        ),
        covers(free, f.count),
    ];
    if r.cluster.is_none() {
        reasons.push(format!(
            "the team has no cluster in {}: up one there to use it",
            r.region
        ));
    }
    Placement {
        kind: PlacementKind::Reservation,
        zone: r.zone.clone(),
        cluster: r.cluster.clone(),
        pool: None,
        free_accelerators: Some(free),
        reservation: Some(r.name.clone()),
        quota_headroom: headroom_of(f, &r.region),
        hourly_cost_usd: 0.0,
        obtainability: None,
        recent_stockouts: stockouts(f, &r.zone),
        score: round1(100.0 + 100.0 * cover(free, f.count)),
        reasons,
    }
}

fn new_pool(f: &Facts<'_>, c: &Candidate, price: Option<f64>, cheapest: Option<f64>) -> Placement {
    let need = units(f.acc, f.count);
    let mut reasons = Vec::new();
    let quota = f.quota.get(&c.region);
    let q = match quota {
        Some(h) if h.headroom >= need => {
            reasons.push(format!(
                "quota {} in {}: {} free, {need} needed",
                h.metric, c.region, h.headroom
            ));
            1.0
        }
        Some(h) => {
            reasons.push(format!(
                "quota {} in {}: only {} free, {need} needed: request more quota first",
                h.metric, c.region, h.headroom
            ));
            h.headroom as f64 / need.max(1) as f64
        }
        None => {
            reasons.push(format!("quota in {} not judged", c.region));
            0.5
        }
    };
    let o = match c.obtainability {
        Some(o) => {
            reasons.push(format!(
                "Compute's capacity advice: obtainability {o:.2} for {} VMs",
                vms(f.acc, f.count)
            ));
            o.clamp(0.0, 1.0)
        }
        None => {
            reasons.push("no capacity advice from Compute".into());
            0.5
        }
    };
    let n = stockouts(f, &c.zone);
    reasons.extend(stockout_reason(i64::from(n), &c.zone));
    let s = 1.0 / (1.0 + f64::from(n));
    let cost = price.map(|p| cents(p * need as f64));
    let p = match (price, cheapest) {
        (Some(p), Some(c)) if p > 0.0 => c / p,
        _ => 0.5,
    };
    match cost {
        Some(c) => reasons.push(format!(
            "{need} {} at USD {:.2} an hour ({})",
            f.acc.gke_accelerator_type,
            c,
            f.mode.as_str()
        )),
        None => reasons.push(format!(
            "no price for {} in the price table",
            f.acc.gke_accelerator_type
        )),
    }
    match &c.cluster {
        Some(cl) => reasons.push(format!("a new pool in cluster {cl}")),
        None => reasons.push(format!(
            "the team has no cluster in {}: up one in {} first",
            c.region, c.zone
        )),
    }
    Placement {
        kind: PlacementKind::NewPool,
        zone: c.zone.clone(),
        cluster: c.cluster.clone(),
        pool: None,
        free_accelerators: None,
        reservation: None,
        quota_headroom: quota.map(|h| h.headroom),
        hourly_cost_usd: cost.unwrap_or(0.0),
        obtainability: c.obtainability,
        recent_stockouts: n,
        score: round1(35.0 * q + 35.0 * o + 20.0 * s + 10.0 * p),
        reasons,
    }
}

/// Every placement, best first (ties: by kind, zone, cluster, pool, reservation).
pub fn rank(f: &Facts<'_>) -> Vec<Placement> {
    let price = unit_price(f);
    let mut out: Vec<Placement> = f.free.iter().map(|x| existing(f, x)).collect();
    out.extend(f.reserved.iter().map(|r| reservation(f, r)));
    out.extend(f.candidates.iter().map(|c| new_pool(f, c, price, price)));
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.kind.cmp(&b.kind))
            .then_with(|| a.zone.cmp(&b.zone))
            .then_with(|| a.cluster.cmp(&b.cluster))
            .then_with(|| a.pool.cmp(&b.pool))
            .then_with(|| a.reservation.cmp(&b.reservation))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::{Choice, parse};

    fn acc(s: &str) -> Resolved {
        match parse(s).unwrap() {
            Choice::Accelerator(a) => a,
            Choice::Cpu => panic!("cpu"),
        }
    }

    fn candidate(zone: &str, o: Option<f64>) -> Candidate {
        Candidate {
            zone: zone.into(),
            region: "us-central1".into(),
            cluster: Some("c".into()),
            obtainability: o,
        }
    }

    #[test]
    fn whole_nodes_and_slices() {
        let h = acc("h100x8");
        assert_eq!((units(&h, 8), vms(&h, 8)), (8, 1));
        assert_eq!((units(&h, 9), vms(&h, 9)), (16, 2));
        let t = acc("tpu-v5litepod-16");
        // A v5e-16 slice is 4 hosts of 4 chips: 20 chips need two slices.
        assert_eq!((units(&t, 20), vms(&t, 20)), (32, 8));
    }

    #[test]
    fn bands_quota_advice_and_stockouts() {
        let a = acc("l4");
        let prices = PriceTable::default();
        let f = Facts {
            acc: &a,
            count: 4,
            mode: Provisioning::OnDemand,
            prices: &prices,
            free: vec![Free {
                cluster: "c".into(),
                pool: "p".into(),
                zone: "us-central1-a".into(),
                region: "us-central1".into(),
                free: 2,
                spot: false,
            }],
            reserved: vec![Reserved {
                name: "r".into(),
                zone: "us-central1-b".into(),
                region: "us-central1".into(),
                cluster: None,
                free_vms: 8,
            }],
            candidates: vec![
                candidate("us-central1-a", Some(0.9)),
                candidate("us-central1-b", Some(0.9)),
                candidate("us-central1-c", None),
            ],
            quota: BTreeMap::from([(
                "us-central1".into(),
                Headroom {
                    metric: "NVIDIA_L4_GPUS".into(),
                    headroom: 32,
                },
            )]),
            stockouts: BTreeMap::from([("us-central1-b".into(), 1)]),
        };
        let r = rank(&f);
        let got: Vec<(PlacementKind, &str, f64)> = r
            .iter()
            .map(|p| (p.kind, p.zone.as_str(), p.score))
            .collect();
        assert_eq!(
            got,
            [
                (PlacementKind::ExistingCapacity, "us-central1-a", 250.0),
                (PlacementKind::Reservation, "us-central1-b", 200.0),
                // 35 + 31.5 + 20 + 10
                (PlacementKind::NewPool, "us-central1-a", 96.5),
                // one stockout halves the 20: 35 + 31.5 + 10 + 10
                (PlacementKind::NewPool, "us-central1-b", 86.5),
                // unknown advice counts half: 35 + 17.5 + 20 + 10
                (PlacementKind::NewPool, "us-central1-c", 82.5),
            ]
        );
        // 4 L4s on demand at 0.71.
        assert_eq!(r[2].hourly_cost_usd, 2.84);
        assert_eq!(r[2].quota_headroom, Some(32));
        assert_eq!(r[3].recent_stockouts, 1);
    }
}
