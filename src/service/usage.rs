//! `GET /v1/teams/{team}/usage`: what a team's nodes ran, grouped, with busy and idle
//! accelerator hours and the cost at the prices in force when they ran; the spans no
//! one could measure are listed apart (`gaps`), never counted as zero.
//!
//! Invariant: every member (VIEWER and up) reads; the range and grouping are checked
//! ([`UsageQuery`]) before the database is asked; unset times default on the cloud's
//! clock (the start of its month, and now).

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::cloud::Cloud;
use crate::domain::usage::{self, GroupBy, UsageError, UsageQuery};
use crate::domain::{Role, TeamId};
use crate::store::{self, Db};

use super::access::{self, Caller};
use super::{Error, Result};

/// The question as the request put it (all optional).
#[derive(Debug, Clone, Default)]
pub struct UsageAsk {
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub group_by: Option<String>,
}

/// One group's usage over the range.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageRow {
    /// groupBy=cluster or pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub cluster: Option<String>,
    /// groupBy=pool: the GKE node pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub pool: Option<String>,
    /// groupBy=accelerator: `gpu-l4`, `tpu-v5litepod`, or `none` (CPU nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub accelerator: Option<String>,
    /// groupBy=provisioning: ON_DEMAND, SPOT, RESERVATION, FLEX_START, QUEUED.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub provisioning: Option<String>,
    /// groupBy=member: who added the pool (else who created the cluster).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub member: Option<String>,
    /// groupBy=day: the UTC day, `2026-12-06`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub day: Option<String>,
    pub node_hours: f64,
    pub accelerator_hours: f64,
    /// Accelerator hours requested by pods.
    pub busy_accelerator_hours: f64,
    /// Accelerator hours no pod requested.
    pub idle_accelerator_hours: f64,
    /// At the price per node hour in force when each node ran.
    pub cost_usd: f64,
}

/// A span where a cluster could not be read: its usage there is unknown.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageGap {
    pub cluster: String,
    pub start_time: DateTime<Utc>,
    /// Absent while the cluster is still unreadable.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub end_time: Option<DateTime<Utc>>,
    pub reason: String,
}

/// `GET /v1/teams/{team}/usage`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub start_time: DateTime<Utc>,
    pub end_time: DateTime<Utc>,
    pub group_by: GroupBy,
    pub rows: Vec<UsageRow>,
    /// Every row summed.
    pub total: UsageRow,
    pub gaps: Vec<UsageGap>,
}

/// Team `team`'s usage.
pub async fn report(
    db: &Db,
    cloud: &Cloud,
    caller: &Caller,
    team: &TeamId,
    ask: &UsageAsk,
) -> Result<UsageReport> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading usage").await?;
    let q = question(cloud, ask).await?;
    let sums = store::usage::sums(db, team, &q).await?;
    let gaps = store::usage::gaps(db, team, q.start, q.end).await?;
    let rows: Vec<UsageRow> = sums.into_iter().map(row).collect();
    Ok(UsageReport {
        start_time: q.start,
        end_time: q.end,
        group_by: q.group_by,
        total: total(&rows),
        rows,
        gaps: gaps
            .into_iter()
            .map(|g| UsageGap {
                cluster: g.cluster_name,
                start_time: g.start_time,
                end_time: g.end_time,
                reason: g.reason,
            })
            .collect(),
    })
}

/// The checked question; times default on the cloud's clock.
async fn question(cloud: &Cloud, ask: &UsageAsk) -> Result<UsageQuery> {
    let refuse = |e: UsageError| {
        Error::invalid("INVALID_USAGE_QUERY", e.to_string()).with("field", e.field())
    };
    let group_by = match ask.group_by.as_deref() {
        None | Some("") => GroupBy::Cluster,
        Some(g) => GroupBy::parse(g).map_err(refuse)?,
    };
    let time = |field: &'static str, v: &Option<String>| -> Result<Option<DateTime<Utc>>> {
        v.as_deref()
            .filter(|s| !s.is_empty())
            .map(|s| {
                DateTime::parse_from_rfc3339(s)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| {
                        Error::invalid(
                            "INVALID_USAGE_QUERY",
                            format!(
                                "{field} {s:?} is not an RFC 3339 time like 2026-12-01T00:00:00Z"
                            ),
                        )
                        .with("field", field)
                    })
            })
            .transpose()
    };
    let start = time("startTime", &ask.start_time)?;
    let end = time("endTime", &ask.end_time)?;
    let (start, end) = match (start, end) {
        (Some(s), Some(e)) => (s, e),
        _ => {
            let now = cloud.clock.now().await.map_err(|e| {
                tracing::warn!(error = %e, "cloud clock unreadable");
                Error::unavailable("CLOUD_UNAVAILABLE", e.to_string(), 5)
            })?;
            let end = end.unwrap_or(now);
            (start.unwrap_or_else(|| usage::month_start(end)), end)
        }
    };
    UsageQuery::new(start, end, group_by).map_err(refuse)
}

fn hours(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn row(s: store::usage::UsageSum) -> UsageRow {
    UsageRow {
        cluster: s.cluster,
        pool: s.pool,
        accelerator: s.accelerator,
        provisioning: s.provisioning,
        member: s.member,
        day: s.day.map(|d| d.to_string()),
        node_hours: hours(s.node_hours),
        accelerator_hours: hours(s.accelerator_hours),
        busy_accelerator_hours: hours(s.busy_accelerator_hours),
        idle_accelerator_hours: hours((s.accelerator_hours - s.busy_accelerator_hours).max(0.0)),
        cost_usd: crate::domain::pricing::cents(s.cost_usd),
    }
}

fn total(rows: &[UsageRow]) -> UsageRow {
    let sum = |f: fn(&UsageRow) -> f64| rows.iter().map(f).sum::<f64>();
    UsageRow {
        cluster: None,
        pool: None,
        accelerator: None,
        provisioning: None,
        member: None,
        day: None,
        node_hours: hours(sum(|r| r.node_hours)),
        accelerator_hours: hours(sum(|r| r.accelerator_hours)),
        busy_accelerator_hours: hours(sum(|r| r.busy_accelerator_hours)),
        idle_accelerator_hours: hours(sum(|r| r.idle_accelerator_hours)),
        cost_usd: crate::domain::pricing::cents(sum(|r| r.cost_usd)),
    }
}

/// The report as CSV (RFC 4180): a header, then one line per row.
pub fn csv(r: &UsageReport) -> String {
    let mut out = String::from(
        "cluster,pool,accelerator,provisioning,member,day,nodeHours,acceleratorHours,\
         busyAcceleratorHours,idleAcceleratorHours,costUsd\n",
    );
    let field = |v: &Option<String>| {
        let v = v.as_deref().unwrap_or("");
        if v.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_owned()
        }
    };
    for x in &r.rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            field(&x.cluster),
            field(&x.pool),
            field(&x.accelerator),
            field(&x.provisioning),
            field(&x.member),
            field(&x.day),
            x.node_hours,
            x.accelerator_hours,
            x.busy_accelerator_hours,
            x.idle_accelerator_hours,
            x.cost_usd
        ));
    }
    out
}
