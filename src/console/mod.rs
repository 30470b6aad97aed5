//! The web console: server-rendered HTML pages over the same service layer as the JSON
//! API, with the same identity (IAP in production; in `--dev` a user switcher that sets
//! a cookie only dev mode reads) and so the same role rules and 404-for-outsiders.
//!
//! Invariants:
//! * every page calls the service functions the API calls, never the store or the cloud;
//! * no state changes on GET: mutations are POST forms, and each carries the session's
//!   form token (see [`session`]): a signed double-submit token bound to a random
//!   per-browser session cookie (`SameSite=Strict`, `HttpOnly`) and to the caller's
//!   email, checked before any handler runs ([`form::Posted`]); a cross-site
//!   `Sec-Fetch-Site` or a foreign `Origin` is refused too. There is no CORS, and no
//!   console route answers a script from another origin;
//! * every console response carries a Content-Security-Policy that allows only our own
//!   scripts, styles and images (no inline script or style: JS and CSS are files served
//!   under `/console/assets/`, embedded in the binary), `frame-ancestors 'none'`,
//!   `X-Content-Type-Options: nosniff` and `Referrer-Policy: same-origin` ([`headers`]);
//! * an error renders as an HTML page with the service's status, reason and message;
//! * every request that identifies its caller (the [`identity::Viewer`] extractor: every
//!   page, fragment, event stream and form) is charged to the caller's token bucket, the
//!   one the API charges (429 RATE_LIMITED page with `Retry-After` when it is empty), and
//!   each live-event stream holds one of the caller's event-stream places, the ones the
//!   API's `:watch` takes (429 TOO_MANY_WATCHES at the cap). Assets and redirects
//!   identify nobody and are not charged.
//!
//! Routes (all HTML unless noted):
//! * `GET /` redirects to `/console/`;
//! * `GET /console/` home: teams, clusters (state, pools, accelerators, cost per hour),
//!   running operations;
//! * `GET /console/accelerators`: the catalog with prices;
//! * `GET /console/teams`, `POST /console/teams` (create), `GET /console/teams/{team}`,
//!   `POST /console/teams/{team}/members` (add a member or change a role);
//! * `GET /console/teams/{team}/events` (the team's audit trail, any member) and
//!   `GET /console/events` (every team's, service admins), with `?filter=&pageToken=`;
//! * `GET /console/clusters/{project}/{zone}/{cluster}`: records, live status and drift,
//!   pools, capacity bars, pending pods;
//! * `GET /console/up` (form; with its fields filled, the `validateOnly` preview and a
//!   confirm form), `POST /console/up` (apply, then 303 to the operation);
//! * `GET|POST /console/clusters/{p}/{z}/{c}/pools/add`, `.../pools/{pool}/remove` and
//!   `.../down`: preview with confirm, then apply;
//! * `GET /console/operations/{id}`: metadata, timeline, error, cancel;
//!   `GET /console/operations/{id}/live` (the live part as an HTML fragment) and
//!   `GET /console/operations/{id}/events` (`text/event-stream` from the service's
//!   watch: the page's script refreshes the fragment on each event);
//!   `POST /console/operations/{id}/cancel`;
//! * `POST /console/dev/user` (dev mode only: switch the acting user);
//! * `GET /console/assets/{file}`: CSS and JS, cacheable.
//!
//! Stable hooks for browser tests (`data-testid` unless said otherwise; ids are HTML ids):
//! * dev switcher: form `dev-user-form`, input `dev-user-input` (name `user`), button
//!   `dev-user-submit`; the acting user is shown in `current-user`;
//! * team create: form `team-create-form`, inputs `team-id-input`, `team-name-input`,
//!   `team-projects-input`, button `team-create-submit`; team list rows `team-row`
//!   (`data-team` = id); member rows `member-row` (`data-email`), role form
//!   `member-role-form`, select `member-role-select`, button `member-role-submit`; add
//!   member: `member-add-form`, `member-email-input`, `member-add-role`, `member-add-submit`;
//!   link to the team's events `team-events-link` (every team's: `all-events-link`);
//! * events: rows `event-row` (`data-type`), filter form `events-filter-form` with
//!   `events-filter-input` and `events-filter-submit`, next page link `events-next`;
//! * home: cluster rows `cluster-row` (`data-cluster` = project/zone/name, link
//!   `cluster-link`), running operation rows `running-op-row`;
//! * up: form `up-form` (inputs `up-project`, `up-zone`, `up-cluster`, `up-accelerator`,
//!   `up-min-nodes`, `up-spot`; button `up-preview`); the preview `plan-preview` with
//!   action rows `plan-action` and cost `plan-cost`; confirm form `confirm-form`, button
//!   `confirm-button`; errors `form-error`;
//! * pool add: form `pool-add-form` (`pool-accelerator`, `pool-min-nodes`, `pool-spot`,
//!   `pool-failover`, button `pool-add-preview`), then `plan-preview` and
//!   `confirm-button` as above; pool remove and down show `plan-preview` and
//!   `confirm-button` too;
//! * cluster page: `cluster-state`, pool rows `pool-row` (`data-pool` = pool id) with
//!   link `pool-remove`, link `pool-add`, link `cluster-down`; capacity section
//!   `capacity`, one group `capacity-pool` per pool (`data-pool`), one bar
//!   `capacity-bar` per node (`data-node`, `data-used`, `data-free`, `data-stranded`),
//!   stranded slots have class `slot stranded`; pending pods `pending-pod`; capacity or
//!   status unavailable: `capacity-error`, `status-error`; drift rows `drift-row`;
//! * operation page: `op-state` (the state text, updated live), `op-done` (`true` /
//!   `false`), timeline `op-timeline` with one `step-bar` per step (`data-step`,
//!   `data-state`), step rows `step-row`, error `op-error` with `failed-step`, cancel
//!   form `cancel-form` and button `cancel-button`.

/// The cache-busting tag pages put on asset URLs (`/console/assets/x?v=...`).
pub const ASSETS_VERSION: &str = env!("CARGO_PKG_VERSION");

mod assets;
mod clusters;
mod dev_user;
mod discover;
mod error;
mod events;
mod form;
mod headers;
mod home;
mod identity;
mod operations;
mod paths;
mod placements;
mod provision;
mod session;
mod teams;
mod usage;
mod view;

use std::sync::Arc;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{any, get, post};

use crate::auth::Authenticator;
use crate::auth::limits::CallerLimits;
use crate::service::Services;

/// What console handlers are given: the service layer's handles, the shared
/// authenticator, the per-caller limits the API charges too, and the key that signs
/// form tokens.
#[derive(Clone)]
pub struct ConsoleState {
    pub services: Services,
    pub identity: Arc<Authenticator>,
    /// The API's own instance: one bucket and one count of event streams per caller.
    pub limits: Arc<CallerLimits>,
    form_key: Arc<[u8]>,
}

impl ConsoleState {
    pub fn new(
        services: Services,
        identity: Arc<Authenticator>,
        limits: Arc<CallerLimits>,
    ) -> ConsoleState {
        // Derived from the page-token key: shared by replicas, kept across restarts.
        let form_key = services.page_key.derive("console form token v1").into();
        ConsoleState {
            services,
            identity,
            limits,
            form_key,
        }
    }
}

/// The console's routes (and `GET /` redirecting to it), ready to merge into the app.
pub fn router<S: Clone + Send + Sync + 'static>(state: ConsoleState) -> Router<S> {
    let cluster = "/console/clusters/{project}/{zone}/{cluster}";
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .route("/console/", get(home::page))
        .route("/console/accelerators", get(teams::accelerators))
        .route("/console/teams", get(teams::list).post(teams::create))
        .route("/console/teams/{team}", get(teams::page))
        .route("/console/teams/{team}/members", post(teams::put_member))
        .route("/console/teams/{team}/events", get(events::team))
        .route("/console/teams/{team}/usage", get(usage::page))
        .route("/console/teams/{team}/discover", get(discover::page))
        .route("/console/teams/{team}/placements", get(placements::page))
        .route("/console/events", get(events::all))
        .route(cluster, get(clusters::page))
        .route(
            &format!("{cluster}/pools/add"),
            get(provision::pool_add_form).post(provision::pool_add),
        )
        .route(
            &format!("{cluster}/pools/{{pool}}/remove"),
            get(provision::pool_remove_confirm).post(provision::pool_remove),
        )
        .route(
            &format!("{cluster}/down"),
            get(provision::down_confirm).post(provision::down),
        )
        .route("/console/up", get(provision::up_form).post(provision::up))
        .route("/console/operations/{id}", get(operations::page))
        .route("/console/operations/{id}/live", get(operations::live))
        .route("/console/operations/{id}/events", get(operations::events))
        .route("/console/operations/{id}/cancel", post(operations::cancel))
        // `approve` and `reject` (the static routes above take precedence).
        .route("/console/operations/{id}/{verb}", post(operations::decide))
        .route("/console/dev/user", post(dev_user::switch_user))
        .route("/console/assets/{file}", get(assets::serve))
        .route("/console/{*rest}", any(error::not_found))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            session::middleware,
        ))
        .layer(axum::middleware::from_fn(headers::middleware))
        .with_state(state)
}
