//! The accelerator catalog as a resource: listing, resolving any accepted spelling, and
//! marking the entries a cluster has pools of.
//!
//! Invariant: `live` is set only on a cluster's catalog (from its records) and absent
//! from the plain catalog.

use std::collections::BTreeSet;

use crate::domain::accelerators::{self, Choice, Kind, Resolved};
use crate::domain::pricing::PriceTable;
use crate::domain::{ClusterState, PoolState};
use crate::model::accelerator::{Accelerator, AcceleratorPrices};
use crate::store::{self, Db};

use super::clusters::{self, ClusterPath};
use super::{Caller, Error, Result};

fn aliases(r: &Resolved) -> Vec<String> {
    let gke = r.gke_accelerator_type;
    match r.kind {
        Kind::Gpu if r.count == 1 => vec![r.family.to_owned(), gke.to_owned()],
        Kind::Gpu => vec![
            format!("{}x{}", r.family, r.count),
            format!("{gke}x{}", r.count),
        ],
        Kind::Tpu => {
            let mut v = vec![format!("{}-{}", r.family, r.count)];
            if let Some(t) = r.topology {
                v.push(format!("{}-{t}", r.family));
            }
            if r.family == "v5litepod" {
                v.push(format!("v5e-{}", r.count));
            }
            v
        }
    }
}

pub fn render(r: &Resolved, prices: &PriceTable) -> Accelerator {
    let price = |spot: bool| prices.per_node(&Resolved { spot, ..r.clone() });
    Accelerator {
        name: r.base_name(),
        kind: r.kind,
        family: r.family.to_owned(),
        gke_accelerator_type: r.gke_accelerator_type.to_owned(),
        machine_type: r.machine_type.to_owned(),
        count: (r.kind == Kind::Gpu).then_some(r.count),
        chips: (r.kind == Kind::Tpu).then_some(r.count),
        topology: r.topology.map(str::to_owned),
        hosts_per_slice: r.hosts_per_slice,
        aliases: aliases(r),
        spot: r.spot,
        prices: match (price(false), price(true)) {
            (Some(od), Some(sp)) => Some(AcceleratorPrices {
                currency: prices.currency.clone(),
                on_demand_per_node_hour: od,
                spot_per_node_hour: sp,
            }),
            _ => None,
        },
        live: None,
    }
}

pub fn list(prices: &PriceTable) -> Vec<Accelerator> {
    accelerators::all()
        .iter()
        .map(|r| render(r, prices))
        .collect()
}

/// The error for a spelling that names nothing, with the closest valid names.
pub fn unknown(e: &accelerators::UnknownAccelerator) -> Error {
    Error::not_found("UNKNOWN_ACCELERATOR", e.to_string())
        .with("accelerator", &e.input)
        .with("suggestions", e.suggestions.join(","))
}

/// The longest spelling worth resolving (the longest catalog alias is far shorter).
pub const MAX_SPEC_LEN: usize = 64;

pub fn resolve(spec: &str, prices: &PriceTable) -> Result<Accelerator> {
    if spec.len() > MAX_SPEC_LEN || spec.chars().any(char::is_control) {
        return Err(Error::not_found(
            "UNKNOWN_ACCELERATOR",
            format!(
                "{:?} is not an accelerator spelling (at most {MAX_SPEC_LEN} printable characters, like a100x4 or v5e-16); GET /v1/accelerators lists them",
                spec.chars().take(40).collect::<String>()
            ),
        ));
    }
    match accelerators::parse(spec) {
        Ok(Choice::Accelerator(r)) => Ok(render(&r, prices)),
        Ok(Choice::Cpu) => Err(Error::not_found(
            "UNKNOWN_ACCELERATOR",
            "cpu means \"no accelerator\": it is valid for up, but is not a catalog entry",
        )
        .with("accelerator", spec)),
        Err(e) => Err(unknown(&e)),
    }
}

/// The catalog name (`gpu-l4`, `tpu-v5litepod-16`) a recorded pool's accelerator stands
/// for (`:spot` dropped); `None` for `cpu`.
pub fn catalog_name(accelerator: &str) -> Option<String> {
    match accelerators::parse(accelerator) {
        Ok(Choice::Accelerator(r)) => Some(r.base_name()),
        Ok(Choice::Cpu) => None,
        Err(_) => {
            let base = accelerator.trim().trim_end_matches(":spot");
            (!base.is_empty()).then(|| base.to_owned())
        }
    }
}

/// The catalog with `live` on every entry: whether the cluster's records hold a pool
/// (not DELETED) of that accelerator. A DELETED cluster has none.
pub async fn for_cluster(
    db: &Db,
    caller: &Caller,
    path: &ClusterPath,
    prices: &PriceTable,
) -> Result<Vec<Accelerator>> {
    let c = clusters::record(db, caller, path).await?;
    let live: BTreeSet<String> = if c.state == ClusterState::Deleted {
        BTreeSet::new()
    } else {
        store::node_pools::list(db, c.id, None, 10_000)
            .await?
            .iter()
            .filter(|p| p.state != PoolState::Deleted)
            .map(|p| p.spec.accelerator.as_str())
            .filter_map(catalog_name)
            .collect()
    };
    Ok(list(prices)
        .into_iter()
        .map(|mut a| {
            a.live = Some(live.contains(&a.name));
            a
        })
        .collect())
}
