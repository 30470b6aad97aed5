//! Hourly price estimates for accelerator node pools. The table is data: a default built
//! in (approximate us-central1 list prices per GPU or TPU chip, host share included) that
//! a deployment can replace with its own (`KINETIC_PRICES_FILE`, same JSON shape).
//! Flex-start (Dynamic Workload Scheduler) VMs have their own, discounted SKUs ("About
//! Flex-start VMs": A2, A3 and A4 GPUs at a discounted price); the built-in table has no
//! flex-start figures (none were published in a form kineticd could cite), so a
//! flex-start estimate uses the on-demand price as its upper bound and says so
//! ([`PriceTable::per_node_in`]) until the deployment's table gives `flexStart`.
//!
//! Invariant: an estimate is never presented as a bill: every figure carries its
//! currency, and an accelerator missing from the table yields no estimate rather than 0.
//! Every money figure is rounded to cents by [`cents`] alone, and serialised through
//! [`serialize_cents`], so sums of estimates never show float noise (`205.60000000000002`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::accelerators::Resolved;
use super::provisioning::Provisioning;

/// Price of one GPU or TPU chip for an hour, on demand and spot.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnitPrice {
    pub on_demand: f64,
    pub spot: f64,
    /// Flex-start (DWS) price; absent: flex-start is estimated at the on-demand price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flex_start: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PriceTable {
    pub currency: String,
    /// Keyed by GKE accelerator type (`nvidia-l4`, `tpu-v5-lite-podslice`).
    pub per_unit_hour: BTreeMap<String, UnitPrice>,
}

impl Default for PriceTable {
    fn default() -> Self {
        let rows = [
            ("nvidia-l4", 0.71, 0.28),
            ("nvidia-tesla-t4", 0.54, 0.16),
            ("nvidia-tesla-v100", 2.86, 0.98),
            ("nvidia-tesla-p4", 0.79, 0.25),
            ("nvidia-tesla-p100", 1.65, 0.55),
            ("nvidia-tesla-a100", 3.67, 1.47),
            ("nvidia-a100-80gb", 5.07, 2.03),
            ("nvidia-h100-80gb", 11.06, 3.72),
            ("nvidia-h100-mega-80gb", 11.70, 3.93),
            ("nvidia-h200-141gb", 13.20, 4.62),
            ("nvidia-b200", 16.80, 6.72),
            ("tpu-v3-podslice", 2.00, 0.66),
            ("tpu-v4-podslice", 3.22, 0.97),
            ("tpu-v5-lite-podslice", 1.20, 0.48),
            ("tpu-v5p-slice", 4.20, 1.68),
            ("tpu-v6e-slice", 2.70, 1.08),
        ];
        PriceTable {
            currency: "USD".into(),
            per_unit_hour: rows
                .into_iter()
                .map(|(k, od, sp)| {
                    (
                        k.to_owned(),
                        UnitPrice {
                            on_demand: od,
                            spot: sp,
                            flex_start: None,
                        },
                    )
                })
                .collect(),
        }
    }
}

/// An hourly estimate for a pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub per_node: f64,
    pub at_min: f64,
    pub at_max: f64,
}

/// A money figure rounded to cents: the one rounding of every amount kineticd shows.
pub fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `#[serde(serialize_with = ...)]` for money fields: whole cents on the wire, whatever
/// arithmetic (sums of estimates) produced the value.
pub fn serialize_cents<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(cents(*x))
}

impl PriceTable {
    /// Read a table from JSON (the `KINETIC_PRICES_FILE` format).
    /// The currency must be an ISO 4217 code (three capital letters), as the API
    /// document says of every `currency`.
    pub fn from_json(s: &str) -> Result<PriceTable, serde_json::Error> {
        let t: PriceTable = serde_json::from_str(s)?;
        if t.currency.len() != 3 || !t.currency.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(<serde_json::Error as serde::de::Error>::custom(format!(
                "currency {:?} is not an ISO 4217 code such as USD",
                t.currency
            )));
        }
        Ok(t)
    }

    /// Hourly price of one node of `acc`, if the table knows it.
    pub fn per_node(&self, acc: &Resolved) -> Option<f64> {
        let u = self.per_unit_hour.get(acc.gke_accelerator_type)?;
        let unit = if acc.spot { u.spot } else { u.on_demand };
        Some(cents(unit * f64::from(acc.per_node())))
    }

    /// Hourly price of one node of `acc` provisioned in `mode`, and whether it is the
    /// mode's own price (false: a flex-start pool priced at the on-demand upper bound,
    /// the table having no `flexStart` for it).
    pub fn per_node_in(&self, acc: &Resolved, mode: Provisioning) -> Option<(f64, bool)> {
        if !mode.is_flex_start() {
            return self.per_node(acc).map(|p| (p, true));
        }
        let u = self.per_unit_hour.get(acc.gke_accelerator_type)?;
        let (unit, own) = match u.flex_start {
            Some(f) => (f, true),
            None => (u.on_demand, false),
        };
        Some((cents(unit * f64::from(acc.per_node())), own))
    }

    /// Estimate for a pool of `acc` in `mode` between `min` and `max` nodes.
    pub fn estimate_in(
        &self,
        acc: &Resolved,
        mode: Provisioning,
        min: u32,
        max: u32,
    ) -> Option<Estimate> {
        let (per_node, _) = self.per_node_in(acc, mode)?;
        Some(Estimate {
            per_node,
            at_min: cents(per_node * f64::from(min)),
            at_max: cents(per_node * f64::from(max)),
        })
    }

    /// Estimate for a pool of `acc` between `min` and `max` nodes.
    pub fn estimate(&self, acc: &Resolved, min: u32, max: u32) -> Option<Estimate> {
        let per_node = self.per_node(acc)?;
        Some(Estimate {
            per_node,
            at_min: cents(per_node * f64::from(min)),
            at_max: cents(per_node * f64::from(max)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::testing::acc;

    #[test]
    fn estimates() {
        let t = PriceTable::default();
        assert_eq!(t.per_node(&acc("l4")), Some(0.71));
        assert_eq!(t.per_node(&acc("l4x4")), Some(2.84));
        assert_eq!(t.per_node(&acc("l4:spot")), Some(0.28));
        // A v5e-16 slice: 4 hosts of 4 chips.
        assert_eq!(t.per_node(&acc("v5e-16")), Some(4.8));
        let e = t.estimate(&acc("l4"), 0, 10).unwrap();
        assert_eq!((e.at_min, e.at_max), (0.0, 7.1));
        let custom = PriceTable::from_json(
            r#"{"currency":"EUR","perUnitHour":{"nvidia-l4":{"onDemand":1.0,"spot":0.5}}}"#,
        )
        .unwrap();
        assert_eq!(custom.per_node(&acc("l4x2")), Some(2.0));
        assert_eq!(custom.per_node(&acc("t4")), None);
        let err = PriceTable::from_json(r#"{"currency":"usd","perUnitHour":{}}"#).unwrap_err();
        assert!(err.to_string().contains("ISO 4217"), "{err}");
        // Flex-start: its own price when the table has one, else on demand (flagged).
        let flex = PriceTable::from_json(
            r#"{"currency":"USD","perUnitHour":{"nvidia-l4":{"onDemand":0.71,"spot":0.28,"flexStart":0.4}}}"#,
        )
        .unwrap();
        assert_eq!(
            flex.per_node_in(&acc("l4x2"), Provisioning::Queued),
            Some((0.8, true))
        );
        assert_eq!(
            t.per_node_in(&acc("l4"), Provisioning::FlexStart),
            Some((0.71, false))
        );
        assert_eq!(
            t.per_node_in(&acc("l4:spot"), Provisioning::Spot),
            Some((0.28, true))
        );
        assert_eq!(
            flex.estimate_in(&acc("l4"), Provisioning::FlexStart, 0, 4)
                .unwrap()
                .at_max,
            1.6
        );
    }

    #[test]
    fn money_is_serialised_in_cents() {
        #[derive(Serialize)]
        struct M {
            #[serde(serialize_with = "serialize_cents")]
            x: f64,
        }
        // 58.8 + 146.8 is 205.60000000000002 in binary floating point.
        let sum = 58.8 + 146.8;
        assert_ne!(sum.to_string(), "205.6");
        let json = serde_json::to_string(&M { x: sum }).unwrap();
        assert_eq!(json, r#"{"x":205.6}"#);
        assert_eq!(cents(0.125 + 0.0049), 0.13);
    }
}
