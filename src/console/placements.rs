//! The team's placement page (`/console/teams/{team}/placements`, any member): a small
//! form (accelerator, count) that asks `placements:search` and shows the ranked table
//! and the warnings, server-rendered.
//!
//! Invariant: the page asks through `service::placements::search`, so it shows exactly
//! what the API answers; the form is a GET (the search changes nothing), and a question
//! the service refuses (400) is shown above the form, not as an error page.

use askama::Template;
use axum::extract::Query;
use axum::response::Response;
use serde::Deserialize;

use crate::domain::rpc::RpcCode;
use crate::model::placement::{Placement, PlacementQuery};

use super::error::PageError;
use super::identity::Visit;
use super::paths::ConsoleTeam;
use super::view::{self, Chrome};

/// `?accelerator=&count=` (both empty: the form only).
#[derive(Debug, Default, Deserialize)]
pub struct Ask {
    accelerator: Option<String>,
    count: Option<String>,
}

pub struct Row {
    pub rank: usize,
    pub kind: String,
    pub zone: String,
    pub place: String,
    pub free: String,
    pub quota: String,
    pub cost: String,
    pub obtainability: String,
    pub stockouts: u32,
    pub score: String,
    pub reasons: Vec<String>,
}

#[derive(Template)]
#[template(path = "placements.html")]
struct PlacementsPage {
    chrome: Chrome,
    team: String,
    accelerator: String,
    count: String,
    asked: bool,
    error: Option<PageError>,
    rows: Vec<Row>,
    warnings: Vec<String>,
}

fn row(i: usize, p: &Placement) -> Row {
    let kind = serde_json::to_value(p.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let place = [
        p.cluster.clone(),
        p.pool.as_ref().map(|x| format!("pool {x}")),
        p.reservation.clone(),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" · ");
    let opt = |o: Option<String>| o.unwrap_or_else(|| "–".to_owned());
    Row {
        rank: i + 1,
        kind,
        zone: p.zone.clone(),
        place,
        free: opt(p.free_accelerators.map(|f| f.to_string())),
        quota: opt(p.quota_headroom.map(|q| q.to_string())),
        cost: format!("{:.2}", p.hourly_cost_usd),
        obtainability: opt(p.obtainability.map(|o| format!("{o:.2}"))),
        stockouts: p.recent_stockouts,
        score: format!("{:.1}", p.score),
        reasons: p.reasons.clone(),
    }
}

/// `GET /console/teams/{team}/placements`.
pub async fn page(
    Visit(s, v): Visit,
    ConsoleTeam(id): ConsoleTeam,
    Query(q): Query<Ask>,
) -> Result<Response, PageError> {
    let accelerator = q.accelerator.unwrap_or_default().trim().to_owned();
    let count = q.count.unwrap_or_default().trim().to_owned();
    let here = format!("/console/teams/{}/placements", id.as_str());
    let mut page = PlacementsPage {
        chrome: Chrome::new(&v, format!("Team {} placements", id.as_str()), here),
        team: id.as_str().to_owned(),
        asked: !accelerator.is_empty() || !count.is_empty(),
        accelerator,
        count,
        error: None,
        rows: Vec::new(),
        warnings: Vec::new(),
    };
    if page.asked {
        let question = PlacementQuery {
            accelerator: Some(page.accelerator.clone()),
            // Not a number: the service's own refusal says what count must be.
            count: Some(page.count.parse().unwrap_or(0)),
            ..PlacementQuery::default()
        };
        match crate::service::placements::search(&s.services, &v.caller, &id, &question).await {
            Ok(r) => {
                page.rows = r
                    .placements
                    .iter()
                    .enumerate()
                    .map(|(i, p)| row(i, p))
                    .collect();
                page.warnings = r.warnings;
            }
            Err(e) if e.code == RpcCode::InvalidArgument => page.error = Some(e.into()),
            Err(e) => return Err(e.into()),
        }
    } else {
        // The team must be visible before the form is shown (404 for outsiders).
        crate::service::access::require(
            &s.services.db,
            &v.caller,
            id.as_str(),
            crate::domain::Role::Viewer,
            "searching placements",
        )
        .await?;
    }
    view::render(&page)
}
