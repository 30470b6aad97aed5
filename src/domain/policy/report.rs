//! `policy:evaluate`: each set limit of a policy against what the team holds, and the
//! pools outside an allowed set.
//!
//! Invariant: the report only reads: what a tightened policy leaves over a limit is
//! marked `exceeded`, never changed.

use serde::Serialize;

use super::check::{APPROVAL_RULE, list, usd};
use super::{Policy, PoolUse, Usage};

/// One limit of a policy against the team's usage (`policy:evaluate`).
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitUse {
    pub rule: String,
    pub limit: String,
    pub current: String,
    /// The usage is over the limit (left by a policy tightened after it was reached:
    /// reported, never destroyed).
    pub exceeded: bool,
}

/// Every set limit of `policy` against `now`, and the pools outside an allowed set.
pub fn report(policy: &Policy, now: &Usage, pools: &[(String, PoolUse)]) -> Vec<LimitUse> {
    let mut out = Vec::new();
    let mut cap = |rule: String, limit: f64, current: f64, text: fn(f64) -> String| {
        out.push(LimitUse {
            rule,
            limit: text(limit),
            current: text(current),
            exceeded: current > limit + 1e-9,
        });
    };
    let whole = |x: f64| format!("{x:.0}");
    for (t, &n) in &policy.max_accelerators {
        let held = now.accelerators.get(t).copied().unwrap_or(0);
        cap(format!("maxAccelerators.{t}"), n as f64, held as f64, whole);
    }
    if let Some(n) = policy.max_clusters {
        cap("maxClusters".into(), n as f64, now.clusters as f64, whole);
    }
    if let Some(n) = policy.max_node_pools {
        cap(
            "maxNodePools".into(),
            n as f64,
            now.node_pools as f64,
            whole,
        );
    }
    if let Some(x) = policy.max_hourly_cost_usd {
        cap("maxHourlyCostUsd".into(), x, now.hourly_cost_usd, usd);
    }
    if let Some(x) = policy.approval_above_hourly_cost_usd {
        cap(APPROVAL_RULE.into(), x, now.hourly_cost_usd, usd);
    }
    if let Some(x) = policy.monthly_budget_usd {
        cap("monthlyBudgetUsd".into(), x, now.month_spend_usd, usd);
    }
    let outside = |rule: &str, allowed: &[String], of: &dyn Fn(&PoolUse) -> Vec<String>| {
        if allowed.is_empty() {
            return None;
        }
        let bad: Vec<String> = pools
            .iter()
            .filter(|(_, p)| of(p).iter().any(|x| !allowed.contains(x)))
            .map(|(name, _)| name.clone())
            .collect();
        Some(LimitUse {
            rule: rule.into(),
            limit: list(allowed),
            exceeded: !bad.is_empty(),
            current: list(&bad),
        })
    };
    let modes: Vec<String> = policy
        .allowed_provisioning
        .iter()
        .map(|m| m.as_str().to_owned())
        .collect();
    out.extend(outside(
        "allowedAccelerators",
        &policy.allowed_accelerators,
        &|p| vec![p.type_name.clone()],
    ));
    out.extend(outside("allowedZones", &policy.allowed_zones, &|p| {
        p.zones.clone()
    }));
    out.extend(outside("allowedProvisioning", &modes, &|p| {
        vec![p.provisioning.as_str().to_owned()]
    }));
    out
}
