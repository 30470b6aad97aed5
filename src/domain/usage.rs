//! Usage: what one sample of a cluster saw on each node, and the questions asked of the
//! recorded node intervals (range, grouping).
//!
//! Invariant: a [`UsageQuery`] is valid when built: the range is non-empty, at most
//! [`MAX_RANGE_DAYS`] long, and the grouping one of [`GroupBy`]; everything that reads
//! usage takes one, so no unchecked range reaches the database.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The longest range one usage query may cover.
pub const MAX_RANGE_DAYS: i64 = 400;

/// One node as one sample saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSample {
    pub node: String,
    /// The node object's uid (a node recreated under its name is another node).
    pub uid: String,
    /// The GKE node pool.
    pub pool: String,
    /// Kinetic's accelerator name (`l4`, `v5e`); `None` for a node without one.
    pub accelerator: Option<String>,
    /// Accelerators (GPUs or TPU chips) on the node.
    pub accelerators: u32,
    /// ON_DEMAND, SPOT, RESERVATION, FLEX_START or QUEUED.
    pub provisioning: String,
    /// The member the node is booked to (who added its pool; else who created the cluster).
    pub member: Option<String>,
    /// Price of one node hour in force now (USD).
    pub price_per_hour: f64,
    /// Accelerators requested by the node's pods that are not finished (at most
    /// `accelerators`).
    pub busy: u32,
}

/// How usage rows are grouped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    Cluster,
    Pool,
    Accelerator,
    Provisioning,
    Member,
    Day,
}

impl GroupBy {
    pub const ALL: [GroupBy; 6] = [
        GroupBy::Cluster,
        GroupBy::Pool,
        GroupBy::Accelerator,
        GroupBy::Provisioning,
        GroupBy::Member,
        GroupBy::Day,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GroupBy::Cluster => "cluster",
            GroupBy::Pool => "pool",
            GroupBy::Accelerator => "accelerator",
            GroupBy::Provisioning => "provisioning",
            GroupBy::Member => "member",
            GroupBy::Day => "day",
        }
    }

    pub fn parse(s: &str) -> Result<GroupBy, UsageError> {
        GroupBy::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| UsageError::GroupBy(s.to_owned()))
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UsageError {
    #[error("groupBy {0:?} is not one of cluster, pool, accelerator, provisioning, member, day")]
    GroupBy(String),
    #[error("endTime {end} is not after startTime {start}")]
    Backwards { start: String, end: String },
    #[error("the range from {start} to {end} is longer than {MAX_RANGE_DAYS} days")]
    TooLong { start: String, end: String },
}

impl UsageError {
    /// The query parameter at fault.
    pub fn field(&self) -> &'static str {
        match self {
            UsageError::GroupBy(_) => "groupBy",
            UsageError::Backwards { .. } | UsageError::TooLong { .. } => "endTime",
        }
    }
}

/// A checked usage question.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UsageQuery {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub group_by: GroupBy,
}

impl UsageQuery {
    pub fn new(
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        group_by: GroupBy,
    ) -> Result<UsageQuery, UsageError> {
        let text = |t: DateTime<Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        if end <= start {
            return Err(UsageError::Backwards {
                start: text(start),
                end: text(end),
            });
        }
        if end - start > chrono::Duration::days(MAX_RANGE_DAYS) {
            return Err(UsageError::TooLong {
                start: text(start),
                end: text(end),
            });
        }
        Ok(UsageQuery {
            start,
            end,
            group_by,
        })
    }
}

/// The first instant of `t`'s calendar month (UTC).
pub fn month_start(t: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::{Datelike, TimeZone};
    Utc.with_ymd_and_hms(t.year(), t.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

/// The first instant of the month after `t`'s (UTC).
pub fn next_month_start(t: DateTime<Utc>) -> DateTime<Utc> {
    use chrono::{Datelike, TimeZone};
    let (y, m) = if t.month() == 12 {
        (t.year() + 1, 1)
    } else {
        (t.year(), t.month() + 1)
    };
    Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0).single().unwrap_or(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn ranges_are_checked() {
        let t = |d| Utc.with_ymd_and_hms(2026, 1, d, 0, 0, 0).unwrap();
        assert!(UsageQuery::new(t(2), t(1), GroupBy::Day).is_err());
        assert!(UsageQuery::new(t(1), t(1), GroupBy::Day).is_err());
        assert!(UsageQuery::new(t(1), t(2), GroupBy::Day).is_ok());
        let long = UsageQuery::new(t(1), t(1) + chrono::Duration::days(401), GroupBy::Pool);
        assert!(matches!(long, Err(UsageError::TooLong { .. })));
        assert_eq!(GroupBy::parse("pool"), Ok(GroupBy::Pool));
        assert_eq!(GroupBy::parse("team").unwrap_err().field(), "groupBy");
    }

    #[test]
    fn months() {
        let t = Utc.with_ymd_and_hms(2026, 12, 6, 13, 5, 0).unwrap();
        assert_eq!(
            month_start(t),
            Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap()
        );
        assert_eq!(
            next_month_start(t),
            Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap()
        );
    }
}
