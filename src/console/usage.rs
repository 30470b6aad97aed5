//! The team's usage page (`/console/teams/{team}/usage`, any member): accelerator hours
//! per day drawn as a server-rendered SVG bar chart (busy and idle stacked, no script),
//! and the rows by pool, for the month so far or the range asked.
//!
//! Invariant: both read through `service::usage::report`, so the page shows exactly what
//! the API answers (same members, same range rules, same gaps).

use askama::Template;
use axum::extract::Query;
use axum::response::Response;
use serde::Deserialize;

use crate::service::usage::{UsageAsk, UsageReport, UsageRow};

use super::error::PageError;
use super::identity::Visit;
use super::paths::ConsoleTeam;
use super::view::{self, Chrome};

/// `?startTime=&endTime=` (RFC 3339; default: the month so far).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageQuery {
    start_time: Option<String>,
    end_time: Option<String>,
}

/// Chart geometry (SVG user units).
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 200.0;
const TOP: f64 = 10.0;

/// One day's bar: busy at the bottom, idle stacked on it.
pub struct Bar {
    pub x: String,
    pub width: String,
    pub busy_y: String,
    pub busy_h: String,
    pub idle_y: String,
    pub idle_h: String,
    pub title: String,
    pub label: String,
}

pub struct Row {
    pub cluster: String,
    pub pool: String,
    pub node_hours: f64,
    pub accelerator_hours: f64,
    pub busy: f64,
    pub idle: f64,
    pub cost: f64,
}

pub struct GapRow {
    pub cluster: String,
    pub start: String,
    pub end: String,
    pub reason: String,
}

#[derive(Template)]
#[template(path = "usage.html")]
struct UsagePage {
    chrome: Chrome,
    team: String,
    range: String,
    max_label: String,
    bars: Vec<Bar>,
    rows: Vec<Row>,
    total: Row,
    gaps: Vec<GapRow>,
    csv: String,
}

fn stamp(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn fmt(x: f64) -> String {
    format!("{x:.1}")
}

/// The bars of a by-day report, scaled to the largest day.
fn bars(days: &UsageReport) -> (Vec<Bar>, f64) {
    let max = days
        .rows
        .iter()
        .map(|r| r.accelerator_hours)
        .fold(0.0_f64, f64::max);
    let n = days.rows.len().max(1) as f64;
    let slot = WIDTH / n;
    let scale = if max > 0.0 { (HEIGHT - TOP) / max } else { 0.0 };
    let bars = days
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let busy_h = r.busy_accelerator_hours * scale;
            let idle_h = r.idle_accelerator_hours * scale;
            let day = r.day.clone().unwrap_or_default();
            Bar {
                x: fmt(i as f64 * slot + slot * 0.1),
                width: fmt(slot * 0.8),
                busy_y: fmt(HEIGHT - busy_h),
                busy_h: fmt(busy_h),
                idle_y: fmt(HEIGHT - busy_h - idle_h),
                idle_h: fmt(idle_h),
                title: format!(
                    "{day}: {:.1} accelerator hours busy, {:.1} idle, {:.2} USD",
                    r.busy_accelerator_hours, r.idle_accelerator_hours, r.cost_usd
                ),
                label: day.get(5..).unwrap_or(&day).to_owned(),
            }
        })
        .collect();
    (bars, max)
}

fn row(r: &UsageRow) -> Row {
    Row {
        cluster: r.cluster.clone().unwrap_or_default(),
        pool: r.pool.clone().unwrap_or_default(),
        node_hours: r.node_hours,
        accelerator_hours: r.accelerator_hours,
        busy: r.busy_accelerator_hours,
        idle: r.idle_accelerator_hours,
        cost: r.cost_usd,
    }
}

/// `GET /console/teams/{team}/usage`.
pub async fn page(
    Visit(s, v): Visit,
    ConsoleTeam(id): ConsoleTeam,
    Query(q): Query<UsageQuery>,
) -> Result<Response, PageError> {
    let svc = &s.services;
    let ask = |group: &str| UsageAsk {
        start_time: q.start_time.clone(),
        end_time: q.end_time.clone(),
        group_by: Some(group.to_owned()),
    };
    let days =
        crate::service::usage::report(&svc.db, &svc.cloud, &v.caller, &id, &ask("day")).await?;
    let pools =
        crate::service::usage::report(&svc.db, &svc.cloud, &v.caller, &id, &ask("pool")).await?;
    let (bars, max) = bars(&days);
    let here = format!("/console/teams/{}/usage", id.as_str());
    let range = format!("{} to {}", stamp(&days.start_time), stamp(&days.end_time));
    view::render(&UsagePage {
        chrome: Chrome::new(&v, format!("Team {} usage", id.as_str()), here),
        team: id.as_str().to_owned(),
        range,
        max_label: fmt(max),
        bars,
        rows: pools.rows.iter().map(row).collect(),
        total: row(&pools.total),
        gaps: pools
            .gaps
            .iter()
            .map(|g| GapRow {
                cluster: g.cluster.clone(),
                start: stamp(&g.start_time),
                end: g.end_time.as_ref().map_or_else(|| "now".to_owned(), stamp),
                reason: g.reason.clone(),
            })
            .collect(),
        csv: format!("/v1/teams/{}/usage?groupBy=pool", id.as_str()),
    })
}
