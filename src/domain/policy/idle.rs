//! The idle block of a team policy (`idle: {poolIdleAfter, action, clusterIdleAfter,
//! warnBefore, maxSnooze}`) and when a rule warns and acts.
//!
//! Invariants: durations are Google JSON durations (`"7200s"`), at least a minute and at
//! most [`MAX_RULE`]; a warning lead is shorter than every idle period it warns of; a
//! rule's stage is a pure function of when the thing went idle, the rule, any snooze and
//! now ([`stage`]), so every replica and every pass decides the same way.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::domain::duration;

/// The longest idle period, warning lead or snooze a policy may set (90 days).
pub const MAX_RULE: Duration = Duration::from_secs(90 * 86_400);
/// The shortest idle period (the usage collector samples every minute by default).
pub const MIN_IDLE: Duration = Duration::from_secs(60);
/// The warning lead when the policy sets none.
pub const DEFAULT_WARN: Duration = Duration::from_secs(3600);
/// The longest snooze when the policy sets no `maxSnooze`.
pub const DEFAULT_MAX_SNOOZE: Duration = Duration::from_secs(86_400);

/// What an idle pool's rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IdleAction {
    /// minNodes to 0: the autoscaler then removes the idle nodes; the pool stays.
    #[default]
    ScaleToZero,
    /// The pool is removed.
    RemovePool,
}

impl IdleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            IdleAction::ScaleToZero => "SCALE_TO_ZERO",
            IdleAction::RemovePool => "REMOVE_POOL",
        }
    }
}

/// The idle rules of a team. Idle means no pod requested the pool's (or, for a cluster,
/// any pool's) accelerators for the whole period, as the usage collector saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdleRules {
    /// A pool idle this long is acted on (`action`), e.g. `"7200s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pool_idle_after: Option<String>,
    /// SCALE_TO_ZERO (default) or REMOVE_POOL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub action: Option<IdleAction>,
    /// A cluster whose every pool was idle this long is brought down (`down`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cluster_idle_after: Option<String>,
    /// How long before acting (and before a cluster's TTL expires) the team is warned
    /// (an IDLE_WARNING or TTL_WARNING event and webhook); default `"3600s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub warn_before: Option<String>,
    /// The longest a member may postpone an idle action or a TTL with `:snooze`, from
    /// now; default `"86400s"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub max_snooze: Option<String>,
}

/// An idle block that is not one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IdleError {
    #[error("{field}: {why}")]
    Bad { field: &'static str, why: String },
}

/// The rules, parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    pub pool_idle_after: Option<Duration>,
    pub action: IdleAction,
    pub cluster_idle_after: Option<Duration>,
    pub warn_before: Duration,
    pub max_snooze: Duration,
}

fn parse(field: &'static str, v: &Option<String>) -> Result<Option<Duration>, IdleError> {
    let Some(text) = v else { return Ok(None) };
    let d = duration::parse_json(text, MAX_RULE).map_err(|e| IdleError::Bad {
        field,
        why: match e {
            duration::DurationError::Malformed(_) => {
                format!("{text:?} is not a duration in seconds like \"7200s\"")
            }
            e => e.to_string(),
        },
    })?;
    Ok(Some(d))
}

impl IdleRules {
    /// Check and parse every field.
    pub fn rules(&self) -> Result<Rules, IdleError> {
        let pool = parse("idle.poolIdleAfter", &self.pool_idle_after)?;
        let cluster = parse("idle.clusterIdleAfter", &self.cluster_idle_after)?;
        let warn = parse("idle.warnBefore", &self.warn_before)?.unwrap_or(DEFAULT_WARN);
        let snooze = parse("idle.maxSnooze", &self.max_snooze)?.unwrap_or(DEFAULT_MAX_SNOOZE);
        for (field, d) in [
            ("idle.poolIdleAfter", pool),
            ("idle.clusterIdleAfter", cluster),
        ] {
            match d {
                Some(d) if d < MIN_IDLE => {
                    return Err(IdleError::Bad {
                        field,
                        why: format!("at least {}s", MIN_IDLE.as_secs()),
                    });
                }
                Some(d) if self.warn_before.is_some() && warn >= d => {
                    return Err(IdleError::Bad {
                        field: "idle.warnBefore",
                        why: format!("must be shorter than {field} ({}s)", d.as_secs()),
                    });
                }
                _ => {}
            }
        }
        if self.action.is_some() && pool.is_none() {
            return Err(IdleError::Bad {
                field: "idle.action",
                why: "an action needs poolIdleAfter".into(),
            });
        }
        Ok(Rules {
            pool_idle_after: pool,
            action: self.action.unwrap_or_default(),
            cluster_idle_after: cluster,
            warn_before: warn,
            max_snooze: snooze,
        })
    }
}

/// Where a rule stands for one pool, cluster or TTL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Nothing to say yet.
    Quiet,
    /// Warn: it acts at `at` unless something changes.
    Warn { at: DateTime<Utc> },
    /// Act now.
    Act,
}

/// The stage of a rule due at `due` (idle since + period, or a TTL's expiry), postponed
/// to `snoozed_until` when later, warned `warn` before, at `now`.
pub fn stage(
    due: DateTime<Utc>,
    snoozed_until: Option<DateTime<Utc>>,
    warn: Duration,
    now: DateTime<Utc>,
) -> Stage {
    let at = snoozed_until.map_or(due, |s| s.max(due));
    if now >= at {
        Stage::Act
    } else if now + chrono::Duration::from_std(warn).unwrap_or(chrono::Duration::MAX) >= at {
        Stage::Warn { at }
    } else {
        Stage::Quiet
    }
}

/// `since + d`, saturating.
pub fn after(since: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    since + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn rules(v: serde_json::Value) -> Result<Rules, IdleError> {
        serde_json::from_value::<IdleRules>(v).unwrap().rules()
    }

    #[test]
    fn rules_are_checked() {
        let r = rules(serde_json::json!({"poolIdleAfter": "7200s", "warnBefore": "600s"})).unwrap();
        assert_eq!(r.pool_idle_after, Some(Duration::from_secs(7200)));
        assert_eq!(r.action, IdleAction::ScaleToZero);
        assert_eq!(r.max_snooze, DEFAULT_MAX_SNOOZE);
        assert!(rules(serde_json::json!({"poolIdleAfter": "2h"})).is_err());
        assert!(rules(serde_json::json!({"poolIdleAfter": "30s"})).is_err());
        assert!(rules(serde_json::json!({"poolIdleAfter": "600s", "warnBefore": "600s"})).is_err());
        assert!(rules(serde_json::json!({"action": "REMOVE_POOL"})).is_err());
        assert!(rules(serde_json::json!({"poolIdleAfter": "99999999s"})).is_err());
        assert!(
            serde_json::from_value::<IdleRules>(serde_json::json!({"idleAfter": "1s"})).is_err()
        );
    }

    #[test]
    fn stages() {
        let t = |h| Utc.with_ymd_and_hms(2026, 1, 1, h, 0, 0).unwrap();
        let warn = Duration::from_secs(3600);
        assert_eq!(stage(t(10), None, warn, t(8)), Stage::Quiet);
        assert_eq!(stage(t(10), None, warn, t(9)), Stage::Warn { at: t(10) });
        assert_eq!(stage(t(10), None, warn, t(10)), Stage::Act);
        assert_eq!(stage(t(10), Some(t(12)), warn, t(10)), Stage::Quiet);
        assert_eq!(
            stage(t(10), Some(t(12)), warn, t(11)),
            Stage::Warn { at: t(12) }
        );
        assert_eq!(stage(t(10), Some(t(9)), warn, t(10)), Stage::Act);
    }
}
