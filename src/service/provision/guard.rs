//! The team's policy on a provisioning request (pool add, up, resize): one read of the
//! policy and the team's usage, the default maxima lowered to fit the accelerator caps,
//! and the verdict the plan carries.
//!
//! Invariants:
//! - A preview reads the policy and usage in one statement, unlocked; an apply reads
//!   them in one statement inside its enqueue transaction, under the team's lock
//!   ([`crate::store::policies::standing_locked`]), after the cluster's row lock: so the
//!   check and the enqueue of concurrent requests of a team are serial, and requests
//!   that each pass a cap alone cannot pass it together.
//! - A DENIED apply writes nothing (403 POLICY_VIOLATION); a NEEDS_APPROVAL apply
//!   enqueues its operation as PENDING_APPROVAL with none of its record changes
//!   ([`super::approval`]); an approval replays the request and accepts NEEDS_APPROVAL.

use sqlx::PgConnection;

use crate::domain::policy::{self, Ask, Bounds, Policy, PolicyCheck, PoolUse, Usage, Verdict};
use crate::domain::pools::PoolShape;
use crate::domain::pricing::PriceTable;
use crate::store::clusters::ClusterRecord;
use crate::store::{self, Db};

/// An enqueue transaction.
pub type Tx = sqlx::Transaction<'static, sqlx::Postgres>;

use super::super::policy::{decode, usage_of};
use super::super::{Error, Result};

/// The policy and the usage a request is judged against.
pub struct Guard {
    pub policy: Policy,
    pub usage: Usage,
}

impl Guard {
    /// For a preview: read without a lock.
    pub async fn read(db: &Db, team: &str) -> Result<Guard> {
        let s = store::policies::standing(db, team).await?;
        Ok(Guard {
            policy: decode(team, s.policy.as_ref())?,
            usage: usage_of(&s),
        })
    }

    /// For an apply: read inside `tx`, holding the team's lock until it ends.
    pub async fn locked(tx: &mut PgConnection, team: &str) -> Result<Guard> {
        let s = store::policies::standing_locked(tx, team).await?;
        Ok(Guard {
            policy: decode(team, s.policy.as_ref())?,
            usage: usage_of(&s),
        })
    }

    /// For a change to an existing cluster: a preview reads without a lock (no
    /// transaction); an apply opens the enqueue transaction, locks the cluster's row
    /// (its etag checked, not being deleted: [`super::lock_live_cluster`]) and then reads
    /// under the team's lock.
    pub async fn hold(
        db: &Db,
        m: &super::Mutation,
        team: &str,
    ) -> Result<(Option<(Tx, ClusterRecord)>, Guard)> {
        if m.validate_only {
            return Ok((None, Guard::read(db, team).await?));
        }
        let (mut tx, c) = super::lock_live_cluster(db, m).await?;
        let g = Guard::locked(&mut tx, team).await?;
        Ok((Some((tx, c)), g))
    }

    /// The new pools' maxima lowered to fit the accelerator caps, and a plan warning for
    /// each one lowered.
    pub fn fit(&self, ask: &Ask) -> (Vec<u64>, Vec<String>) {
        policy::fit(&self.policy, &self.usage, ask)
    }

    /// The verdict on `ask`.
    pub fn judge(&self, ask: &Ask) -> PolicyCheck {
        policy::evaluate(&self.policy, &self.usage, ask)
    }
}

/// 403 POLICY_VIOLATION for a DENIED check (metadata: the first rule's `rule`, `limit`,
/// `requested` and `current`; the message lists every rule broken).
pub fn refusal(check: &PolicyCheck) -> Option<Error> {
    let first = check.denial()?;
    let all: Vec<&str> = check
        .violations
        .iter()
        .filter(|v| v.rule != "approvalAboveHourlyCostUsd")
        .map(|v| v.message.as_str())
        .collect();
    Some(
        Error::new(
            crate::domain::RpcCode::PermissionDenied,
            "POLICY_VIOLATION",
            format!(
                "the team's policy does not allow this request: {} (GET the team's policy:evaluate for its usage; an ADMIN or OWNER can change the policy)",
                all.join("; ")
            ),
        )
        .with("rule", &first.rule)
        .with("limit", &first.limit)
        .with("requested", &first.requested)
        .with("current", &first.current),
    )
}

/// Refuse a DENIED check; otherwise whether the request waits for approval.
pub fn enforce(check: &PolicyCheck) -> Result<bool> {
    match refusal(check) {
        Some(e) => Err(e),
        None => Ok(check.verdict == Verdict::NeedsApproval),
    }
}

/// A pool of `shape` as the policy counts it (in `zones`, the cluster's zone when empty).
pub fn pool_use(
    prices: &PriceTable,
    shape: &PoolShape,
    zones: &[String],
    cluster_zone: &str,
    max_asked: bool,
) -> PoolUse {
    let hourly = prices
        .per_node_in(&shape.accelerator, shape.provisioning)
        .map_or(0.0, |(p, _)| p);
    let bounds = Bounds {
        min_nodes: u64::from(shape.min_nodes),
        max_nodes: u64::from(shape.max_nodes),
        provisioning: shape.provisioning,
        hourly_per_node: hourly,
        max_asked,
    };
    PoolUse::new(&shape.accelerator, bounds, zones, cluster_zone)
}

/// New pools of `shapes` (default maxima) as an [`Ask`]; `new_cluster` is the zone of a
/// cluster the request creates.
pub fn ask_for(
    prices: &PriceTable,
    shapes: &[PoolShape],
    zones: &[String],
    cluster_zone: &str,
    new_cluster: bool,
) -> Ask {
    Ask {
        new_cluster: new_cluster.then(|| cluster_zone.to_owned()),
        pools: shapes
            .iter()
            .map(|s| pool_use(prices, s, zones, cluster_zone, false))
            .collect(),
        replaces: Vec::new(),
    }
}

/// Fit `shapes` to the caps (their default maxima lowered where needed) and judge the
/// request: the verdict and the plan warnings of the lowering.
pub fn fit_and_judge(
    guard: &Guard,
    prices: &PriceTable,
    shapes: &mut [PoolShape],
    zones: &[String],
    cluster_zone: &str,
    new_cluster: bool,
) -> (PolicyCheck, Vec<String>) {
    let (maxes, notes) = guard.fit(&ask_for(prices, shapes, zones, cluster_zone, new_cluster));
    for (s, max) in shapes.iter_mut().zip(maxes) {
        s.max_nodes = u32::try_from(max).unwrap_or(s.max_nodes);
    }
    let check = guard.judge(&ask_for(prices, shapes, zones, cluster_zone, new_cluster));
    (check, notes)
}
