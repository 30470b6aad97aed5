//! `GET`/`PATCH /v1/teams/{team}/policy` and `policy:evaluate`: a team's guardrails,
//! read by every member and changed by ADMINs and OWNERs (AIP-134 masks, an etag), and
//! the team's usage against each limit.
//!
//! Invariant: a policy is validated whole before it is stored, and stored only at the
//! version the caller's etag names (checked under the row lock); a team without a
//! stored policy has the empty one, which limits nothing.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::domain::accelerators;
use crate::domain::policy::{self, LimitUse, Policy, PoolUse, Usage};
use crate::domain::states::EventType;
use crate::domain::{Role, TeamId};
use crate::ops::queue::Idempotency;
use crate::store::policies::{PolicyRecord, Standing, TeamPool};
use crate::store::{self, Db, StoreError};

use super::access::{self, Caller};
use super::replies;
use super::{Error, Result};

/// The policy fields an update mask may name.
pub const MASK_PATHS: [&str; 10] = [
    "allowedAccelerators",
    "allowedZones",
    "allowedProvisioning",
    "maxAccelerators",
    "maxClusters",
    "maxNodePools",
    "maxHourlyCostUsd",
    "approvalAboveHourlyCostUsd",
    "monthlyBudgetUsd",
    "idle",
];

/// A team's policy as the API shows it.
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TeamPolicy {
    /// `teams/{team}/policy`
    pub name: String,
    #[serde(flatten)]
    pub policy: Policy,
    pub etag: String,
    /// Absent until the policy is first set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub update_time: Option<String>,
}

/// `policy:evaluate`: what the team holds, and each set limit against it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyEvaluation {
    /// `teams/{team}/policy`
    pub name: String,
    pub usage: Usage,
    /// One row per set limit; `exceeded` marks what a tightened policy left over it
    /// (reported, never destroyed).
    pub limits: Vec<LimitUse>,
}

/// Every accelerator type name a policy may name (`gpu-l4`, `tpu-v5litepod`).
pub fn type_names() -> Vec<String> {
    let mut v: Vec<String> = accelerators::all()
        .iter()
        .map(|a| a.pool_prefix())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The stored policy (the empty one when there is none or it does not decode: a
/// corrupt row is reported, never treated as "no limits").
pub fn decode(team: &str, r: Option<&PolicyRecord>) -> Result<Policy> {
    let Some(r) = r else {
        return Ok(Policy::default());
    };
    let row = store::Row {
        table: "team_policies",
        id: &team,
    };
    Ok(row
        .json("policy", r.policy.clone())
        .map_err(StoreError::from)?)
}

fn render(team: &str, r: Option<&PolicyRecord>) -> Result<TeamPolicy> {
    Ok(TeamPolicy {
        name: format!("teams/{team}/policy"),
        policy: decode(team, r)?,
        etag: match r {
            Some(r) => crate::model::etag(r.version, r.update_time),
            None => "\"0\"".to_owned(),
        },
        update_time: r.map(|r| crate::model::timestamp(r.update_time)),
    })
}

/// The team's policy (any member).
pub async fn get(db: &Db, caller: &Caller, team: &TeamId) -> Result<TeamPolicy> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading the policy").await?;
    render(team, store::policies::get(db, team).await?.as_ref())
}

/// A policy update: the body's fields, its etag, and the mask naming what changes.
pub struct PolicyPatch {
    pub body: Map<String, Value>,
    pub mask: Option<String>,
    pub etag: Option<String>,
}

fn bad_policy(msg: String, field: &str) -> Error {
    Error::invalid("INVALID_POLICY", msg).with("field", field)
}

/// The policy after `patch` (AIP-134): masked fields replaced (absent ones cleared), `*`
/// replaces the whole policy, no mask means the fields the body holds. Output-only
/// fields (`name`, `etag`, `updateTime`) in the body are ignored.
fn patched(current: &Policy, patch: &PolicyPatch) -> Result<Policy> {
    let mut body = patch.body.clone();
    for f in ["name", "etag", "updateTime"] {
        body.remove(f);
    }
    if let Some(bad) = body.keys().find(|k| !MASK_PATHS.contains(&k.as_str())) {
        return Err(bad_policy(
            format!(
                "{:?} is not a policy field (known: {})",
                bad.chars().take(60).collect::<String>(),
                MASK_PATHS.join(", ")
            ),
            bad,
        ));
    }
    let paths: Vec<String> = match patch.mask.as_deref().map(str::trim) {
        Some(m) if !m.is_empty() => m.split(',').map(|p| p.trim().to_owned()).collect(),
        _ => body.keys().cloned().collect(),
    };
    if let Some(bad) = paths
        .iter()
        .find(|p| *p != "*" && !MASK_PATHS.contains(&p.as_str()))
    {
        return Err(Error::invalid(
            "INVALID_UPDATE_MASK",
            format!(
                "updateMask names {:?}, which is not a policy field (known: {}, or *)",
                bad.chars().take(60).collect::<String>(),
                MASK_PATHS.join(", ")
            ),
        ));
    }
    let mut merged = match serde_json::to_value(current) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let all = paths.iter().any(|p| p == "*");
    for f in MASK_PATHS {
        if all || paths.iter().any(|p| p == f) {
            match body.get(f) {
                Some(v) if !v.is_null() => merged.insert(f.to_owned(), v.clone()),
                _ => merged.remove(f),
            };
        }
    }
    let p: Policy = serde_json::from_value(Value::Object(merged))
        .map_err(|e| bad_policy(format!("the policy does not parse: {e}"), "policy"))?;
    p.validate(&type_names())
        .map_err(|e| bad_policy(e.to_string(), e.field()))?;
    Ok(p)
}

/// Change the team's policy (ADMIN or more). Returns the stored policy and the one it
/// replaced (for the audit trail).
pub async fn update(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    patch: PolicyPatch,
    idem: Option<&Idempotency>,
) -> Result<TeamPolicy> {
    let who = caller.email.as_str();
    replies::replay_or_go!(db, who, idem);
    let team = team.as_str();
    access::require(db, caller, team, Role::Admin, "changing the policy").await?;
    let mut tx = replies::begin_or_replay!(db, who, idem);
    let before = store::policies::lock(&mut tx, team).await?;
    let shown = render(team, before.as_ref())?;
    super::etag::check(patch.etag.as_deref(), &shown.etag, &shown.name)?;
    let after = patched(&shown.policy, &patch)?;
    let value = serde_json::to_value(&after).map_err(|e| Error::internal(&e))?;
    let stored = store::policies::put(&mut tx, team, &value, who).await?;
    let answer = render(team, Some(&stored))?;
    let details = serde_json::json!({
        "before": shown.policy,
        "after": answer.policy,
        "updateMask": patch.mask,
    });
    let kind = EventType::PolicyChanged;
    super::audit::append_by(&mut *tx, caller, Some(team), kind, &answer.name, details).await?;
    replies::commit(tx, who, idem, &answer).await?;
    Ok(answer)
}

/// The team's pools as the policy counts them, named.
fn named(pools: &[TeamPool]) -> Vec<(String, PoolUse)> {
    pools
        .iter()
        .filter_map(|p| {
            let name = format!(
                "{}/nodePools/{}",
                super::clusters::cluster_name(&p.project, &p.zone, &p.cluster),
                p.pool
            );
            let rec: crate::store::PoolSpecRecord = serde_json::from_value(p.spec.clone()).ok()?;
            Some((name, PoolUse::of_record(&rec, &p.zone)?))
        })
        .collect()
}

/// What the team holds, from a standing read: each accelerator's nodes at the pools'
/// maximum sizes as GPUs or TPU chips of its type (a pool whose accelerator left the
/// catalogue counts as a pool only).
pub fn usage_of(s: &Standing) -> Usage {
    let mut u = Usage {
        clusters: s.clusters.max(0) as u64,
        ..Usage::default()
    };
    for g in &s.groups {
        u.node_pools += g.pools.max(0) as u64;
        u.hourly_cost_usd += g.hourly_at_max;
        if let Ok(accelerators::Choice::Accelerator(a)) = accelerators::parse(&g.accelerator) {
            let chips = g.nodes_at_max.max(0) as u64 * u64::from(a.per_node());
            *u.accelerators.entry(a.pool_prefix()).or_default() += chips;
        }
    }
    let m = &s.month;
    u.with_month(m.spent_usd, m.hours_left)
}

/// The team's usage against each limit of its policy (any member).
pub async fn evaluate(db: &Db, caller: &Caller, team: &TeamId) -> Result<PolicyEvaluation> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading the policy").await?;
    let s = store::policies::standing(db, team).await?;
    let p = decode(team, s.policy.as_ref())?;
    let usage = usage_of(&s);
    let pools = named(&store::policies::team_pools(db, team).await?);
    Ok(PolicyEvaluation {
        name: format!("teams/{team}/policy"),
        limits: policy::report(&p, &usage, &pools),
        usage,
    })
}
