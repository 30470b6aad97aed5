//! A GKE node pool read back into a pool record: the inverse of the wire form
//! `up` and `pool add` send (`ops::workflows::cluster::wire::node_pool`), used when
//! kineticd adopts a cluster it has no record of and when an unrecorded pool is
//! imported.
//!
//! Invariant: a pool is imported only when it carries kinetic's mark (its nodes'
//! label `kinetic=true`, as every ensure step requires) and its machine matches an
//! accelerator of the catalogue; the record is built through the same shape and
//! [`pool_record`] a new pool's is, so a pool kineticd created imports as the record it
//! was created from (tested by the round trip below), and what the record then says
//! is what GKE has: no drift.

use std::collections::BTreeMap;

use crate::cloud::gcp::types::container::NodePool as GkePool;
use crate::domain::accelerators::{self, Kind, Resolved};
use crate::domain::compute_class::CLASS_KEY;
use crate::domain::gpu_sharing::{GpuSharing, Strategy};
use crate::domain::pool_record::PoolSpecRecord;
use crate::domain::pools::{FailoverRole, PoolShape, Taint, TaintEffect};
use crate::domain::pricing::PriceTable;
use crate::domain::provisioning::Provisioning;
pub use crate::domain::resource_names::DEFAULT_POOL;
use crate::domain::resource_names::is_ours;
use crate::plan::pools::{PoolToAdd, pool_record};

/// The label a failover pair's pools carry (`spot` or `on-demand`).
const PAIR_SIDE: &str = "gpu-pool-type";

/// Why a GKE pool cannot become a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotImportable {
    #[error("GKE's own default pool is never recorded")]
    Default,
    #[error("its nodes lack the label kinetic=true: it was not made by kinetic")]
    NotOurs,
    #[error("its machine ({0}) is no accelerator of the catalogue")]
    NoAccelerator(String),
    #[error("GKE is deleting it (status {0})")]
    Going(String),
}

/// The catalogue entry a GKE pool's machine matches (GPU type and count, or TPU
/// machine type and topology).
pub fn accelerator_of(p: &GkePool) -> Option<Resolved> {
    let cfg = p.config.as_ref()?;
    let machine = cfg.machine_type.as_deref()?;
    let gpu = cfg.accelerators.first();
    let topology = p
        .placement_policy
        .as_ref()
        .and_then(|pp| pp.tpu_topology.as_deref());
    accelerators::all()
        .into_iter()
        .find(|r| match (r.kind, gpu) {
            (Kind::Gpu, Some(g)) => {
                g.accelerator_type == r.gke_accelerator_type
                    && g.accelerator_count == i64::from(r.count)
            }
            (Kind::Tpu, None) => {
                r.machine_type == machine
                    && (topology == r.topology || (topology.is_none() && !r.is_multi_host()))
            }
            _ => false,
        })
}

/// A pool's autoscaling bounds per zone, as records keep them (flex-start pools send
/// totals over their zones); `None` when autoscaling is off.
pub fn bounds(p: &GkePool) -> Option<(i64, i64)> {
    let a = p.autoscaling.as_ref().filter(|a| a.enabled == Some(true))?;
    let zones = i32::try_from(p.locations.len().max(1)).unwrap_or(1);
    let per_zone = |direct: Option<i32>, total: Option<i32>| {
        i64::from(
            direct
                .or(total.map(|t| (t + zones - 1) / zones))
                .unwrap_or(0),
        )
    };
    Some((
        per_zone(a.min_node_count, a.total_min_node_count),
        per_zone(a.max_node_count, a.total_max_node_count),
    ))
}

/// Whether `p` can be imported, and why not.
pub fn importable(p: &GkePool) -> Result<Resolved, NotImportable> {
    if p.name == DEFAULT_POOL {
        return Err(NotImportable::Default);
    }
    let cfg = p.config.clone().unwrap_or_default();
    if !is_ours(&cfg.labels) {
        return Err(NotImportable::NotOurs);
    }
    if let Some(s @ "STOPPING") = p.status.as_deref() {
        return Err(NotImportable::Going(s.to_owned()));
    }
    accelerator_of(p).ok_or_else(|| {
        NotImportable::NoAccelerator(cfg.machine_type.unwrap_or_else(|| "none".into()))
    })
}

/// The record of GKE pool `p` of a cluster in `cluster_zone` whose pools are `all`
/// (to find the other pool of a failover pair).
pub fn record_of(
    p: &GkePool,
    all: &[GkePool],
    cluster_zone: &str,
    prices: &PriceTable,
) -> Result<PoolSpecRecord, NotImportable> {
    let acc = importable(p)?;
    let cfg = p.config.clone().unwrap_or_default();
    let gpu = cfg.accelerators.first();
    let spot = cfg.spot.unwrap_or(false);
    let reservation = cfg
        .reservation_affinity
        .as_ref()
        .filter(|a| a.consume_reservation_type == "SPECIFIC_RESERVATION")
        .and_then(|a| a.values.first().cloned());
    let provisioning = if cfg.flex_start == Some(true) {
        if p.queued_provisioning.as_ref().is_some_and(|q| q.enabled) {
            Provisioning::Queued
        } else {
            Provisioning::FlexStart
        }
    } else if spot {
        Provisioning::Spot
    } else if reservation.is_some() {
        Provisioning::Reservation
    } else {
        Provisioning::OnDemand
    };
    let (min, max) = bounds(p).unwrap_or_else(|| {
        let n = i64::from(p.initial_node_count.unwrap_or(0));
        (n, n)
    });
    let failover = match cfg.labels.get(PAIR_SIDE).map(String::as_str) {
        Some("spot") => Some(FailoverRole::Spot),
        Some("on-demand") => Some(FailoverRole::OnDemand),
        _ => None,
    };
    let paired = failover.and_then(|_| partner(p, all));
    let gpu_sharing = gpu.and_then(|g| {
        GpuSharing::from_stored(
            &g.accelerator_type,
            g.gpu_partition_size.as_deref().filter(|s| !s.is_empty()),
            g.gpu_sharing_config
                .as_ref()
                .and_then(|s| Strategy::parse(&s.gpu_sharing_strategy)),
            g.gpu_sharing_config
                .as_ref()
                .and_then(|s| u32::try_from(s.max_shared_clients_per_gpu).ok()),
        )
    });
    let shape = PoolShape {
        accelerator: Resolved {
            spot,
            ..acc.clone()
        },
        min_nodes: u32::try_from(min).unwrap_or(0),
        max_nodes: u32::try_from(max).unwrap_or(0),
        spot,
        reservation,
        max_run_duration: cfg.max_run_duration.clone(),
        labels: cfg.labels.clone(),
        taints: cfg
            .taints
            .iter()
            .filter_map(|t| {
                Some(Taint {
                    key: t.key.clone(),
                    value: t.value.clone(),
                    effect: TaintEffect::from_gke(&t.effect)?,
                })
            })
            .collect(),
        placement_topology: acc.topology.filter(|_| acc.is_multi_host()),
        failover: failover.filter(|_| paired.is_some()),
        provisioning,
        gpu_sharing,
    };
    let zones: Vec<String> = if p.locations.iter().all(|z| z == cluster_zone) {
        Vec::new()
    } else {
        p.locations.clone()
    };
    let driver = gpu
        .and_then(|g| g.gpu_driver_installation_config.as_ref())
        .map(|d| d.gpu_driver_version.as_str());
    let mut record = pool_record(
        &PoolToAdd {
            id: &p.name,
            shape: &shape,
            driver_version: driver,
            zones: &zones,
            paired_pool: paired.as_deref(),
        },
        prices,
    );
    // A flex-start pool's ANY comes with its mode; another pool's is its own choice
    // (`zones: ["auto"]`).
    if !provisioning.is_flex_start() {
        record.location_policy = p
            .autoscaling
            .as_ref()
            .and_then(|a| a.location_policy.clone())
            .filter(|l| !l.is_empty());
    }
    Ok(record)
}

/// The other pool of `p`'s failover pair: the one that joined the same compute class.
fn partner(p: &GkePool, all: &[GkePool]) -> Option<String> {
    let labels = |x: &GkePool| {
        x.config
            .as_ref()
            .map(|c| c.labels.clone())
            .unwrap_or_default()
    };
    let class = labels(p).get(CLASS_KEY).cloned()?;
    all.iter()
        .filter(|o| o.name != p.name)
        .find(|o| labels(o).get(CLASS_KEY) == Some(&class))
        .map(|o| o.name.clone())
}

/// Every pool of a GKE cluster sorted by what becomes of it: the records of the ones
/// that can be imported (by pool id), and why each other one cannot (the default pool
/// left out).
pub struct Sorted {
    pub records: BTreeMap<String, PoolSpecRecord>,
    pub refused: BTreeMap<String, NotImportable>,
}

/// Sort `pools` (of a cluster in `zone`) into importable records and refusals.
pub fn sort(pools: &[GkePool], zone: &str, prices: &PriceTable) -> Sorted {
    let mut out = Sorted {
        records: BTreeMap::new(),
        refused: BTreeMap::new(),
    };
    for p in pools {
        match record_of(p, pools, zone, prices) {
            Ok(r) => {
                out.records.insert(p.name.clone(), r);
            }
            Err(NotImportable::Default) => {}
            Err(e) => {
                out.refused.insert(p.name.clone(), e);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::{Choice, parse};
    use crate::domain::compute_class::{ClassName, join_class};
    use crate::domain::pools::shape;
    use crate::domain::resource_names::ClusterNames;
    use crate::ops::workflows::cluster::wire;

    fn names() -> ClusterNames {
        ClusterNames::new(
            &"ml-proj".parse().unwrap(),
            &"us-central1-a".parse().unwrap(),
            &"kc".parse().unwrap(),
        )
    }

    fn acc(name: &str) -> Resolved {
        match parse(name).unwrap() {
            Choice::Accelerator(r) => r,
            Choice::Cpu => unreachable!(),
        }
    }

    /// The record kineticd writes for `shape` (as `pool add` does).
    fn record(id: &str, s: &PoolShape, zones: &[String], pair: Option<&str>) -> PoolSpecRecord {
        pool_record(
            &PoolToAdd {
                id,
                shape: s,
                driver_version: (s.accelerator.kind == Kind::Gpu).then_some("DEFAULT"),
                zones,
                paired_pool: pair,
            },
            &PriceTable::default(),
        )
    }

    /// Every record imports back from its own wire form exactly.
    #[test]
    fn a_pool_kineticd_made_imports_as_the_record_it_was_made_from() {
        let n = names();
        let mut cases = vec![
            record(
                "gpu-l4-aaaa",
                &shape(&acc("gpu-l4"), 2, false, None, None).unwrap(),
                &[],
                None,
            ),
            record(
                "tpu-v5litepod-bbbb",
                &shape(&acc("tpu-v5litepod-4"), 0, true, None, None).unwrap(),
                &[],
                None,
            ),
            record(
                "tpu-v5litepod-cccc",
                &shape(&acc("tpu-v5litepod-16"), 4, false, None, None).unwrap(),
                &[],
                None,
            ),
            record(
                "gpu-a100-dddd",
                &shape(&acc("a100x4"), 0, false, Some("r1"), None).unwrap(),
                &[],
                None,
            ),
            record(
                "gpu-l4-eeee",
                &shape(&acc("gpu-l4"), 0, true, None, None).unwrap(),
                &["us-central1-a".to_owned(), "us-central1-b".to_owned()],
                None,
            ),
        ];
        let mut spread = record(
            "gpu-l4-ffff",
            &shape(&acc("gpu-l4"), 0, true, None, None).unwrap(),
            &["us-central1-a".to_owned(), "us-central1-c".to_owned()],
            None,
        );
        spread.location_policy = Some("ANY".into());
        cases.push(spread);
        let class = ClassName::for_pair("gpu-l4-s111");
        let mut spot = shape(&acc("gpu-l4"), 0, false, None, Some(FailoverRole::Spot)).unwrap();
        let mut on_demand =
            shape(&acc("gpu-l4"), 0, false, None, Some(FailoverRole::OnDemand)).unwrap();
        join_class(&mut spot, &class);
        join_class(&mut on_demand, &class);
        cases.push(record("gpu-l4-s111", &spot, &[], Some("gpu-l4-o222")));
        cases.push(record("gpu-l4-o222", &on_demand, &[], Some("gpu-l4-s111")));
        let wires: Vec<GkePool> = cases.iter().map(|r| wire::node_pool(&n, r)).collect();
        for (want, live) in cases.iter().zip(&wires) {
            let got = record_of(live, &wires, "us-central1-a", &PriceTable::default());
            assert_eq!(got.as_ref(), Ok(want), "{}", want.pool_id);
        }
    }

    #[test]
    fn what_lacks_the_mark_or_an_accelerator_is_not_imported() {
        let n = names();
        let r = record(
            "gpu-l4-aaaa",
            &shape(&acc("gpu-l4"), 1, false, None, None).unwrap(),
            &[],
            None,
        );
        let mut foreign = wire::node_pool(&n, &r);
        if let Some(c) = foreign.config.as_mut() {
            c.labels.clear();
        }
        assert_eq!(importable(&foreign), Err(NotImportable::NotOurs));
        let mut cpu = wire::node_pool(&n, &r);
        if let Some(c) = cpu.config.as_mut() {
            c.accelerators.clear();
            c.machine_type = Some("e2-standard-4".into());
        }
        assert!(matches!(
            importable(&cpu),
            Err(NotImportable::NoAccelerator(_))
        ));
        let default = GkePool {
            name: DEFAULT_POOL.into(),
            ..wire::node_pool(&n, &r)
        };
        assert_eq!(importable(&default).err(), Some(NotImportable::Default));
        foreign.name = "gpu-l4-hand".into();
        let ours = wire::node_pool(&n, &r);
        let sorted = sort(
            &[default, foreign, ours],
            "us-central1-a",
            &PriceTable::default(),
        );
        assert_eq!(sorted.records.keys().collect::<Vec<_>>(), ["gpu-l4-aaaa"]);
        assert_eq!(sorted.refused["gpu-l4-hand"], NotImportable::NotOurs);
        assert_eq!(sorted.refused.len(), 1, "the default pool is left out");
    }
}
