//! Idle rules and TTLs that act (issue 30 item 2). Every pass (one replica at a time: the
//! `idle-rules` task lease) reads the cloud's clock and, for each rule due, first warns
//! (an IDLE_WARNING or TTL_WARNING audit event, which webhooks deliver) and then acts
//! through an ordinary operation: SCALE_TO_ZERO (a resize to minNodes 0), REMOVE_POOL, or
//! `down` of an idle or expired cluster. The operation's `createdBy` names the rule
//! ([`IDLE_RULE`], [`TTL_RULE`]), never a person; it is cancellable and audited like any.
//! Members postpone with `:snooze` ([`snooze_pool`], [`snooze_cluster`]) within the
//! policy's `idle.maxSnooze`; every snooze is an IDLE_SNOOZED event.
//!
//! Invariants:
//! - Idle means no pod requested the accelerators for the whole period, as the usage
//!   collector saw: a pool's idle period starts at its last busy sample (or when
//!   sampling began); a gap in sampling starts it afresh, never counts as idle.
//! - Each episode (an idle-since time, or an expiry) is warned once and acted on once;
//!   an action's request id is derived from the rule, target and episode, so a pass
//!   repeated after a crash finds the operation it already started instead of another.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::domain::policy::idle::{self, IdleAction, IdleRules, Rules, Stage};
use crate::domain::states::EventType;
use crate::domain::{Email, Role};
use crate::model::Operation;
use crate::store::idle::{Mark, Rule};
use crate::store::{self, task_leases};

use super::access::Caller;
use super::audit;
use super::clusters::ClusterPath;
use super::provision::resize::ResizeRequest;
use super::provision::{Idempotency, Mutation, Submitted, ttl};
use super::{Error, Result, Services};

/// `createdBy` of what the idle rules start.
pub const IDLE_RULE: &str = "idle-rule@kineticd";
/// `createdBy` of what the TTL rule starts.
pub const TTL_RULE: &str = "ttl-rule@kineticd";
/// The task lease's name.
pub const TASK: &str = "idle-rules";

/// What one pass did (names of what was warned of and acted on).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pass {
    pub warned: Vec<String>,
    pub acted: Vec<(String, String)>,
}

/// Run a pass every `every` until `stop`, on the replica holding the task.
pub async fn run(svc: Services, every: Duration, stop: CancellationToken) {
    let holder = format!("idle-{}", uuid::Uuid::new_v4().simple());
    let ttl = (every.as_secs_f64() * 3.0).max(30.0);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => break,
        }
        match task_leases::hold(&svc.db, TASK, &holder, ttl).await {
            Ok(Some(_)) => {
                if let Err(e) = pass(&svc).await {
                    tracing::warn!(error = %e, "idle rules pass failed");
                }
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "idle rules lease not taken"),
        }
    }
    let _ = task_leases::release(&svc.db, TASK, &holder).await;
}

fn rules_of(team: &str, v: Option<&Value>) -> Option<Rules> {
    let v = v.filter(|v| !v.is_null())?;
    match serde_json::from_value::<IdleRules>(v.clone()).map(|r| r.rules()) {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            tracing::warn!(%team, error = %e, "stored idle rules do not hold; not applied");
            None
        }
        Err(e) => {
            tracing::warn!(%team, error = %e, "stored idle rules do not parse; not applied");
            None
        }
    }
}

/// The marks as they stand for `episode` (another episode's are forgotten; a snooze stays).
fn current(mark: &Mark, episode: DateTime<Utc>) -> (bool, bool) {
    if mark.episode == Some(episode) {
        (mark.warned.unwrap_or(false), mark.operation_id.is_some())
    } else {
        (false, false)
    }
}

fn stamp(t: DateTime<Utc>) -> String {
    crate::model::timestamp(t)
}

/// One target of one rule.
struct Target<'a> {
    team: &'a str,
    cluster_id: uuid::Uuid,
    project: &'a str,
    zone: &'a str,
    cluster: &'a str,
    /// `""`: the cluster itself.
    pool: &'a str,
    rule: Rule,
}

impl Target<'_> {
    fn name(&self) -> String {
        let c = format!(
            "projects/{}/zones/{}/clusters/{}",
            self.project, self.zone, self.cluster
        );
        if self.pool.is_empty() {
            c
        } else {
            format!("{c}/nodePools/{}", self.pool)
        }
    }

    fn path(&self) -> Result<ClusterPath> {
        ClusterPath::parse(self.project, self.zone, self.cluster)
    }
}

/// One pass over every TTL and idle rule.
pub async fn pass(svc: &Services) -> Result<Pass> {
    let now = ttl::cloud_now(&svc.cloud).await?;
    let mut out = Pass::default();
    for e in store::idle::expiring(&svc.db).await? {
        let warn =
            rules_of(&e.team_id, e.idle.as_ref()).map_or(idle::DEFAULT_WARN, |r| r.warn_before);
        let t = Target {
            team: &e.team_id,
            cluster_id: e.cluster_id,
            project: &e.project_id,
            zone: &e.zone,
            cluster: &e.name,
            pool: "",
            rule: Rule::Ttl,
        };
        let details = json!({"expireTime": stamp(e.expire_time)});
        let s = idle::stage(e.expire_time, None, warn, now);
        step(
            svc,
            &t,
            e.expire_time,
            &e.mark,
            s,
            Action::Down,
            details,
            &mut out,
        )
        .await;
    }
    for (team, v) in store::idle::idle_policies(&svc.db).await? {
        let Some(rules) = rules_of(&team, Some(&v)) else {
            continue;
        };
        if let Some(after) = rules.pool_idle_after {
            for p in store::idle::idle_pools(&svc.db, &team).await? {
                if p.last_busy == Some(p.last_seen) {
                    continue; // busy at the last sample
                }
                let action = match rules.action {
                    // minNodes 0 already: the autoscaler removes idle nodes itself.
                    IdleAction::ScaleToZero if p.min_nodes.unwrap_or(0) == 0 => continue,
                    IdleAction::ScaleToZero => Action::ScaleToZero,
                    IdleAction::RemovePool => Action::RemovePool,
                };
                let since = p.last_busy.map_or(p.seen_since, |b| b.max(p.seen_since));
                let t = Target {
                    team: &team,
                    cluster_id: p.cluster_id,
                    project: &p.project_id,
                    zone: &p.zone,
                    cluster: &p.name,
                    pool: &p.pool,
                    rule: Rule::PoolIdle,
                };
                let due = idle::after(since, after);
                let details = json!({"idleSince": stamp(since), "action": rules.action.as_str()});
                let s = idle::stage(due, p.mark.snoozed_until, rules.warn_before, now);
                step(svc, &t, since, &p.mark, s, action, details, &mut out).await;
            }
        }
        if let Some(after) = rules.cluster_idle_after {
            for c in store::idle::idle_clusters(&svc.db, &team).await? {
                if c.last_busy == Some(c.last_sample) {
                    continue;
                }
                let since = c.last_busy.map_or(c.seen_since, |b| b.max(c.seen_since));
                let t = Target {
                    team: &team,
                    cluster_id: c.cluster_id,
                    project: &c.project_id,
                    zone: &c.zone,
                    cluster: &c.name,
                    pool: "",
                    rule: Rule::ClusterIdle,
                };
                let due = idle::after(since, after);
                let details = json!({"idleSince": stamp(since), "action": "DOWN"});
                let s = idle::stage(due, c.mark.snoozed_until, rules.warn_before, now);
                step(svc, &t, since, &c.mark, s, Action::Down, details, &mut out).await;
            }
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy)]
enum Action {
    ScaleToZero,
    RemovePool,
    Down,
}

/// Warn or act on one target, once per episode; failures are logged and retried on the
/// next pass.
#[allow(clippy::too_many_arguments)]
async fn step(
    svc: &Services,
    t: &Target<'_>,
    episode: DateTime<Utc>,
    mark: &Mark,
    s: Stage,
    action: Action,
    mut details: Value,
    out: &mut Pass,
) {
    let (warned, acted) = current(mark, episode);
    let (actor, warning, acting) = match t.rule {
        Rule::Ttl => (TTL_RULE, EventType::TtlWarning, EventType::TtlExpired),
        _ => (IDLE_RULE, EventType::IdleWarning, EventType::IdleAction),
    };
    let r = match s {
        Stage::Quiet => return,
        Stage::Warn { at } if !warned => {
            details["actTime"] = json!(stamp(at));
            announce(svc, t, episode, actor, warning, details, true, None)
                .await
                .map(|()| out.warned.push(t.name()))
        }
        Stage::Warn { .. } => return,
        Stage::Act if acted => return,
        Stage::Act => match act(svc, t, episode, action).await {
            Ok(op) => {
                details["operation"] = json!(op.name);
                let id = op
                    .name
                    .strip_prefix("operations/")
                    .and_then(|i| i.parse().ok());
                let r = announce(svc, t, episode, actor, acting, details, true, id).await;
                out.acted.push((t.name(), op.name));
                r
            }
            Err(e) => Err(e),
        },
    };
    if let Err(e) = r {
        tracing::warn!(target = %t.name(), rule = t.rule.as_str(), error = %e, "idle rule step failed; retried next pass");
    }
}

/// The event and the marks, in one transaction.
#[allow(clippy::too_many_arguments)]
async fn announce(
    svc: &Services,
    t: &Target<'_>,
    episode: DateTime<Utc>,
    actor: &str,
    kind: EventType,
    mut details: Value,
    warned: bool,
    operation: Option<uuid::Uuid>,
) -> Result<()> {
    details["rule"] = json!(t.rule.as_str());
    let mut tx = svc.db.begin().await.map_err(store::StoreError::from)?;
    audit::append_as(&mut *tx, actor, Some(t.team), kind, &t.name(), details).await?;
    store::idle::mark(
        &mut tx,
        t.cluster_id,
        t.pool,
        t.rule,
        episode,
        warned,
        operation,
    )
    .await?;
    tx.commit().await.map_err(store::StoreError::from)?;
    Ok(())
}

/// Start the rule's operation as the rule (request id from rule, target and episode).
async fn act(
    svc: &Services,
    t: &Target<'_>,
    episode: DateTime<Utc>,
    a: Action,
) -> Result<Operation> {
    let who = if t.rule == Rule::Ttl {
        TTL_RULE
    } else {
        IDLE_RULE
    };
    let key = format!(
        "{}:{}:{}",
        t.rule.as_str(),
        t.name(),
        episode.timestamp_micros()
    );
    let m = Mutation {
        caller: Caller {
            email: Email::parse(who).map_err(Error::from)?,
            admin: true,
        },
        path: t.path()?,
        validate_only: false,
        idempotency: Some(Idempotency {
            fingerprint: crate::ops::queue::fingerprint("RULE", &key, &Value::Null),
            key,
        }),
        if_match: None,
        pool_if_match: None,
        approving: None,
    };
    let submitted = match a {
        Action::ScaleToZero => {
            let req = ResizeRequest {
                min_nodes: Some(0),
                max_nodes: None,
            };
            super::provision::resize::resize(svc, &m, t.pool, Some("minNodes"), req).await?
        }
        Action::RemovePool => super::provision::pools::remove_pool(svc, &m, t.pool).await?,
        Action::Down => super::provision::down::down(svc, &m).await?,
    };
    match submitted {
        Submitted::Operation(op) => Ok(*op),
        Submitted::Plan(_) => Err(Error::internal(&std::io::Error::other(
            "a rule's apply answered with a plan",
        ))),
    }
}

/// `:snooze` body.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SnoozeRequest {
    /// How long from now to postpone (`"7200s"`), at most the policy's `idle.maxSnooze`
    /// (default a day).
    pub duration: String,
}

/// What a snooze did.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Snoozed {
    /// The pool or cluster snoozed.
    pub name: String,
    /// No idle action before this time.
    pub snoozed_until: DateTime<Utc>,
    /// The cluster's expiry after the snooze (a cluster with a TTL).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub expire_time: Option<DateTime<Utc>>,
}

/// The checked snooze length, and now, on the cloud's clock.
async fn snooze_until(svc: &Services, team: &str, req: &SnoozeRequest) -> Result<DateTime<Utc>> {
    let policy = store::policies::get(&svc.db, team).await?;
    let idle = policy.as_ref().and_then(|p| p.policy.get("idle").cloned());
    let max = rules_of(team, idle.as_ref()).map_or(idle::DEFAULT_MAX_SNOOZE, |r| r.max_snooze);
    let bad = |m: String| Error::invalid("INVALID_SNOOZE", m).with("field", "duration");
    let d = crate::domain::duration::parse_json(&req.duration, idle::MAX_RULE)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            bad(format!(
                "duration {:?} is not a duration in seconds like \"7200s\"",
                req.duration
            ))
        })?;
    if d > max {
        return Err(Error::invalid(
            "SNOOZE_TOO_LONG",
            format!(
                "a snooze may be at most {}s (the team policy's idle.maxSnooze); asked {}s",
                max.as_secs(),
                d.as_secs()
            ),
        )
        .with("maxSnooze", format!("{}s", max.as_secs())));
    }
    Ok(idle::after(ttl::cloud_now(&svc.cloud).await?, d))
}

/// `POST .../nodePools/{pool}:snooze`: no idle action on the pool before now + duration
/// (MEMBER+).
pub async fn snooze_pool(
    svc: &Services,
    caller: &Caller,
    path: &ClusterPath,
    pool: &str,
    req: &SnoozeRequest,
) -> Result<Snoozed> {
    let (team, c) = snooze_target(svc, caller, path).await?;
    let pool = crate::domain::PoolId::parse(pool)?;
    let live = store::node_pools::get(&svc.db, c.id, pool.as_str())
        .await?
        .filter(|p| p.state != crate::domain::PoolState::Deleted);
    if live.is_none() {
        return Err(Error::not_found(
            "NODE_POOL_NOT_FOUND",
            format!("node pool {}/nodePools/{pool} not found", path.name()),
        )
        .with("pool", pool.as_str()));
    }
    let until = snooze_until(svc, &team, req).await?;
    let name = format!("{}/nodePools/{pool}", path.name());
    let mut tx = svc.db.begin().await.map_err(store::StoreError::from)?;
    let until = store::idle::snooze(&mut tx, c.id, pool.as_str(), Rule::PoolIdle, until).await?;
    let snoozed = Snoozed {
        name,
        snoozed_until: until,
        expire_time: None,
    };
    commit_snooze(tx, caller, &team, req, snoozed).await
}

/// `POST .../clusters/{c}:snooze`: no idle action on the cluster or any of its pools,
/// and no TTL expiry, before now + duration (MEMBER+).
pub async fn snooze_cluster(
    svc: &Services,
    caller: &Caller,
    path: &ClusterPath,
    req: &SnoozeRequest,
) -> Result<Snoozed> {
    let (team, c) = snooze_target(svc, caller, path).await?;
    let until = snooze_until(svc, &team, req).await?;
    let pools = store::node_pools::list(&svc.db, c.id, None, 10_000).await?;
    let mut tx = svc.db.begin().await.map_err(store::StoreError::from)?;
    let until = store::idle::snooze(&mut tx, c.id, "", Rule::ClusterIdle, until).await?;
    for p in pools
        .iter()
        .filter(|p| p.state != crate::domain::PoolState::Deleted)
    {
        store::idle::snooze(&mut tx, c.id, &p.pool_id, Rule::PoolIdle, until).await?;
    }
    let expire = store::idle::extend_expiry(&mut tx, c.id, until).await?;
    let snoozed = Snoozed {
        name: path.name(),
        snoozed_until: until,
        expire_time: expire,
    };
    commit_snooze(tx, caller, &team, req, snoozed).await
}

/// Audit a snooze (IDLE_SNOOZED on its pool or cluster) and commit it.
async fn commit_snooze(
    mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
    caller: &Caller,
    team: &str,
    req: &SnoozeRequest,
    snoozed: Snoozed,
) -> Result<Snoozed> {
    let mut details =
        json!({"snoozedUntil": stamp(snoozed.snoozed_until), "duration": req.duration});
    if let Some(e) = snoozed.expire_time {
        details["expireTime"] = json!(stamp(e));
    }
    audit::append_by(
        &mut *tx,
        caller,
        Some(team),
        EventType::IdleSnoozed,
        &snoozed.name,
        details,
    )
    .await?;
    tx.commit().await.map_err(store::StoreError::from)?;
    Ok(snoozed)
}

/// The live cluster a member snoozes, and its team.
async fn snooze_target(
    svc: &Services,
    caller: &Caller,
    path: &ClusterPath,
) -> Result<(String, store::clusters::ClusterRecord)> {
    let team = super::clusters::project_team(
        &svc.db,
        caller,
        &path.project,
        Role::Member,
        "snoozing idle rules",
    )
    .await?;
    let c = store::clusters::by_name(
        &svc.db,
        store::clusters::Pick::LiveOrLastDeleted,
        path.key(),
    )
    .await?
    .filter(|c| c.state != crate::domain::ClusterState::Deleted && c.team_id == team)
    .ok_or_else(|| super::clusters::cluster_not_found(&path.name()))?;
    Ok((team, c))
}
