//! A team's guardrails (issue 29): which accelerators, zones and provisioning modes its
//! pools may use, how many GPUs or TPU chips of each type, clusters and pools they may
//! reach at their maximum size, and what they may cost; and the verdict on a request
//! against them.
//!
//! Invariants:
//! - Limits are on the team's pools **at their maximum size** (GKE's autoscaling limits
//!   then hold them): a request's verdict compares the usage after it with each limit.
//! - A pool whose *default* maximum would pass an accelerator cap is lowered to fit
//!   ([`fit`]) before it is planned; only a pool whose minimum (or a first node) does
//!   not fit is refused. A maximum the caller asked for is never lowered.
//! - A request that adds nothing (a reconcile, a shrink) is never refused: a tightened
//!   policy reports resources over a limit ([`report`]), it never blocks their repair.
//! - Unset fields limit nothing; the evaluation is pure, so a preview, an apply and an
//!   approval of the same request against the same usage give the same verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::provisioning::Provisioning;

mod check;
pub mod idle;
mod report;
mod usage;

pub use check::{PolicyCheck, Verdict, Violation, evaluate, fit};
pub use idle::{IdleAction, IdleError, IdleRules};
pub use report::{LimitUse, report};
pub use usage::{Ask, Bounds, PoolUse, Usage};

/// Hours a month's budget is spread over when spend is estimated from hourly costs.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// A team's policy as stored and shown (every field optional: unset limits nothing).
///
/// Unknown fields are refused by the update ([`MASK_PATHS`] in the service) before a
/// policy is parsed; a stored one with a field a later release added still decodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    /// Accelerator type names the team's pools may use (Kinetic's names without the
    /// count: `gpu-l4`, `gpu-a100`, `tpu-v5litepod`); empty allows all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_accelerators: Vec<String>,
    /// Zones the team's clusters and pools may be in; empty allows all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_zones: Vec<String>,
    /// How pools may obtain nodes; empty allows all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_provisioning: Vec<Provisioning>,
    /// Per accelerator type name, the most GPUs or TPU chips the team's pools may reach
    /// at their maximum size.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub max_accelerators: BTreeMap<String, u32>,
    /// The most live clusters the team may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub max_clusters: Option<u32>,
    /// The most node pools the team's clusters may have together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub max_node_pools: Option<u32>,
    /// The team's estimated cost per hour with every pool at its maximum (USD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub max_hourly_cost_usd: Option<f64>,
    /// Requests that would raise the team's hourly cost at maximum above this wait for
    /// an ADMIN's or OWNER's approval (USD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub approval_above_hourly_cost_usd: Option<f64>,
    /// The team's budget for a calendar month (USD), compared with the month's spend
    /// (estimated: every pool at its maximum for the whole month).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub monthly_budget_usd: Option<f64>,
    /// What happens to idle pools and clusters, and how long a snooze may be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub idle: Option<IdleRules>,
}

/// Why a policy is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    #[error("{field}: {value:?} is not an accelerator type (one of {known})")]
    UnknownAccelerator {
        field: &'static str,
        value: String,
        known: String,
    },
    #[error("allowedZones: {0:?} is not a zone like us-central1-a")]
    BadZone(String),
    #[error("{field} must be a finite number of at least 0, not {value}")]
    BadAmount { field: &'static str, value: f64 },
    #[error("{field} lists {value} twice")]
    Repeated { field: &'static str, value: String },
    #[error(transparent)]
    Idle(IdleError),
}

impl PolicyError {
    pub fn field(&self) -> &'static str {
        match self {
            PolicyError::UnknownAccelerator { field, .. }
            | PolicyError::BadAmount { field, .. }
            | PolicyError::Repeated { field, .. } => field,
            PolicyError::BadZone(_) => "allowedZones",
            PolicyError::Idle(IdleError::Bad { field, .. }) => field,
        }
    }
}

impl Policy {
    /// Check every field: type names among `types` (the catalogue's), zones shaped like
    /// zones, amounts finite and not negative, no list naming a value twice.
    pub fn validate(&self, types: &[String]) -> Result<(), PolicyError> {
        let known = || types.join(", ");
        let check_type = |field, t: &String| {
            if types.contains(t) {
                Ok(())
            } else {
                Err(PolicyError::UnknownAccelerator {
                    field,
                    value: t.clone(),
                    known: known(),
                })
            }
        };
        for t in &self.allowed_accelerators {
            check_type("allowedAccelerators", t)?;
        }
        for t in self.max_accelerators.keys() {
            check_type("maxAccelerators", t)?;
        }
        for z in &self.allowed_zones {
            if super::names::ZoneName::parse(z).is_err() {
                return Err(PolicyError::BadZone(z.clone()));
            }
        }
        once("allowedAccelerators", &self.allowed_accelerators)?;
        once("allowedZones", &self.allowed_zones)?;
        let modes: Vec<&str> = self
            .allowed_provisioning
            .iter()
            .map(|p| p.as_str())
            .collect();
        once("allowedProvisioning", &modes)?;
        for (field, v) in [
            ("maxHourlyCostUsd", self.max_hourly_cost_usd),
            (
                "approvalAboveHourlyCostUsd",
                self.approval_above_hourly_cost_usd,
            ),
            ("monthlyBudgetUsd", self.monthly_budget_usd),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(PolicyError::BadAmount { field, value: v });
            }
        }
        if let Some(idle) = &self.idle {
            idle.rules().map_err(PolicyError::Idle)?;
        }
        Ok(())
    }
}

fn once<T: AsRef<str>>(field: &'static str, v: &[T]) -> Result<(), PolicyError> {
    for (i, x) in v.iter().enumerate() {
        if v[..i].iter().any(|y| y.as_ref() == x.as_ref()) {
            return Err(PolicyError::Repeated {
                field,
                value: x.as_ref().to_owned(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
