//! The verdict on a request: every rule it breaks, DENIED over NEEDS_APPROVAL over
//! ALLOWED, and the lowering of default maxima that keeps accelerator caps.
//!
//! Invariant: a request that adds nothing the policy counts is ALLOWED whatever the
//! policy says; the approval line alone never denies.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Ask, Policy, Usage};

/// ALLOWED, NEEDS_APPROVAL or DENIED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    Allowed,
    NeedsApproval,
    Denied,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allowed => "ALLOWED",
            Verdict::NeedsApproval => "NEEDS_APPROVAL",
            Verdict::Denied => "DENIED",
        }
    }
}

/// One rule a request breaks (or, for `approvalAboveHourlyCostUsd`, the reason it waits).
/// `limit`, `requested` and `current` are strings, as in the error's metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// The policy field (`maxAccelerators.gpu-h100`, `allowedZones`, ...).
    pub rule: String,
    pub limit: String,
    /// What the request asks for (the usage after it, for caps).
    pub requested: String,
    /// The team's usage before the request.
    pub current: String,
    pub message: String,
}

/// The policy's answer on a request: the verdict and every rule behind it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyCheck {
    pub verdict: Verdict,
    pub violations: Vec<Violation>,
}

impl PolicyCheck {
    pub fn allowed() -> PolicyCheck {
        PolicyCheck {
            verdict: Verdict::Allowed,
            violations: Vec::new(),
        }
    }

    /// The first rule that denies the request, if any.
    pub fn denial(&self) -> Option<&Violation> {
        (self.verdict == Verdict::Denied)
            .then(|| self.violations.iter().find(|v| v.rule != APPROVAL_RULE))
            .flatten()
    }
}

pub(super) const APPROVAL_RULE: &str = "approvalAboveHourlyCostUsd";

pub(super) fn usd(x: f64) -> String {
    format!("{:.2}", (x * 100.0).round() / 100.0)
}

pub(super) fn list<T: AsRef<str>>(v: &[T]) -> String {
    v.iter().map(|x| x.as_ref()).collect::<Vec<_>>().join(",")
}

/// Lower each pool's *default* maximum so the accelerator caps hold: the new maximum of
/// every pool, in order, and a note for each one lowered. A pool that cannot fit its
/// minimum (or one node) keeps its maximum: [`evaluate`] then denies it.
pub fn fit(policy: &Policy, now: &Usage, ask: &Ask) -> (Vec<u64>, Vec<String>) {
    let mut used: BTreeMap<String, u64> = Ask {
        pools: Vec::new(),
        ..ask.clone()
    }
    .after(now)
    .accelerators;
    let mut maxes = Vec::with_capacity(ask.pools.len());
    let mut notes = Vec::new();
    for p in &ask.pools {
        let mut max = p.max_nodes;
        if let Some(cap) = policy
            .max_accelerators
            .get(&p.type_name)
            .map(|&c| u64::from(c))
            && !p.max_asked
        {
            let have = used.get(&p.type_name).copied().unwrap_or(0);
            let per_node = (p.chips_per_node * p.zone_count).max(1);
            let step = p.node_step.max(1);
            let room = cap.saturating_sub(have) / per_node / step * step;
            let least = p.min_nodes.max(step);
            if room < max && room >= least {
                notes.push(format!(
                    "maxNodes of the {} pool lowered from {max} to {room}: the team's policy allows {cap} {} at the pools' maximum size and {have} are held",
                    p.type_name,
                    p.type_name
                ));
                max = room;
            }
        }
        *used.entry(p.type_name.clone()).or_default() += p.chips_per_node * max * p.zone_count;
        maxes.push(max);
    }
    (maxes, notes)
}

/// The verdict on `ask` against `policy`, the team using `now`.
pub fn evaluate(policy: &Policy, now: &Usage, ask: &Ask) -> PolicyCheck {
    let after = ask.after(now);
    if !ask.grows(now, &after) && ask.new_cluster.is_none() {
        return PolicyCheck::allowed();
    }
    let mut v = Vec::new();
    if let Some(zone) = &ask.new_cluster {
        allowed_zone(policy, zone, "the cluster", &mut v);
    }
    for p in &ask.pools {
        if !policy.allowed_accelerators.is_empty()
            && !policy.allowed_accelerators.contains(&p.type_name)
        {
            v.push(Violation {
                rule: "allowedAccelerators".into(),
                limit: list(&policy.allowed_accelerators),
                requested: p.type_name.clone(),
                current: String::new(),
                message: format!(
                    "the team's policy allows only {} accelerators, not {}",
                    list(&policy.allowed_accelerators),
                    p.type_name
                ),
            });
        }
        if !policy.allowed_provisioning.is_empty()
            && !policy.allowed_provisioning.contains(&p.provisioning)
        {
            let allowed: Vec<&str> = policy
                .allowed_provisioning
                .iter()
                .map(|m| m.as_str())
                .collect();
            v.push(Violation {
                rule: "allowedProvisioning".into(),
                limit: list(&allowed),
                requested: p.provisioning.as_str().into(),
                current: String::new(),
                message: format!(
                    "the team's policy allows only {} provisioning, not {}",
                    list(&allowed),
                    p.provisioning.as_str()
                ),
            });
        }
        for z in &p.zones {
            allowed_zone(policy, z, &format!("the {} pool", p.type_name), &mut v);
        }
        if let Some(cap) = policy
            .max_accelerators
            .get(&p.type_name)
            .map(|&c| u64::from(c))
        {
            let held = now.accelerators.get(&p.type_name).copied().unwrap_or(0);
            let want = after.accelerators.get(&p.type_name).copied().unwrap_or(0);
            if want > cap && want > held && !v.iter().any(|x| x.rule.ends_with(&p.type_name)) {
                v.push(Violation {
                    rule: format!("maxAccelerators.{}", p.type_name),
                    limit: cap.to_string(),
                    requested: want.to_string(),
                    current: held.to_string(),
                    message: format!(
                        "the team's pools would reach {want} {} at their maximum size; the policy allows {cap} ({held} held): lower maxNodes or minNodes, or ask an ADMIN to raise maxAccelerators.{}",
                        p.type_name, p.type_name
                    ),
                });
            }
        }
    }
    cap_count(
        "maxClusters",
        policy.max_clusters.map(u64::from),
        now.clusters,
        after.clusters,
        "clusters",
        &mut v,
    );
    cap_count(
        "maxNodePools",
        policy.max_node_pools.map(u64::from),
        now.node_pools,
        after.node_pools,
        "node pools",
        &mut v,
    );
    let raises_cost = after.hourly_cost_usd > now.hourly_cost_usd + 1e-9;
    if raises_cost {
        let hourly = (now.hourly_cost_usd, after.hourly_cost_usd);
        v.extend(cost_cap("maxHourlyCostUsd", policy.max_hourly_cost_usd, hourly, |a, c| {
            format!("the team's pools would cost {a} USD an hour at their maximum size; the policy allows {c}")
        }));
        let month = (now.month_spend_usd, after.month_spend_usd);
        v.extend(cost_cap("monthlyBudgetUsd", policy.monthly_budget_usd, month, |a, c| {
            format!("this month's spend would reach an estimated {a} USD (measured so far, plus every pool at its maximum for the rest of the month); the team's budget is {c}")
        }));
    }
    let denied = !v.is_empty();
    if let Some(above) = policy.approval_above_hourly_cost_usd
        && raises_cost
        && after.hourly_cost_usd > above + 1e-9
    {
        v.push(Violation {
            rule: APPROVAL_RULE.into(),
            limit: usd(above),
            requested: usd(after.hourly_cost_usd),
            current: usd(now.hourly_cost_usd),
            message: format!(
                "the team's pools would cost {} USD an hour at their maximum size, above the {} that needs an ADMIN's or OWNER's approval",
                usd(after.hourly_cost_usd),
                usd(above)
            ),
        });
    }
    let verdict = if denied {
        Verdict::Denied
    } else if v.is_empty() {
        Verdict::Allowed
    } else {
        Verdict::NeedsApproval
    };
    PolicyCheck {
        verdict,
        violations: v,
    }
}

/// A violation of a cost `cap` by `(now, after)`, worded by `say(after, cap)`.
fn cost_cap(
    rule: &str,
    cap: Option<f64>,
    (now, after): (f64, f64),
    say: impl Fn(String, String) -> String,
) -> Option<Violation> {
    let cap = cap.filter(|c| after > c + 1e-9)?;
    Some(Violation {
        rule: rule.into(),
        limit: usd(cap),
        requested: usd(after),
        current: usd(now),
        message: say(usd(after), usd(cap)),
    })
}

fn allowed_zone(policy: &Policy, zone: &str, what: &str, v: &mut Vec<Violation>) {
    if policy.allowed_zones.is_empty() || policy.allowed_zones.iter().any(|z| z == zone) {
        return;
    }
    if v.iter()
        .any(|x| x.rule == "allowedZones" && x.requested == zone)
    {
        return;
    }
    v.push(Violation {
        rule: "allowedZones".into(),
        limit: list(&policy.allowed_zones),
        requested: zone.to_owned(),
        current: String::new(),
        message: format!(
            "{what} would be in {zone}; the team's policy allows only {}",
            list(&policy.allowed_zones)
        ),
    });
}

fn cap_count(
    rule: &str,
    cap: Option<u64>,
    now: u64,
    after: u64,
    what: &str,
    v: &mut Vec<Violation>,
) {
    if let Some(cap) = cap
        && after > now
        && after > cap
    {
        v.push(Violation {
            rule: rule.into(),
            limit: cap.to_string(),
            requested: after.to_string(),
            current: now.to_string(),
            message: format!("the team would have {after} {what}; the policy allows {cap}"),
        });
    }
}
