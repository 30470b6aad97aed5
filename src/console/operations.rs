//! The operation page: metadata, the plan's DAG as a timeline (steps as bars over
//! time), the error with the failed step and the cloud's reason, a cancel button, and
//! approve / reject for an operation waiting for approval.
//! The live part is also served alone (`.../live`) and refreshed by the page's script on
//! every event of `.../events`, a server-sent stream from the service's watch.
//!
//! Invariant: reads and cancel go through `service::operations`, so visibility (404 for
//! outsiders) and the MEMBER rule for cancelling are the API's.

use std::collections::HashMap;
use std::convert::Infallible;

use askama::Template;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, Utc};
use futures::StreamExt;

use crate::model::Operation;
use crate::service;
use crate::service::operations::WatchEvent;
use crate::service::provision::approval::Decision;

use super::ConsoleState;
use super::error::PageError;
use super::form::Posted;
use super::identity::{Viewer, Visit};
use super::view::{self, Chrome};

pub struct StepView {
    pub id: String,
    pub description: String,
    pub state: String,
    pub state_class: String,
    pub attempts: u32,
    pub message: String,
    pub after: String,
    pub action: String,
    pub started: String,
    pub duration: String,
    /// Whether the step has started (no bar before it does).
    pub has_bar: bool,
    /// Bar position and width in percent of the timeline.
    pub bar_x: String,
    pub bar_w: String,
}

pub struct LiveView {
    pub id: String,
    pub state: String,
    pub state_class: String,
    pub done: bool,
    pub percent: u32,
    pub steps_done: u32,
    pub steps_total: u32,
    pub current_step: String,
    pub span: String,
    pub steps: Vec<StepView>,
    pub error: Option<ErrorView>,
    pub cancel_requested: bool,
}

pub struct ErrorView {
    pub status: String,
    pub reason: String,
    pub message: String,
    pub failed_step: String,
    pub step_message: String,
}

fn time(t: &Option<String>) -> Option<DateTime<Utc>> {
    t.as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn seconds(d: chrono::TimeDelta) -> String {
    let ms = d.num_milliseconds().max(0);
    if ms < 10_000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{} s", ms / 1000)
    }
}

/// The plan's actions by id: (dependencies, "CREATE GKE_CLUSTER").
fn plan_actions(op: &Operation) -> HashMap<String, (String, String)> {
    let mut out = HashMap::new();
    let actions = op
        .metadata
        .plan
        .as_ref()
        .and_then(|p| p.get("actions"))
        .and_then(|a| a.as_array());
    for a in actions.into_iter().flatten() {
        let Some(id) = a.get("id").and_then(|v| v.as_str()) else {
            continue;
        };
        let deps: Vec<&str> = a
            .get("dependsOn")
            .and_then(|d| d.as_array())
            .map(|d| d.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let kind = a.get("action").and_then(|v| v.as_str()).unwrap_or("");
        let ty = a.get("type").and_then(|v| v.as_str()).unwrap_or("");
        out.insert(
            id.to_owned(),
            (deps.join(", "), format!("{kind} {ty}").trim().to_owned()),
        );
    }
    out
}

pub fn live_view(op: &Operation, now: DateTime<Utc>) -> LiveView {
    let m = &op.metadata;
    let p = &m.progress;
    let starts: Vec<DateTime<Utc>> = p.steps.iter().filter_map(|s| time(&s.start_time)).collect();
    let t0 = time(&m.start_time)
        .into_iter()
        .chain(starts.iter().copied())
        .min()
        .or_else(|| time(&Some(m.create_time.clone())))
        .unwrap_or(now);
    let ends = p
        .steps
        .iter()
        .filter_map(|s| time(&s.end_time))
        .chain(time(&m.end_time));
    let t1 = if op.done {
        ends.max().unwrap_or(now)
    } else {
        now
    };
    let t1 = t1.max(t0 + chrono::TimeDelta::milliseconds(1));
    let span_ms = (t1 - t0).num_milliseconds().max(1) as f64;
    let pct =
        |t: DateTime<Utc>| ((t - t0).num_milliseconds() as f64 / span_ms * 100.0).clamp(0.0, 100.0);
    let plan = plan_actions(op);
    let steps = p
        .steps
        .iter()
        .map(|s| {
            let start = time(&s.start_time);
            let end = time(&s.end_time).or(start.map(|_| if op.done { t1 } else { now }));
            let bar = start.zip(end).map(|(a, b)| {
                let x = pct(a);
                let w = (pct(b) - x).max(0.6);
                (
                    format!("{x:.2}%"),
                    format!("{:.2}%", w.min(100.0 - x).max(0.6)),
                )
            });
            let (after, action) = plan.get(&s.id).cloned().unwrap_or_default();
            let (bar_x, bar_w) = bar.clone().unwrap_or_default();
            StepView {
                id: s.id.clone(),
                description: s.description.clone(),
                state: s.state.as_str().to_owned(),
                state_class: view::state_class(s.state.as_str()),
                attempts: s.attempts,
                message: s.message.clone().unwrap_or_default(),
                after,
                action,
                started: start.map_or_else(String::new, |a| format!("+{}", seconds(a - t0))),
                duration: start
                    .zip(end)
                    .map_or_else(String::new, |(a, b)| seconds(b - a)),
                has_bar: bar.is_some(),
                bar_x,
                bar_w,
            }
        })
        .collect::<Vec<_>>();
    let error = op.error.as_ref().map(|e| {
        let failed = p.steps.iter().find(|s| s.state.as_str() == "FAILED");
        ErrorView {
            status: e.status.clone(),
            reason: e
                .details
                .iter()
                .find_map(|d| d.get("reason").and_then(|r| r.as_str()))
                .unwrap_or("")
                .to_owned(),
            message: e.message.clone(),
            failed_step: failed.map_or_else(String::new, |s| s.id.clone()),
            step_message: failed.and_then(|s| s.message.clone()).unwrap_or_default(),
        }
    });
    LiveView {
        id: op
            .name
            .strip_prefix("operations/")
            .unwrap_or(&op.name)
            .to_owned(),
        state: m.state.as_str().to_owned(),
        state_class: view::state_class(m.state.as_str()),
        done: op.done,
        percent: p.percent,
        steps_done: p.steps_done,
        steps_total: p.steps_total,
        current_step: p.current_step.clone().unwrap_or_default(),
        span: seconds(t1 - t0),
        steps,
        error,
        cancel_requested: m.cancel_requested,
    }
}

#[derive(Template)]
#[template(path = "operation.html")]
struct OperationPage {
    chrome: Chrome,
    live: LiveView,
    op_type: String,
    target: String,
    target_href: Option<String>,
    team: String,
    created_by: String,
    request_id: String,
    created: String,
    started: String,
    ended: String,
    attempt: i32,
    warnings: Vec<String>,
}

#[derive(Template)]
#[template(path = "op_live_fragment.html")]
struct LiveFragment {
    live: LiveView,
}

/// The operation a page shows, read as its viewer (`.../operations/{id}`): 404 for
/// outsiders, as the API answers them.
pub struct ViewedOperation {
    viewer: Viewer,
    op: Operation,
}

impl FromRequestParts<ConsoleState> for ViewedOperation {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, s: &ConsoleState) -> Result<Self, Response> {
        let viewer = Viewer::from_request_parts(parts, s)
            .await
            .map_err(IntoResponse::into_response)?;
        let Path(id) = Path::<String>::from_request_parts(parts, s)
            .await
            .map_err(IntoResponse::into_response)?;
        let op = service::operations::get(&s.services.db, &viewer.caller, &id)
            .await
            .map_err(|e| PageError::from(e).into_response())?;
        Ok(ViewedOperation { viewer, op })
    }
}

pub async fn page(
    ViewedOperation { viewer: v, op }: ViewedOperation,
) -> Result<Response, PageError> {
    let m = &op.metadata;
    let warnings = m
        .plan
        .as_ref()
        .and_then(|p| p.get("warnings"))
        .and_then(|w| w.as_array())
        .map(|w| {
            w.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let live = live_view(&op, Utc::now());
    view::render(&OperationPage {
        chrome: Chrome::new(
            &v,
            format!("Operation {}", live.id),
            view::operation_href(&op.name),
        ),
        op_type: m.op_type.to_string(),
        target: m.target.clone(),
        target_href: view::cluster_href(&m.target),
        team: m.team.clone().unwrap_or_default(),
        created_by: m.created_by.clone(),
        request_id: m.request_id.clone().unwrap_or_default(),
        created: view::short_time(&m.create_time),
        started: m
            .start_time
            .as_deref()
            .map(view::short_time)
            .unwrap_or_default(),
        ended: m
            .end_time
            .as_deref()
            .map(view::short_time)
            .unwrap_or_default(),
        attempt: m.attempt,
        warnings,
        live,
    })
}

/// The live part alone (what the page's script swaps in).
pub async fn live(ViewedOperation { op, .. }: ViewedOperation) -> Result<Response, PageError> {
    view::render(&LiveFragment {
        live: live_view(&op, Utc::now()),
    })
}

/// `text/event-stream`: one `progress` event per change and a final `done`, each
/// carrying the operation's state (the page fetches the fragment to show it). The
/// stream holds one of the caller's event-stream places (the API's `:watch` takes them
/// too) for as long as it lives.
pub async fn events(Visit(s, v): Visit, Path(id): Path<String>) -> Result<Response, PageError> {
    let permit = s.limits.watch_permit(&v.caller.email)?;
    let stream = service::operations::watch(
        s.services.db.clone(),
        s.services.events.clone(),
        &v.caller,
        &id,
    )
    .await?;
    let events = stream.map(move |e| {
        // Held as long as the stream lives: dropping the stream frees the place.
        let _held = &permit;
        let (name, op) = match e {
            WatchEvent::Progress(op) => ("progress", op),
            WatchEvent::Done(op) => ("done", op),
        };
        Ok::<_, Infallible>(
            Event::default()
                .event(name)
                .data(op.metadata.state.as_str()),
        )
    });
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// `POST .../cancel`: request cancellation, then back to the page.
pub async fn cancel(
    State(s): State<ConsoleState>,
    Path(id): Path<String>,
    p: Posted,
) -> Result<Response, PageError> {
    let op = service::operations::cancel(&s.services.db, &p.viewer.caller, &id, None).await?;
    Ok(Redirect::to(&view::operation_href(&op.name)).into_response())
}

/// `POST /console/operations/{id}/approve` or `/reject`: decide a pending operation (an
/// ADMIN or OWNER other than its requester), with the form's `comment`.
pub async fn decide(
    State(s): State<ConsoleState>,
    Path((id, verb)): Path<(String, String)>,
    p: Posted,
) -> Result<Response, PageError> {
    let comment = Some(p.field("comment").trim().to_owned()).filter(|c| !c.is_empty());
    let d = match verb.as_str() {
        "approve" => Decision::Approve(comment),
        "reject" => Decision::Reject(comment),
        _ => {
            return Err(PageError::not_found(format!(
                "no page {verb} for an operation"
            )));
        }
    };
    let op = service::provision::approval::decide(&s.services, &p.viewer.caller, &id, d).await?;
    Ok(Redirect::to(&view::operation_href(&op.name)).into_response())
}
