//! The audit trail's SQL (`events`, migration 0009).
//!
//! Invariants:
//! - Events are only ever inserted (the database refuses an UPDATE) and removed only by
//!   retention ([`purge_before`]); an event is written in the transaction of the change
//!   it records when there is one (the caller passes its executor), so a change and its
//!   event commit or vanish together.
//! - Lists are keyset pages on `(time, id)`, newest first, through [`keyset`]: a team's
//!   read `events_by_team`, every team's `events_by_time`.
//! - Nothing here logs: events hold emails and paths, which stay in the database.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{AssertSqlSafe, PgExecutor};
use uuid::Uuid;

use super::keyset::{self, Teams};
use super::{StoreError, keyed};
use crate::domain::states::EventType;

/// An event to append (borrowed from the change it records).
#[derive(Debug, Clone)]
pub struct NewEvent<'a> {
    /// The team it belongs to (`None`: seen by service admins only).
    pub team_id: Option<&'a str>,
    /// Who did it: an email, `anonymous`, or `kineticd` for its own actions.
    pub actor: &'a str,
    pub event_type: EventType,
    /// What it was done to: a resource name (`teams/t/members/a@x`, `operations/{id}`).
    pub target: &'a str,
    /// The `x-request-id` of the request that did it, if a request did.
    pub request_id: Option<&'a str>,
    pub details: Value,
}

/// Append one event.
pub async fn append(ex: impl PgExecutor<'_>, e: &NewEvent<'_>) -> Result<(), StoreError> {
    append_owned_by(ex, e, TeamOf::Given).await
}

/// Where a request's team is found when the event does not name it: looked up in the
/// insert itself (no round trip of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamOf<'a> {
    /// The event's `team_id` as given.
    Given,
    /// The team that holds this GCP project.
    Project(&'a str),
    /// The team of this operation.
    Operation(Uuid),
}

/// [`append`], with the team looked up as `team` says when the event names none.
pub async fn append_owned_by(
    ex: impl PgExecutor<'_>,
    e: &NewEvent<'_>,
    team: TeamOf<'_>,
) -> Result<(), StoreError> {
    let (project, operation) = match team {
        TeamOf::Given => (None, None),
        TeamOf::Project(p) => (Some(p), None),
        TeamOf::Operation(id) => (None, Some(id)),
    };
    let owner = match team {
        TeamOf::Given => "$1",
        TeamOf::Project(_) => {
            "COALESCE($1, (SELECT team_id FROM team_projects WHERE project_id = $7))"
        }
        TeamOf::Operation(_) => "COALESCE($1, (SELECT team_id FROM operations WHERE id = $8))",
    };
    let sql = format!(
        "INSERT INTO events (team_id, actor, type, target, request_id, details) \
         VALUES ({owner}, $2, $3, $4, $5, $6)"
    );
    keyed::execute(
        ex,
        AssertSqlSafe(sql),
        (
            e.team_id,
            e.actor,
            e.event_type.as_str(),
            e.target,
            e.request_id,
            &e.details,
            project,
            operation,
        ),
    )
    .await?;
    Ok(())
}

/// A stored event.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: Uuid,
    pub team_id: Option<String>,
    pub time: DateTime<Utc>,
    pub actor: String,
    /// Decoded from its TEXT column; a value that names no type fails the read.
    #[sqlx(rename = "type", try_from = "String")]
    pub event_type: EventType,
    pub target: String,
    pub request_id: Option<String>,
    pub details: Value,
}

const COLUMNS: &str = "id, team_id, time, actor, type, target, request_id, details";

/// The filters of an event list; `None` means any.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct EventFilter {
    /// Exactly this team's events (`None`: every team's and those of none).
    pub team: Option<String>,
    pub actor: Option<String>,
    pub event_type: Option<EventType>,
    pub target: Option<String>,
    /// `time >= t`, `time > t`, `time <= t`, `time < t` (each the tightest asked for).
    pub time_from: Option<DateTime<Utc>>,
    pub time_after: Option<DateTime<Utc>>,
    pub time_to: Option<DateTime<Utc>>,
    pub time_before: Option<DateTime<Utc>>,
}

/// Newest first; `after` is the (time, id) of the previous page's last row.
pub async fn list(
    ex: impl PgExecutor<'_>,
    f: &EventFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<EventRow>, StoreError> {
    let conds = keyset::set_conditions([
        (f.actor.is_some(), "actor = $2"),
        (f.event_type.is_some(), "type = $3"),
        (f.target.is_some(), "target = $4"),
        (f.time_from.is_some(), "time >= $5"),
        (f.time_after.is_some(), "time > $6"),
        (f.time_to.is_some(), "time <= $7"),
        (f.time_before.is_some(), "time < $8"),
        (after.is_some(), "(time, id) < ($9, $10)"),
    ]);
    let teams = Teams {
        team: f.team.as_ref().map(|_| "$1"),
        ..Teams::default()
    };
    let sql = keyset::page(
        COLUMNS,
        "events",
        &conds,
        "time DESC, id DESC",
        "$11",
        teams,
    );
    keyed::all(
        ex,
        AssertSqlSafe(sql),
        (
            f.team.as_deref(),
            f.actor.as_deref(),
            f.event_type.map(EventType::as_str),
            f.target.as_deref(),
            f.time_from,
            f.time_after,
            f.time_to,
            f.time_before,
            after.map(|a| a.0),
            after.map(|a| a.1),
            limit,
        ),
    )
    .await
}

/// Delete events older than `cutoff` (retention); returns how many.
pub async fn purge_before(
    ex: impl PgExecutor<'_>,
    cutoff: DateTime<Utc>,
) -> Result<u64, StoreError> {
    keyed::execute(ex, "DELETE FROM events WHERE time < $1", (cutoff,)).await
}
