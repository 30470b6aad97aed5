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

use crate::domain::{Email, OperationState, OperationTarget, OperationType, Role, TeamId};
use crate::model::{self, Operation, OperationError, OperationMetadata, Progress, Step};
use crate::ops::events::{Events, OpEvent};
use crate::ops::steps::{StepRecord, StepState};
use crate::store::operations::{self as ops_store, OperationFilter, OperationRow};
use crate::store::{Db, Row, StoreError};

use super::access::{self, Caller};
use super::{Error, Page, PageRequest, Result};

pub use kept::{get_json, render_format};

mod kept;

pub const MAX_WAIT: Duration = Duration::from_secs(60);

pub fn render(row: &OperationRow) -> Result<Operation> {
    let stored = Row {
        table: "operations",
        id: &row.id,
    };
    let steps: Vec<StepRecord> = stored
        .json("steps", row.steps.clone())
        .map_err(StoreError::from)?;
    let total = steps.len() as u32;
    let done = steps.iter().filter(|s| s.state == StepState::Done).count() as u32;
    let finished = row.end_time.is_some();
    let percent = if row.state == OperationState::Succeeded {
        100
    } else {
        (done * 100).checked_div(total).unwrap_or(0)
    };
    let ts = |t: Option<DateTime<Utc>>| t.map(model::timestamp);
    let op_type: OperationType = stored
        .state("op_type", &row.op_type)
        .map_err(StoreError::from)?;
    Ok(Operation {
        name: format!("operations/{}", row.id),
        done: finished,
        error: (row.error.clone())
            .map(super::operation_response::typed_error)
            .and_then(|e| serde_json::from_value::<OperationError>(e).ok()),
        response: (row.response.clone()).map(|r| super::operation_response::typed(op_type, r)),
        metadata: OperationMetadata {
            op_type,
            target: row.target.clone(),
            team: row.team_id.as_ref().map(|t| format!("teams/{t}")),
            created_by: row.created_by.clone(),
            request_id: row.request_id.clone(),
            state: row.state,
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
    })
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
pub(super) async fn visible(
    db: &Db,
    caller: &Caller,
    id: &str,
    need: Role,
    action: &str,
) -> Result<OperationRow> {
    let uuid = parse_id(id)?;
    // One statement: the row and the caller's role in its team.
    let (row, stored_role) = crate::store::reads::operation(db, uuid, caller.email.as_str())
        .await?
        .ok_or_else(|| not_found(id))?;
    let seen = Seen {
        team_id: row.team_id.as_deref(),
        created_by: &row.created_by,
        stored_role,
    };
    seen.allow(caller, id, need, action)?;
    Ok(row)
}

/// What visibility is decided on: the operation's team and creator, and the caller's
/// role in that team as stored.
struct Seen<'a> {
    team_id: Option<&'a str>,
    created_by: &'a str,
    stored_role: Option<String>,
}

impl Seen<'_> {
    /// Members of the team with `need` or more see it; an operation without a team is
    /// seen by its creator and admins; anyone else gets 404 (or 403 for too low a role).
    fn allow(self, caller: &Caller, id: &str, need: Role, action: &str) -> Result<()> {
        match self.team_id {
            Some(team) => {
                let role =
                    access::role_from(caller, self.stored_role).ok_or_else(|| not_found(id))?;
                access::check(role, need, action, team)
            }
            None if caller.admin || self.created_by == caller.email.as_str() => Ok(()),
            None => Err(not_found(id)),
        }
    }
}

pub async fn get(db: &Db, caller: &Caller, id: &str) -> Result<Operation> {
    render(&visible(db, caller, id, Role::Viewer, "reading operations").await?)
}

fn filter_error(why: String) -> Error {
    Error::invalid(
        "INVALID_FILTER",
        format!(
            "filter: {why}; use terms like done=false AND type=UP_CLUSTER AND target=\"projects/p/zones/z/clusters/c\""
        ),
    )
}

/// One `key=value` term into `f`; every value is parsed into its type first.
fn filter_term(f: &mut OperationFilter, key: &str, v: String) -> Result<()> {
    let named = |e: crate::domain::NameError| filter_error(format!("{key}: {e}"));
    match key {
        "done" => {
            f.done = Some(match v.as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(filter_error(format!(
                        "done must be true or false, not {v:?}"
                    )));
                }
            })
        }
        "state" => {
            f.state = Some(
                OperationState::parse(&v)
                    .map_err(|e| filter_error(format!("state {v:?} is not one of {}", e.known)))?,
            )
        }
        "type" => {
            let t = OperationType::parse(&v)
                .map_err(|e| filter_error(format!("type {v:?} is not one of {}", e.known)))?;
            f.op_type = Some(t.as_str().to_owned())
        }
        "target" => f.target = Some(OperationTarget::parse(&v).map_err(named)?.to_string()),
        "team" => {
            let t = TeamId::parse(v.strip_prefix("teams/").unwrap_or(&v)).map_err(named)?;
            f.team = Some(t.to_string())
        }
        "createdBy" => f.created_by = Some(Email::parse(&v).map_err(named)?.to_string()),
        other => {
            return Err(filter_error(format!(
                "unknown field {other:?} (known: done, state, type, target, team, createdBy)"
            )));
        }
    }
    Ok(())
}

/// Parse an AIP-160 style filter: `key=value` terms joined by `AND`.
pub fn parse_filter(filter: &str) -> Result<OperationFilter> {
    let mut f = OperationFilter::default();
    for t in super::filter::terms(filter, filter_error)? {
        if t.op != super::filter::Op::Eq {
            return Err(filter_error(format!(
                "{}{} is not key=value (operations are filtered by equality)",
                t.key,
                t.op.as_str()
            )));
        }
        filter_term(&mut f, t.key, t.value)?;
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
    f.teams = None;
    f.member = access::visible_member(caller);
    let scope = format!("operations?{filter}");
    let after: Option<(DateTime<Utc>, Uuid)> = page.after(&scope)?;
    let rows = ops_store::list(db, &f, after, page.limit()? + 1).await?;
    let page = page.page(&scope, rows, |r| (r.create_time, r.id), |r| r)?;
    Ok(Page {
        items: page.items.iter().map(render).collect::<Result<_>>()?,
        next_page_token: page.next_page_token,
    })
}

/// Request cancellation; a repeat under the same request id answers as the first did.
pub async fn cancel(
    db: &Db,
    caller: &Caller,
    id: &str,
    idem: Option<&crate::ops::queue::Idempotency>,
) -> Result<Operation> {
    let who = caller.email.as_str();
    super::replies::replay_or_go!(db, who, idem);
    let row = visible(db, caller, id, Role::Viewer, "reading operations").await?;
    if row.created_by != caller.email.as_str()
        && let Some(team) = &row.team_id
    {
        access::require(db, caller, team, Role::Member, "cancelling operations").await?;
    }
    let row = crate::ops::queue::cancel(db, row.id)
        .await?
        .ok_or_else(|| not_found(id))?;
    tracing::info!(operation.id = %row.id, by = %caller.email.log_id(), state = %row.state, "cancel requested");
    super::replies::remember(db, who, idem, render(&row)?).await
}

/// Parse `30s`, `1.5s`, `500ms` or a bare number of seconds (default 30 s); more than
/// [`MAX_WAIT`], negative or non-finite values are INVALID_TIMEOUT naming the limit.
pub fn parse_timeout(s: Option<&str>) -> Result<Duration> {
    let Some(s) = s.filter(|s| !s.trim().is_empty()) else {
        return Ok(Duration::from_secs(30));
    };
    crate::domain::duration::parse(s, MAX_WAIT).map_err(|e| {
        Error::invalid(
            "INVALID_TIMEOUT",
            format!("timeout {e}; send a duration like 30s or 500ms, at most 60s"),
        )
        .with("limit", "60s")
    })
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
        return render(&row);
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
                let closed = matches!(ev, Err(tokio::sync::broadcast::error::RecvError::Closed));
                let reread = match ev {
                    Ok(OpEvent::Changed(state)) => OperationState::parse(&state).is_ok_and(OperationState::is_final),
                    Ok(OpEvent::Resync) | Err(_) => true,
                };
                if reread {
                    row = ops_store::get(db, row.id).await?.ok_or_else(|| not_found(id))?;
                }
                if closed {
                    // This process is shutting down: answer now; the caller polls again.
                    break;
                }
            }
            _ = tokio::time::sleep_until(until) => {
                row = ops_store::get(db, row.id).await?.ok_or_else(|| not_found(id))?;
                break;
            }
        }
    }
    render(&row)
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
    render(&row)?;
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
                            tracing::warn!(error = %format_args!("{e:#}"), "watch re-read failed");
                            return None;
                        }
                    }
                }
            };
            // A corrupt row ends the stream (the conversion logged it).
            let op = render(&row).ok()?;
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
        let f = parse_filter("done=false AND type=UP_CLUSTER AND target=\"projects/p/zones/z/clusters/c\" AND team=teams/ml-team AND createdBy=\"A@x.io\"").unwrap();
        assert_eq!(f.done, Some(false));
        assert_eq!(f.op_type.as_deref(), Some("UP_CLUSTER"));
        assert_eq!(f.target.as_deref(), Some("projects/p/zones/z/clusters/c"));
        assert_eq!(f.team.as_deref(), Some("ml-team"));
        assert_eq!(f.created_by.as_deref(), Some("a@x.io"));
        assert_eq!(
            parse_filter("state=RUNNING").unwrap().state,
            Some(OperationState::Running)
        );
        for bad in [
            "state=BOGUS",
            "done=maybe",
            "color=red",
            "nonsense",
            "type=BOGUS",
            "team=a\0b",
            "target=\"a\0b\"",
            "createdBy=nobody",
            "team=acme OR team=other",
        ] {
            assert_eq!(
                parse_filter(bad).unwrap_err().reason,
                "INVALID_FILTER",
                "{bad}"
            );
        }
        assert!(parse_filter("").unwrap().done.is_none());
    }

    #[test]
    fn every_operation_type_is_filterable() {
        for t in OperationType::ALL {
            let f = parse_filter(&format!("type={t}")).unwrap();
            assert_eq!(f.op_type.as_deref(), Some(t.as_str()));
        }
        let e = parse_filter("type=BOGUS").unwrap_err();
        for t in OperationType::ALL {
            assert!(e.message.contains(t.as_str()), "{}", e.message);
        }
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
        assert_eq!(parse_timeout(Some("60s")).unwrap(), MAX_WAIT);
        for bad in ["600s", "1e20", "NaN", "inf", "-1s"] {
            assert_eq!(
                parse_timeout(Some(bad)).unwrap_err().reason,
                "INVALID_TIMEOUT",
                "{bad}"
            );
        }
        assert_eq!(parse_timeout(Some("2")).unwrap(), Duration::from_secs(2));
        assert!(parse_timeout(Some("-1s")).is_err());
        assert!(parse_timeout(Some("soon")).is_err());
    }
}
