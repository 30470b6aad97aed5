//! The audit trail's pages: a team's (`/console/teams/{team}/events`, any member) and
//! every team's (`/console/events`, service admins), newest first, with the API's filter
//! and one page at a time.
//!
//! Invariant: both read through `service::audit`, so a non-member gets the same 404 and
//! a non-admin the same 403 as from the API, and a filter means what it means there.

use askama::Template;
use axum::extract::Query;
use axum::response::Response;
use serde::Deserialize;

use crate::model::event::Event;
use crate::service::{self, Page, PageRequest};

use super::ConsoleState;
use super::error::PageError;
use super::identity::{Viewer, Visit};
use super::paths::ConsoleTeam;
use super::view::{self, Chrome};

/// `?filter=&pageToken=`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsQuery {
    #[serde(default)]
    filter: String,
    page_token: Option<String>,
}

pub struct EventRow {
    pub time: String,
    pub actor: String,
    pub event_type: String,
    pub target: String,
    pub target_href: Option<String>,
    pub request_id: String,
    pub details: String,
}

impl EventRow {
    fn of(e: Event) -> EventRow {
        let target_href = view::cluster_href(&e.target).or_else(|| {
            e.target
                .starts_with("operations/")
                .then(|| view::operation_href(&e.target))
        });
        EventRow {
            time: view::short_time(&e.time),
            actor: e.actor,
            event_type: e.event_type.as_str().to_owned(),
            target_href,
            target: e.target,
            request_id: e.request_id.unwrap_or_default(),
            details: e.details.to_string(),
        }
    }
}

#[derive(Template)]
#[template(path = "events.html")]
struct EventsPage {
    chrome: Chrome,
    heading: String,
    /// Where the filter form and the next page link go.
    here: String,
    filter: String,
    events: Vec<EventRow>,
    /// The next page's URL, if there is one.
    next: Option<String>,
}

const PAGE_SIZE: i64 = 100;

fn render(
    v: &Viewer,
    heading: String,
    here: String,
    q: EventsQuery,
    page: Page<Event>,
) -> Result<Response, PageError> {
    let next = page.next_page_token.map(|t| {
        let mut url = format!("{here}?pageToken={t}");
        if !q.filter.is_empty() {
            url.push_str("&filter=");
            url.push_str(&encode(&q.filter));
        }
        url
    });
    view::render(&EventsPage {
        chrome: Chrome::new(v, heading.clone(), here.clone()),
        heading,
        here,
        filter: q.filter,
        events: page.items.into_iter().map(EventRow::of).collect(),
        next,
    })
}

/// A query value percent-encoded (everything but unreserved characters).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn page_request(s: &ConsoleState, q: &EventsQuery) -> PageRequest {
    PageRequest {
        size: Some(PAGE_SIZE),
        token: q.page_token.clone(),
        key: s.services.page_key.clone(),
    }
}

/// `GET /console/teams/{team}/events`: the team's trail (any member).
pub async fn team(
    Visit(s, v): Visit,
    ConsoleTeam(id): ConsoleTeam,
    Query(q): Query<EventsQuery>,
) -> Result<Response, PageError> {
    let db = &s.services.db;
    let page =
        service::audit::list_team(db, &v.caller, &id, &q.filter, &page_request(&s, &q)).await?;
    let here = format!("/console/teams/{}/events", id.as_str());
    render(&v, format!("Team {} events", id.as_str()), here, q, page)
}

/// `GET /console/events`: every team's trail (service admins).
pub async fn all(Visit(s, v): Visit, Query(q): Query<EventsQuery>) -> Result<Response, PageError> {
    let db = &s.services.db;
    let page = service::audit::list_all(db, &v.caller, &q.filter, &page_request(&s, &q)).await?;
    render(
        &v,
        "Events".to_owned(),
        "/console/events".to_owned(),
        q,
        page,
    )
}
