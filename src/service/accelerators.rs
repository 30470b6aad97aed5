//! The accelerator catalog as a resource: listing and resolving any accepted spelling.

use crate::domain::accelerators::{self, Choice, Kind, Resolved};
use crate::domain::pricing::PriceTable;
use crate::model::accelerator::{Accelerator, AcceleratorPrices};

use super::{Error, Result};

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
        kind: r.kind.as_str().to_owned(),
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

pub fn resolve(spec: &str, prices: &PriceTable) -> Result<Accelerator> {
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
