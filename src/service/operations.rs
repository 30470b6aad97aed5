//! Reading, listing, cancelling, waiting for and watching operations.
//!
//! Invariants: an operation is visible only to members of its team (others get 404);
//! `wait` and `watch` hold no database connection between reads: they sleep on the
//! in-process event hub and re-read only when their operation changed.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::Stream;
use uuid::Uuid;

use crate::domain::Role;
use crate::model::{self, Operation, OperationError, OperationMetadata, Progress, Step};
use crate::ops::events::{Events, OpEvent};
use crate::ops::steps::{StepRecord, StepState};
use crate::store::Db;
use crate::store::operations::{self as ops_store, OperationFilter, OperationRow};

use super::access::{self, Caller};
use super::{Error, Page, PageRequest, Result};

pub const STATES: [&str; 6] = [
    "QUEUED",
    "RUNNING",
    "SUCCEEDED",
    "FAILED",
    "CANCELLING",
    "CANCELLED",
];
pub const MAX_WAIT: Duration = Duration::from_secs(60);

pub fn render(row: &OperationRow) -> Operation {
    let steps: Vec<StepRecord> = serde_json::from_value(row.steps.clone()).unwrap_or_default();
    let total = steps.len() as u32;
    let done = steps.iter().filter(|s| s.state == StepState::Done).count() as u32;
    let finished = row.end_time.is_some();
    let percent = if row.state == "SUCCEEDED" {
        100
    } else {
        (done * 100).checked_div(total).unwrap_or(0)
    };
    let ts = |t: Option<DateTime<Utc>>| t.map(model::timestamp);
    Operation {
        name: format!("operations/{}", row.id),
        done: finished,
        error: row
            .error
            .clone()
            .and_then(|e| serde_json::from_value::<OperationError>(e).ok()),
        response: row.response.clone(),
        metadata: OperationMetadata {
            op_type: row.op_type.clone(),
            target: row.target.clone(),
            team: row.team_id.as_ref().map(|t| format!("teams/{t}")),
            created_by: row.created_by.clone(),
            request_id: row.request_id.clone(),
            state: row.state.clone(),
            create_time: model::timestamp(row.create_time),
            start_time: ts(row.start_time),
            update_time: model::timestamp(row.update_time),
            end_time: ts(row.end_time),
            cancel_requested: row.cancel_requested,
            attempt: row.attempt,
            progress: Progress {
                percent,
                steps_done: done,
                steps_total: total,
                current_step: steps
                    .iter()
                    .find(|s| s.state == StepState::Running)
                    .map(|s| s.id.clone()),
                steps: steps
                    .into_iter()
                    .map(|s| Step {
                        id: s.id,
                        description: s.description,
                        state: s.state,
                        start_time: ts(s.start_time),
                        end_time: ts(s.end_time),
                        attempts: s.attempts,
                        message: s.message,
                    })
                    .collect(),
            },
            plan: row.plan.clone(),
        },
    }
}

fn not_found(id: &str) -> Error {
    Error::not_found(
        "OPERATION_NOT_FOUND",
        format!("operation operations/{id} not found"),
    )
    .with("operation", id)
}

pub fn parse_id(id: &str) -> Result<Uuid> {
    Uuid::parse_str(id).map_err(|_| not_found(id))
}

/// The row, if the caller may see it; `need` is the role required beyond seeing it.
async fn visible(
    db: &Db,
    caller: &Caller,
    id: &str,
    need: Role,
    action: &str,
) -> Result<OperationRow> {
    let uuid = parse_id(id)?;
    let row = ops_store::get(db, uuid)
        .await?
        .ok_or_else(|| not_found(id))?;
    match &row.team_id {
        Some(team) => {
            let role = access::team_role(db, caller, team)
                .await?
                .ok_or_else(|| not_found(id))?;
            access::check(role, need, action, team)?;
        }
        None if caller.admin || row.created_by == caller.email.as_str() => {}
        None => return Err(not_found(id)),
    }
    Ok(row)
}

pub async fn get(db: &Db, caller: &Caller, id: &str) -> Result<Operation> {
    Ok(render(
        &visible(db, caller, id, Role::Viewer, "reading operations").await?,
    ))
}

/// Parse an AIP-160 style filter: `key=value` terms joined by `AND`.
pub fn parse_filter(filter: &str) -> Result<OperationFilter> {
    let mut f = OperationFilter::default();
    let bad = |why: String| {
        Error::invalid(
            "INVALID_FILTER",
            format!(
                "filter: {why}; use terms like done=false AND type=UP_CLUSTER AND target=\"projects/p/zones/z/clusters/c\""
            ),
        )
    };
    for term in filter
        .split(" AND ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        let (k, v) = term
            .split_once('=')
            .ok_or_else(|| bad(format!("{term:?} is not key=value")))?;
        let k = k.trim();
        let v = v.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v)
            .to_owned();
        match k {
            "done" => {
                f.done = Some(match v.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad(format!("done must be true or false, not {v:?}"))),
                })
            }
            "state" if STATES.contains(&v.as_str()) => f.state = Some(v),
            "state" => {
                return Err(bad(format!(
                    "state {v:?} is not one of {}",
                    STATES.join(", ")
                )));
            }
            "type" => f.op_type = Some(v),
            "target" => f.target = Some(v),
            "team" => f.team = Some(v.strip_prefix("teams/").unwrap_or(&v).to_owned()),
            "createdBy" => f.created_by = Some(v.to_ascii_lowercase()),
            other => {
                return Err(bad(format!(
                    "unknown field {other:?} (known: done, state, type, target, team, createdBy)"
                )));
            }
        }
    }
    Ok(f)
}

pub async fn list(
    db: &Db,
    caller: &Caller,
    filter: &str,
    page: &PageRequest,
) -> Result<Page<Operation>> {
    let mut f = parse_filter(filter)?;
    f.teams = access::visible_teams(db, caller).await?;
    let scope = format!("operations?{filter}");
    let after: Option<(DateTime<Utc>, Uuid)> = page.after(&scope)?;
    let rows = ops_store::list(db, &f, after, page.limit()? + 1).await?;
    page.page(&scope, rows, |r| (r.create_time, r.id), |r| render(&r))
}

pub async fn cancel(db: &Db, caller: &Caller, id: &str) -> Result<Operation> {
    let row = visible(db, caller, id, Role::Viewer, "reading operations").await?;
    if row.created_by != caller.email.as_str()
        && let Some(team) = &row.team_id
    {
        access::require(db, caller, team, Role::Member, "cancelling operations").await?;
    }
    let row = crate::ops::queue::cancel(db, row.id)
        .await?
        .ok_or_else(|| not_found(id))?;
    tracing::info!(operation.id = %row.id, by = %caller.email, state = %row.state, "cancel requested");
    Ok(render(&row))
}

/// Parse `30s`, `1.5s`, `500ms` or a bare number of seconds; capped at 60 s.
pub fn parse_timeout(s: Option<&str>) -> Result<Duration> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(Duration::from_secs(30));
    };
    let bad = || {
        Error::invalid(
            "INVALID_TIMEOUT",
            format!("timeout {s:?} is not a duration like 30s or 500ms (at most 60s)"),
        )
    };
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    if !v.is_finite() || v < 0.0 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(v * scale).min(MAX_WAIT))
}

/// Return when the operation is done or at `timeout`, whichever first.
pub async fn wait(
    db: &Db,
    events: &Arc<Events>,
    caller: &Caller,
    id: &str,
    timeout: Duration,
) -> Result<Operation> {
    let row = visible(db, caller, id, Role::Viewer, "reading operations").await?;
    if row.end_time.is_some() {
        return Ok(render(&row));
    }
    let mut sub = events.subscribe(row.id);
    // Re-read after subscribing: a change between the first read and now is not lost.
    let mut row = ops_store::get(db, row.id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let until = tokio::time::Instant::now() + timeout;
    while row.end_time.is_none() {
        tokio::select! {
            ev = sub.rx.recv() => {
                let reread = match ev {
                    Ok(OpEvent::Changed(state)) => matches!(state.as_str(), "SUCCEEDED" | "FAILED" | "CANCELLED"),
                    Ok(OpEvent::Resync) | Err(_) => true,
                };
                if reread {
                    row = ops_store::get(db, row.id).await?.ok_or_else(|| not_found(id))?;
                }
            }
            _ = tokio::time::sleep_until(until) => {
                row = ops_store::get(db, row.id).await?.ok_or_else(|| not_found(id))?;
                break;
            }
        }
    }
    Ok(render(&row))
}

/// One event of a `:watch` stream.
pub enum WatchEvent {
    Progress(Operation),
    Done(Operation),
}

/// A stream of `progress` events, one per change, then `done` with the final operation.
pub async fn watch(
    db: Db,
    events: Arc<Events>,
    caller: &Caller,
    id: &str,
) -> Result<impl Stream<Item = WatchEvent> + Send + 'static> {
    let row = visible(&db, caller, id, Role::Viewer, "reading operations").await?;
    let sub = events.subscribe(row.id);
    let row = ops_store::get(&db, row.id)
        .await?
        .ok_or_else(|| not_found(id))?;
    struct St {
        db: Db,
        sub: crate::ops::events::Subscription,
        id: Uuid,
        first: Option<OperationRow>,
        last: Option<serde_json::Value>,
        finished: bool,
    }
    let st = St {
        db,
        sub,
        id: row.id,
        first: Some(row),
        last: None,
        finished: false,
    };
    Ok(futures::stream::unfold(st, |mut st| async move {
        if st.finished {
            return None;
        }
        loop {
            let row = match st.first.take() {
                Some(r) => r,
                None => {
                    match st.sub.rx.recv().await {
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
                    }
                    match ops_store::get(&st.db, st.id).await {
                        Ok(Some(r)) => r,
                        Ok(None) => return None,
                        Err(e) => {
                            tracing::warn!(error = %e, "watch re-read failed");
                            return None;
                        }
                    }
                }
            };
            let op = render(&row);
            if op.done {
                st.finished = true;
                return Some((WatchEvent::Done(op), st));
            }
            let json = serde_json::to_value(&op).ok();
            if json != st.last {
                st.last = json;
                return Some((WatchEvent::Progress(op), st));
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        let f = parse_filter("done=false AND type=UP_CLUSTER AND target=\"projects/p/zones/z/clusters/c\" AND team=teams/ml AND createdBy=\"A@x.io\"").unwrap();
        assert_eq!(f.done, Some(false));
        assert_eq!(f.op_type.as_deref(), Some("UP_CLUSTER"));
        assert_eq!(f.target.as_deref(), Some("projects/p/zones/z/clusters/c"));
        assert_eq!(f.team.as_deref(), Some("ml"));
        assert_eq!(f.created_by.as_deref(), Some("a@x.io"));
        assert_eq!(
            parse_filter("state=RUNNING").unwrap().state.as_deref(),
            Some("RUNNING")
        );
        for bad in ["state=BOGUS", "done=maybe", "color=red", "nonsense"] {
            assert_eq!(
                parse_filter(bad).unwrap_err().reason,
                "INVALID_FILTER",
                "{bad}"
            );
        }
        assert!(parse_filter("").unwrap().done.is_none());
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout(None).unwrap(), Duration::from_secs(30));
        assert_eq!(
            parse_timeout(Some("500ms")).unwrap(),
            Duration::from_millis(500)
        );
        assert_eq!(
            parse_timeout(Some("1.5s")).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(parse_timeout(Some("600s")).unwrap(), MAX_WAIT);
        assert_eq!(parse_timeout(Some("2")).unwrap(), Duration::from_secs(2));
        assert!(parse_timeout(Some("-1s")).is_err());
        assert!(parse_timeout(Some("soon")).is_err());
    }
}
