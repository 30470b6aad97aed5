//! `/v1/teams/{team}/webhooks`: a team's notifications (issue 30 item 3). ADMINs and
//! OWNERs add and remove webhooks; every member lists them and reads their delivery
//! logs; others get 404, as for every team resource.
//!
//! Invariants:
//! - A webhook is checked whole before anything is stored: its URL (https, no
//!   credentials, a host the deployment may reach: `domain::webhooks::check_url`), its
//!   events (known, at least one, none twice) and format; a team has at most
//!   [`MAX_WEBHOOKS_PER_TEAM`], counted under a lock on the team's row.
//! - The signing secret (32 random bytes, `whsec_<hex>`) is shown by the create reply
//!   only; no read, list or audit event holds it.
//! - Adding and removing a webhook are audit events (WEBHOOK_CREATED, WEBHOOK_DELETED)
//!   in the change's transaction; their details name the URL's host, never its path
//!   (a Slack URL's path is itself a credential).
//! - Deleting a webhook removes it with its delivery log: pending deliveries are
//!   removed and never sent again.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::domain::states::EventType;
use crate::domain::webhooks::{
    self as rules, DeliveryState, MAX_WEBHOOKS_PER_TEAM, UrlRefusal, WebhookEvent, WebhookFormat,
};
use crate::domain::{Role, TeamId};
use crate::model;
use crate::store::webhooks::{self as store, DeliveryRow, NewWebhook, WebhookRow};
use crate::store::{Db, StoreError};

use super::access::{self, Caller};
use super::{Error, Page, PageRequest, Result, Services};

/// `POST /v1/teams/{team}/webhooks`'s body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// Where deliveries are POSTed: `https://` (plain `http://` only to a loopback or
    /// private address the deployment allows, KINETIC_WEBHOOK_ALLOW).
    #[schema(example = "https://hooks.example.com/kineticd")]
    pub url: String,
    /// What the webhook is told about: at least one, none twice.
    #[schema(value_type = Vec<WebhookEvent>)]
    pub events: Vec<String>,
    /// `JSON` (default) or `SLACK` (a Slack incoming-webhook message).
    #[serde(default)]
    #[schema(value_type = Option<WebhookFormat>, nullable = false)]
    pub format: Option<String>,
}

/// A webhook of a team.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    /// `teams/{team}/webhooks/{webhook}`
    pub name: String,
    pub url: String,
    pub events: Vec<WebhookEvent>,
    pub format: WebhookFormat,
    /// The HMAC-SHA256 key of `X-Kinetic-Signature` (`whsec_<64 hex>`): in the create
    /// reply only, never shown again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub secret: Option<String>,
    /// Who created it.
    pub creator: String,
    #[schema(format = DateTime)]
    pub create_time: String,
}

/// One delivery of an event to a webhook.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The delivery's id: `id` of the body and `X-Kinetic-Delivery`; the same on every
    /// try, so a receiver de-duplicates on it.
    pub id: String,
    pub event: WebhookEvent,
    pub state: DeliveryState,
    /// Tries made so far.
    #[schema(format = Int32)]
    pub attempts: i32,
    /// The HTTP status of the last try, when the receiver answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, format = Int32)]
    pub last_status: Option<i32>,
    /// Why the last try got no answer (refused address, timeout, connection error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub last_error: Option<String>,
    #[schema(format = DateTime)]
    pub create_time: String,
    /// When the next try is due (PENDING only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub next_attempt_time: Option<String>,
    /// When the receiver accepted it (DELIVERED only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime, nullable = false)]
    pub deliver_time: Option<String>,
}

fn invalid(field: &str, msg: impl Into<String>) -> Error {
    Error::invalid("INVALID_WEBHOOK", msg).with("field", field)
}

fn not_found(team: &str, id: &str) -> Error {
    Error::not_found(
        "WEBHOOK_NOT_FOUND",
        format!(
            "webhook teams/{team}/webhooks/{} not found",
            id.chars()
                .filter(|c| !c.is_control())
                .take(64)
                .collect::<String>()
        ),
    )
    .with("team", team)
}

/// Whether `id` could name a webhook (`wh-` and hex as made by [`new_id`]); anything
/// else is not found without a query (a NUL byte could not even be sent to PostgreSQL).
fn plausible(id: &str) -> bool {
    (1..=63).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A webhook as the API shows it (`secret`: the create reply's only).
fn render(r: WebhookRow, secret: Option<String>) -> Result<Webhook> {
    let key = format!("{}/{}", r.team_id, r.id);
    let corrupt = |column: &'static str, value: String, why: String| {
        Error::from(StoreError::from(crate::store::Corrupt {
            table: "webhooks",
            id: key.clone(),
            column,
            value: value.chars().take(200).collect(),
            why,
        }))
    };
    let events = r
        .events
        .iter()
        .map(|e| WebhookEvent::parse(e).map_err(|x| corrupt("events", e.clone(), x.to_string())))
        .collect::<Result<Vec<_>>>()?;
    let format = WebhookFormat::parse(&r.format)
        .map_err(|x| corrupt("format", r.format.clone(), x.to_string()))?;
    Ok(Webhook {
        name: format!("teams/{}/webhooks/{}", r.team_id, r.id),
        url: r.url,
        events,
        format,
        secret,
        creator: r.created_by,
        create_time: model::timestamp(r.create_time),
    })
}

/// A new webhook id: `wh-` and 8 random hex digits.
fn new_id() -> String {
    format!("wh-{}", rules::hex(&rand::random::<[u8; 4]>()))
}

/// Add a webhook (ADMIN or OWNER); the reply holds its secret, once.
pub async fn create(
    s: &Services,
    caller: &Caller,
    team: &TeamId,
    req: CreateWebhookRequest,
) -> Result<Webhook> {
    let db = &s.db;
    let team = team.as_str();
    access::require(db, caller, team, Role::Admin, "adding a webhook").await?;
    let url = rules::check_url(req.url.trim(), s.webhook_allow).map_err(|e| match e {
        UrlRefusal::Invalid(m) => invalid("url", m),
        UrlRefusal::Refused(m) => Error::invalid("WEBHOOK_URL_REFUSED", m).with("field", "url"),
    })?;
    let events = rules::parse_events(&req.events).map_err(|m| invalid("events", m))?;
    let format = match req.format.as_deref() {
        None => WebhookFormat::Json,
        Some(f) => WebhookFormat::parse(f).map_err(|e| {
            invalid(
                "format",
                format!("format {:?} is not one of {}", e.value, e.known),
            )
        })?,
    };
    let secret = format!("whsec_{}", rules::hex(&rand::random::<[u8; 32]>()));
    let id = new_id();
    let names: Vec<String> = events.iter().map(|e| e.as_str().to_owned()).collect();
    let mut tx = db.begin().await.map_err(StoreError::from)?;
    let count = store::lock_count(&mut tx, team)
        .await?
        .ok_or_else(|| access::team_not_found(team))?;
    if count >= MAX_WEBHOOKS_PER_TEAM {
        return Err(Error::precondition(
            "WEBHOOK_LIMIT_REACHED",
            format!(
                "teams/{team} has {count} webhooks, the most a team may have ({MAX_WEBHOOKS_PER_TEAM}); delete one first"
            ),
        )
        .with("team", team)
        .with("limit", MAX_WEBHOOKS_PER_TEAM));
    }
    let row = store::insert(
        &mut *tx,
        &NewWebhook {
            team_id: team,
            id: &id,
            url: url.as_str(),
            events: &names,
            format: format.as_str(),
            secret: &secret,
            created_by: caller.email.as_str(),
        },
    )
    .await?;
    let name = format!("teams/{team}/webhooks/{id}");
    let details = json!({
        "urlHost": url.host_str(),
        "events": names,
        "format": format.as_str(),
    });
    super::audit::append_by(
        &mut *tx,
        caller,
        Some(team),
        EventType::WebhookCreated,
        &name,
        details,
    )
    .await?;
    tx.commit().await.map_err(StoreError::from)?;
    render(row, Some(secret))
}

/// The team's webhooks, oldest first, without their secrets (any member).
pub async fn list(db: &Db, caller: &Caller, team: &TeamId) -> Result<Vec<Webhook>> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "listing webhooks").await?;
    store::list(db, team)
        .await?
        .into_iter()
        .map(|r| render(r, None))
        .collect()
}

/// One webhook, without its secret (any member).
pub async fn get(db: &Db, caller: &Caller, team: &TeamId, id: &str) -> Result<Webhook> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading a webhook").await?;
    if !plausible(id) {
        return Err(not_found(team, id));
    }
    let row = store::get(db, team, id)
        .await?
        .ok_or_else(|| not_found(team, id))?;
    render(row, None)
}

/// Remove a webhook and its deliveries, pending ones included (ADMIN or OWNER).
pub async fn delete(db: &Db, caller: &Caller, team: &TeamId, id: &str) -> Result<()> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Admin, "deleting a webhook").await?;
    if !plausible(id) {
        return Err(not_found(team, id));
    }
    let mut tx = db.begin().await.map_err(StoreError::from)?;
    let row = store::delete(&mut *tx, team, id)
        .await?
        .ok_or_else(|| not_found(team, id))?;
    let host = url::Url::parse(&row.url)
        .ok()
        .and_then(|u| u.host_str().map(str::to_owned));
    super::audit::append_by(
        &mut *tx,
        caller,
        Some(team),
        EventType::WebhookDeleted,
        &format!("teams/{team}/webhooks/{id}"),
        json!({"urlHost": host}),
    )
    .await?;
    tx.commit().await.map_err(StoreError::from)?;
    Ok(())
}

fn render_delivery(r: DeliveryRow) -> Delivery {
    let state = DeliveryState::parse(&r.state).unwrap_or(DeliveryState::Pending);
    Delivery {
        id: r.id.to_string(),
        event: WebhookEvent::parse(&r.event).unwrap_or(WebhookEvent::OperationFinished),
        state,
        attempts: r.attempts,
        last_status: r.last_status,
        last_error: r.last_error,
        create_time: model::timestamp(r.create_time),
        next_attempt_time: (state == DeliveryState::Pending)
            .then(|| model::timestamp(r.next_attempt_time)),
        deliver_time: r.deliver_time.map(model::timestamp),
    }
}

/// A webhook's deliveries, newest first (any member).
pub async fn deliveries(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    id: &str,
    page: &PageRequest,
) -> Result<Page<Delivery>> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading webhook deliveries").await?;
    let scope = format!("webhooks/{team}/{id}/deliveries");
    let after: Option<(DateTime<Utc>, Uuid)> = page.after(&scope)?;
    let limit = page.limit()?;
    if !plausible(id) || store::get(db, team, id).await?.is_none() {
        return Err(not_found(team, id));
    }
    let rows = store::list_deliveries(db, team, id, after, limit + 1).await?;
    page.page(&scope, rows, |r| (r.create_time, r.id), render_delivery)
}
