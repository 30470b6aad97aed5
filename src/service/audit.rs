//! The audit trail: what is recorded of a request, the events services append in their
//! own transactions, and the two lists (a team's, for its members; every team's, for
//! service admins).
//!
//! Invariants:
//! - Every state-changing request is one REQUEST_ACCEPTED or REQUEST_REFUSED event,
//!   written after its response is made and before it is sent ([`record_request`]), in
//!   one statement that also finds the request's team (from its path: a team, a
//!   project's team, an operation's team). Reads, previews (`validateOnly`, `:preview*`)
//!   and the read-only custom methods are never recorded ([`recorded`]), nor are
//!   refusals that decided nothing about the change (429, database unavailable).
//! - A request runs inside [`scoped`]: the services read its `x-request-id` there for
//!   the events they append ([`request_id`]), and the extractor that authenticates it
//!   names the actor there ([`note_actor`]), so no signature changes to carry them.
//! - A list shows a team's events to its members only (404 to others, as every team
//!   read), and every team's to service admins only (403 to others).
//! - Nothing here logs an email, a path or a detail: a failed write is logged with the
//!   error alone (the request's span carries its id).

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::domain::states::EventType;
use crate::domain::{Email, Role, TeamId};
use crate::model::{self, event::Event};
use crate::store::events::{self as store_events, EventFilter, EventRow, NewEvent, TeamOf};
use crate::store::{Db, StoreError};

use super::filter::{self, Op};
use super::{Caller, Error, Page, PageRequest, Result, access};

/// The actor of a request no one authenticated.
pub const ANONYMOUS: &str = "anonymous";

/// The actor of what kineticd does by itself.
pub const KINETICD: &str = "kineticd";

/// The reason of an error page the console answered with, left on the response for the
/// recording layer (the API's errors carry theirs already).
#[derive(Debug, Clone)]
pub struct Refusal(pub String);

/// What a request carries for the events written while it runs.
struct RequestScope {
    request_id: Option<String>,
    /// Whether the request itself is recorded (only then is its actor kept).
    recorded: bool,
    actor: OnceLock<String>,
}

tokio::task_local! {
    static REQUEST: RequestScope;
}

/// Run `f` (a request's handling) with `request_id` available to the events it writes;
/// returns its output and, for a `recorded` request, the actor that authenticated, if
/// any did.
pub async fn scoped<F: Future>(
    request_id: Option<String>,
    recorded: bool,
    f: F,
) -> (F::Output, Option<String>) {
    let scope = RequestScope {
        request_id,
        recorded,
        actor: OnceLock::new(),
    };
    REQUEST
        .scope(scope, async {
            let out = f.await;
            let actor = REQUEST.with(|r| r.actor.get().cloned());
            (out, actor)
        })
        .await
}

/// The request's caller, once authenticated (the first one named stays).
pub fn note_actor(email: &Email) {
    let _ = REQUEST.try_with(|r| {
        if r.recorded {
            r.actor.get_or_init(|| email.as_str().to_owned());
        }
    });
}

/// The `x-request-id` of the request being served, if any.
pub fn request_id() -> Option<String> {
    REQUEST.try_with(|r| r.request_id.clone()).ok().flatten()
}

/// Append an event by `caller` within the current request (in the caller's transaction
/// when `ex` is one).
pub async fn append_by(
    ex: impl sqlx::PgExecutor<'_>,
    caller: &Caller,
    team: Option<&str>,
    event_type: EventType,
    target: &str,
    details: Value,
) -> std::result::Result<(), StoreError> {
    append_as(ex, caller.email.as_str(), team, event_type, target, details).await
}

/// [`append_by`] with the actor given as its address.
pub async fn append_as(
    ex: impl sqlx::PgExecutor<'_>,
    actor: &str,
    team: Option<&str>,
    event_type: EventType,
    target: &str,
    details: Value,
) -> std::result::Result<(), StoreError> {
    let request_id = request_id();
    store_events::append(
        ex,
        &NewEvent {
            team_id: team,
            actor,
            event_type,
            target,
            request_id: request_id.as_deref(),
            details,
        },
    )
    .await
}

/// Custom methods that change nothing (reads that need a body or a long poll), and the
/// previews' prefix: none of them is recorded.
const READ_ONLY_VERBS: [&str; 5] = ["wait", "checkWorkload", "diagnose", "evaluate", "search"];
const PREVIEW_PREFIX: &str = "preview";

/// The resource a recorded request acts on, and where its team is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Its name as the API spells it (`teams/t/members/a@x`, `projects/p/zones/z/clusters/c`).
    pub target: String,
    pub team: Owner,
}

/// Where a request's team comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Team(String),
    Project(String),
    Operation(Uuid),
    None,
}

/// Whether a request is recorded, and what it acts on: POST, PUT, PATCH and DELETE under
/// `/v1/` and the console's POSTs, except previews and read-only custom methods.
pub fn recorded(method: &str, path: &str, query: Option<&str>) -> Option<Resource> {
    if !matches!(method, "POST" | "PUT" | "PATCH" | "DELETE") {
        return None;
    }
    let validate_only = query.is_some_and(|q| {
        q.split('&')
            .any(|kv| kv.split_once('=') == Some(("validateOnly", "true")))
    });
    if validate_only {
        return None;
    }
    if let Some(rest) = path.strip_prefix("/v1/") {
        // A custom method's verb (AIP-136) is letters after the last `:` (a member named
        // `group:eng@example.com` has none).
        let (rest, verb) = match rest.rsplit_once(':') {
            Some((head, v)) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphabetic()) => {
                (head, Some(v))
            }
            _ => (rest, None),
        };
        if verb.is_some_and(|v| READ_ONLY_VERBS.contains(&v) || v.starts_with(PREVIEW_PREFIX)) {
            return None;
        }
        return Some(resource(decode(rest)));
    }
    let rest = path.strip_prefix("/console/")?;
    if method != "POST" || rest == "dev/user" {
        return None;
    }
    let decoded = decode(rest);
    let segs: Vec<&str> = decoded.split('/').collect();
    let target = match segs.as_slice() {
        ["clusters", p, z, c, more @ ..] => {
            let cluster = format!("projects/{p}/zones/{z}/clusters/{c}");
            match more {
                ["pools", "add"] => format!("{cluster}/nodePools"),
                ["pools", pool, ..] => format!("{cluster}/nodePools/{pool}"),
                _ => cluster,
            }
        }
        ["operations", id, ..] => format!("operations/{id}"),
        ["teams", ..] => decoded.clone(),
        _ => format!("console/{decoded}"),
    };
    Some(resource(target))
}

/// A resource by its name, with the owner its first two segments name.
fn resource(target: String) -> Resource {
    let mut segs = target.split('/');
    let team = owner(segs.next(), segs.next());
    Resource { target, team }
}

/// The team owner of a resource named `{collection}/{id}/...`.
fn owner(collection: Option<&str>, id: Option<&str>) -> Owner {
    match (collection, id) {
        (Some("teams"), Some(t)) if TeamId::parse(t).is_ok() => Owner::Team(t.to_owned()),
        (Some("projects"), Some(p)) if !p.is_empty() => Owner::Project(p.to_owned()),
        (Some("operations"), Some(id)) => Uuid::parse_str(id).map_or(Owner::None, Owner::Operation),
        _ => Owner::None,
    }
}

/// `%XX` escapes decoded (a bad escape, or one of a control character, which a name
/// never holds and PostgreSQL's text cannot hold as NUL, is kept as written).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b[i], hex) {
            (b'%', Some(v)) if !v.is_ascii_control() => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A recorded request and how it was answered.
#[derive(Debug, Clone)]
pub struct RequestOutcome<'a> {
    pub resource: Resource,
    /// The authenticated caller (`None`: [`ANONYMOUS`]).
    pub actor: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    /// The error's reason, when the answer is one.
    pub reason: Option<&'a str>,
    /// Where a console answer sent the browser (its operation's or team's page): the
    /// team is found there when the request's path names none.
    pub location: Option<&'a str>,
}

/// How long a request's answer waits for its event at most (a database that stopped
/// answering must not hold every mutation's answer for the pool's acquire timeout).
const RECORD_WAIT: Duration = Duration::from_secs(2);

/// Record a request: REQUEST_ACCEPTED for a 1xx-3xx answer, REQUEST_REFUSED otherwise. A
/// failure to write is logged (without the event) and the answer still goes out. Not
/// recorded: a request refused because the database is unavailable (it could not be),
/// and one refused by the caller's rate limit (429: it decided nothing, and recording
/// each would turn a flood the limit stops into as many writes).
pub async fn record_request(db: &Db, o: RequestOutcome<'_>) {
    if o.reason == Some("DATABASE_UNAVAILABLE") || o.status == 429 {
        return;
    }
    let refused = o.status >= 400;
    let mut details = json!({"method": o.method, "path": o.path, "status": o.status});
    if refused && let Some(r) = o.reason {
        details["reason"] = json!(r);
    }
    let located = o
        .location
        .and_then(|l| recorded("POST", l, None))
        .map(|r| r.team);
    let team = match (&o.resource.team, located) {
        (Owner::None, Some(t)) => t,
        (t, _) => t.clone(),
    };
    let (team_id, of) = match &team {
        Owner::Team(t) => (Some(t.as_str()), TeamOf::Given),
        Owner::Project(p) => (None, TeamOf::Project(p)),
        Owner::Operation(id) => (None, TeamOf::Operation(*id)),
        Owner::None => (None, TeamOf::Given),
    };
    let e = NewEvent {
        team_id,
        actor: o.actor.unwrap_or(ANONYMOUS),
        event_type: if refused {
            EventType::RequestRefused
        } else {
            EventType::RequestAccepted
        },
        target: &o.resource.target,
        request_id: o.request_id,
        details,
    };
    match tokio::time::timeout(RECORD_WAIT, store_events::append_owned_by(db, &e, of)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %format_args!("{e:#}"), "audit event of a request not recorded")
        }
        Err(_) => tracing::warn!("audit event of a request not recorded in time"),
    }
}

fn filter_error(why: String) -> Error {
    Error::invalid(
        "INVALID_FILTER",
        format!(
            "filter: {why}; use terms like type=\"MEMBER_ADDED\" AND actor=\"a@x\" AND target=\"teams/t\" AND time >= \"2026-12-01T00:00:00Z\""
        ),
    )
}

/// Parse an events filter: `actor`, `type`, `target` (equality) and `time` (=, >=, >,
/// <=, <; RFC 3339) terms joined by AND.
pub fn parse_filter(text: &str) -> Result<EventFilter> {
    let mut f = EventFilter::default();
    for t in filter::terms(text, filter_error)? {
        if t.key != "time" && t.op != Op::Eq {
            return Err(filter_error(format!(
                "{}{} is not key=value (only time is compared with < or >)",
                t.key,
                t.op.as_str()
            )));
        }
        if t.value.chars().any(char::is_control) {
            return Err(filter_error(format!(
                "{} holds a control character, which no event's field does",
                t.key
            )));
        }
        match t.key {
            "actor" => f.actor = Some(t.value.to_lowercase()),
            "type" => {
                f.event_type = Some(EventType::parse(&t.value).map_err(|e| {
                    filter_error(format!("type {:?} is not one of {}", e.value, e.known))
                })?)
            }
            "target" => f.target = Some(t.value),
            "time" => {
                let at: DateTime<Utc> = DateTime::parse_from_rfc3339(&t.value)
                    .map_err(|_| {
                        filter_error(format!(
                            "time {:?} is not an RFC 3339 timestamp like 2026-12-01T00:00:00Z",
                            t.value.chars().take(40).collect::<String>()
                        ))
                    })?
                    .with_timezone(&Utc);
                let tighter = |old: Option<DateTime<Utc>>, later: bool| {
                    Some(old.map_or(at, |o| if later { o.max(at) } else { o.min(at) }))
                };
                match t.op {
                    Op::Ge => f.time_from = tighter(f.time_from, true),
                    Op::Gt => f.time_after = tighter(f.time_after, true),
                    Op::Le => f.time_to = tighter(f.time_to, false),
                    Op::Lt => f.time_before = tighter(f.time_before, false),
                    Op::Eq => {
                        f.time_from = tighter(f.time_from, true);
                        f.time_to = tighter(f.time_to, false);
                    }
                }
            }
            other => {
                return Err(filter_error(format!(
                    "unknown field {:?} (known: actor, type, target, time)",
                    other.chars().take(40).collect::<String>()
                )));
            }
        }
    }
    Ok(f)
}

/// An event as the API shows it.
pub fn render(row: EventRow) -> Event {
    let name = match &row.team_id {
        Some(t) => format!("teams/{t}/events/{}", row.id),
        None => format!("events/{}", row.id),
    };
    Event {
        name,
        time: model::timestamp(row.time),
        actor: row.actor,
        event_type: row.event_type,
        target: row.target,
        request_id: row.request_id,
        details: row.details,
    }
}

/// A list request checked: its filter, where its page starts and how long it is.
struct Query {
    filter: EventFilter,
    scope: String,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
}

impl Query {
    fn parse(filter: &str, scope: String, page: &PageRequest) -> Result<Query> {
        Ok(Query {
            filter: parse_filter(filter)?,
            after: page.after(&scope)?,
            limit: page.limit()?,
            scope,
        })
    }

    async fn run(self, db: &Db, page: &PageRequest) -> Result<Page<Event>> {
        let rows = store_events::list(db, &self.filter, self.after, self.limit + 1).await?;
        page.page(&self.scope, rows, |r| (r.time, r.id), render)
    }
}

/// A team's events, newest first (any member; 404 to others).
pub async fn list_team(
    db: &Db,
    caller: &Caller,
    team: &TeamId,
    filter: &str,
    page: &PageRequest,
) -> Result<Page<Event>> {
    let team = team.as_str();
    access::require(db, caller, team, Role::Viewer, "reading the team's events").await?;
    let mut q = Query::parse(filter, format!("events/{team}?{filter}"), page)?;
    q.filter.team = Some(team.to_owned());
    q.run(db, page).await
}

/// Every team's events (and those of none), newest first: service admins only (a
/// malformed request is 400 to anyone: its shape discloses nothing).
pub async fn list_all(
    db: &Db,
    caller: &Caller,
    filter: &str,
    page: &PageRequest,
) -> Result<Page<Event>> {
    let q = Query::parse(filter, format!("events?{filter}"), page)?;
    if !caller.admin {
        return Err(Error::forbidden(
            "every team's events are for kineticd's service admins (KINETIC_ADMINS); a team's members read its events at /v1/teams/{team}/events",
        ));
    }
    q.run(db, page).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(target: &str, team: Owner) -> Option<Resource> {
        Some(Resource {
            target: target.to_owned(),
            team,
        })
    }

    #[test]
    fn which_requests_are_recorded_and_their_targets() {
        let op = "0b7e1c9e-6f7a-4f43-8a55-3f0c2d1e4b5a";
        let id = Uuid::parse_str(op).unwrap();
        let cases = [
            ("GET", "/v1/teams/acme", None, None),
            (
                "PUT",
                "/v1/projects/p/zones/z/clusters/c",
                Some("validateOnly=true"),
                None,
            ),
            (
                "POST",
                "/v1/projects/p/zones/z/clusters/c:previewApply",
                None,
                None,
            ),
            ("POST", &format!("/v1/operations/{op}:wait"), None, None),
            (
                "POST",
                "/v1/projects/p/zones/z/clusters/c:diagnose",
                None,
                None,
            ),
            ("POST", "/console/dev/user", None, None),
            ("GET", "/console/teams/acme", None, None),
            ("POST", "/sim/v1/faults", None, None),
            (
                "PUT",
                "/v1/teams/acme/members/bob%40example.com",
                Some("requestId=x"),
                res(
                    "teams/acme/members/bob@example.com",
                    Owner::Team("acme".into()),
                ),
            ),
            ("POST", "/v1/teams", None, res("teams", Owner::None)),
            (
                "DELETE",
                "/v1/teams/acme/members/group:eng@example.com",
                None,
                res(
                    "teams/acme/members/group:eng@example.com",
                    Owner::Team("acme".into()),
                ),
            ),
            (
                "DELETE",
                "/v1/teams/acme/members/a%00b%2",
                None,
                res("teams/acme/members/a%00b%2", Owner::Team("acme".into())),
            ),
            (
                "PUT",
                "/v1/projects/p/zones/z/clusters/c",
                Some("validateOnly=false"),
                res("projects/p/zones/z/clusters/c", Owner::Project("p".into())),
            ),
            (
                "POST",
                &format!("/v1/operations/{op}:cancel"),
                None,
                res(&format!("operations/{op}"), Owner::Operation(id)),
            ),
            (
                "POST",
                "/console/clusters/p/z/c/pools/gpu-l4-ab12/remove",
                None,
                res(
                    "projects/p/zones/z/clusters/c/nodePools/gpu-l4-ab12",
                    Owner::Project("p".into()),
                ),
            ),
            (
                "POST",
                "/console/teams/acme/members",
                None,
                res("teams/acme/members", Owner::Team("acme".into())),
            ),
            ("POST", "/console/up", None, res("console/up", Owner::None)),
        ];
        for (method, path, query, want) in cases {
            assert_eq!(recorded(method, path, query), want, "{method} {path}");
        }
    }

    #[test]
    fn filters() {
        let f = parse_filter(
            r#"type="MEMBER_ADDED" AND actor="Bob@Example.com" AND target="teams/acme" AND time >= "2026-12-01T00:00:00Z" AND time < "2026-12-02T00:00:00+01:00""#,
        )
        .unwrap();
        assert_eq!(f.event_type, Some(EventType::MemberAdded));
        assert_eq!(f.actor.as_deref(), Some("bob@example.com"));
        assert_eq!(f.target.as_deref(), Some("teams/acme"));
        assert_eq!(
            f.time_from.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-12-01T00:00:00+00:00")
        );
        assert_eq!(
            f.time_before.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-12-01T23:00:00+00:00")
        );
        for bad in [
            "type=BOGUS",
            "time>=yesterday",
            "actor>=a",
            "target=\"a\u{0}b\"",
            "color=red",
            "type=MEMBER_ADDED OR type=MEMBER_REMOVED",
        ] {
            assert_eq!(
                parse_filter(bad).unwrap_err().reason,
                "INVALID_FILTER",
                "{bad}"
            );
        }
        assert_eq!(parse_filter("").unwrap(), EventFilter::default());
    }
}
