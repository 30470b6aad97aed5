//! Application assembly (a composition root): the handlers' state built from settings,
//! the router with its middleware, and the serve loop with graceful shutdown.
//!
//! Invariant: every response passes through the same middleware stack (request id,
//! metrics, tracing, the audit trail's recording, body limit, panic catching), including
//! errors and unmatched routes.

mod connections;

pub use connections::ConnectionLimits;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request, StatusCode};
use tokio::net::TcpListener;
use tower_http::request_id::{
    MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer,
};
use tower_http::trace::{DefaultOnFailure, TraceLayer};

use crate::api::auth::Authenticator;
use crate::api::error::ApiError;
use crate::api::route_table::RouteTable;
use crate::auth::{IapConfig, IapVerifier, Mode};
use crate::cloud::Cloud;
use crate::config::{Identity, Settings};
use crate::ops::Events;
use crate::service::Services;
use crate::service::page::PageKey;
use crate::store::{Db, StoreError};

pub use crate::api::state::{AppParts, AppState};

pub const BODY_LIMIT: usize = 1024 * 1024;
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Request ids: random (version 4) UUIDs, as `tower_http`'s `MakeRequestUuid` makes
/// them, but drawn from the thread's generator rather than one `getrandom` system call
/// per request (an id needs to be unique, not secret).
#[derive(Clone, Copy)]
struct RequestUuid;

impl MakeRequestId for RequestUuid {
    fn make_request_id<B>(&mut self, _: &Request<B>) -> Option<RequestId> {
        let id = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
        let mut buf = uuid::Uuid::encode_buffer();
        let text = id.hyphenated().encode_lower(&mut buf);
        axum::http::HeaderValue::from_str(text)
            .ok()
            .map(RequestId::new)
    }
}

/// The shared outbound HTTP client (JWKS now; cloud clients later).
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    crate::auth::install_tls_provider();
    reqwest::Client::builder()
        .user_agent(concat!("kineticd/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(30))
        .build()
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("building the HTTP client")]
    Http(#[from] reqwest::Error),
    #[error("listening for operation events on PostgreSQL")]
    Listen(#[from] sqlx::Error),
    #[error("reading the page-token key")]
    PageKey(#[from] StoreError),
}

impl AppState {
    /// Build the state; `url` is the database URL (the event listener opens its own
    /// connection so that waiters never take one from the pool).
    pub async fn start(
        db: Db,
        url: &str,
        settings: &Settings,
        cloud: Cloud,
    ) -> Result<AppState, StartError> {
        let mode = match &settings.identity {
            Identity::Dev => Mode::Dev,
            Identity::Iap { jwks_url, audience } => {
                let mut cfg = IapConfig::new(audience.clone());
                cfg.jwks_url = jwks_url.clone();
                Mode::Iap(IapVerifier::new(cfg, http_client()?))
            }
        };
        Ok(AppState::new(AppParts {
            auth: Arc::new(Authenticator {
                identity: Arc::new(crate::auth::Authenticator {
                    mode,
                    admins: settings.admins.iter().cloned().collect::<HashSet<_>>(),
                }),
                // One bucket and one count of event streams per caller, charged by the
                // API and the console alike.
                limits: Arc::new(crate::api::limits::ApiLimits::new(
                    Arc::new(crate::auth::limits::CallerLimits::new(
                        settings.limits.rate.map(|r| (r.per_second, r.burst)),
                        settings.limits.max_watches_per_caller,
                    )),
                    settings.limits.request_timeout,
                )),
            }),
            metrics: crate::api::metrics::handle(),
            services: Services {
                events: Events::start(url).await?,
                test_workflows: settings.test_workflows,
                prices: Arc::new(settings.prices.clone()),
                page_key: page_key(&db).await?,
                approval_ttl: settings.approval_ttl,
                webhook_allow: settings.webhook_allow,
                placement_deadline: settings.limits.placement_deadline,
                cluster_access: Default::default(),
                db,
                cloud: Arc::new(cloud),
            },
        }))
    }
}

/// The page-token key from the database, created (32 random bytes) on first use.
async fn page_key(db: &Db) -> Result<PageKey, StoreError> {
    let fresh: [u8; 32] = rand::random();
    let key = crate::store::page_key::load_or_create(db, &fresh).await?;
    Ok(PageKey::new(&key))
}

async fn not_found(req: Request<axum::body::Body>) -> ApiError {
    ApiError::not_found(
        "ROUTE_NOT_FOUND",
        format!(
            "no route for {} {}; see /docs",
            req.method(),
            req.uri().path()
        ),
    )
}

async fn method_not_allowed(req: Request<axum::body::Body>) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        format!("{} is not supported on {}", req.method(), req.uri().path()),
    )
}

pub fn router(state: AppState) -> Router {
    let (api, doc) = crate::api::openapi::router().split_for_parts();
    // The layers hold every route to its document, development-only ones included.
    let routes = RouteTable::from_openapi(&doc);
    let doc = crate::api::openapi::published(doc);
    // The console is not part of the OpenAPI document: it is merged after the split.
    let console = crate::console::router(crate::console::ConsoleState::new(
        state.services.clone(),
        state.auth.identity.clone(),
        state.auth.limits.caller.clone(),
    ));
    api.merge(crate::api::docs::router(doc))
        .merge(console)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            routes,
            crate::api::gate::admit,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::from_fn(crate::api::panic::catch_panic))
        .layer(axum::middleware::from_fn_with_state(
            state.auth.limits.clone(),
            crate::api::limits::deadline,
        ))
        // Outside the deadline, the panic catcher and the gate: their refusals are
        // recorded too.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::api::audit::record,
        ))
        .layer(axum::middleware::from_fn(crate::api::metrics::track))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<axum::body::Body>| {
                    let id = req
                        .headers()
                        .get(&REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("");
                    // The route template, not the path: paths may hold email addresses.
                    let route = req
                        .extensions()
                        .get::<axum::extract::MatchedPath>()
                        .map_or("unmatched", |m| m.as_str());
                    tracing::info_span!("http", method = %req.method(), route, request_id = %id)
                })
                // A 5xx is logged where it is made (with its reason); this line only notes
                // the response, so a database outage is not logged twice as an error.
                .on_failure(DefaultOnFailure::new().level(tracing::Level::WARN)),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, RequestUuid))
        .with_state(state)
}

/// Serve `router` on `listener` until `shutdown` resolves, then drain in-flight requests;
/// connections have no header-read or idle bound (see [`serve_with`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_with(listener, router, ConnectionLimits::default(), shutdown).await
}

/// [`serve`] with bounds on a request head's arrival and on idle keep-alive connections.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    connections::serve(listener, router, limits, shutdown).await
}

/// The connection bounds of `limits` (the `KINETIC_HEADER_READ_TIMEOUT_SECONDS` and
/// `KINETIC_IDLE_TIMEOUT_SECONDS` settings).
pub fn connection_limits(limits: &crate::config::Limits) -> ConnectionLimits {
    ConnectionLimits {
        header_read: limits.header_read_timeout,
        idle: limits.idle_timeout,
    }
}

/// Resolves on SIGTERM or SIGINT. The SIGTERM handler is installed when this is called,
/// not when the future is first polled: call it before serving, so a SIGTERM that comes
/// as soon as the first probe is answered is a clean shutdown, not a kill.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .inspect_err(|e| tracing::warn!(error = %e, "SIGTERM handler not installed"))
        .ok();
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(unix)]
        let term = async move {
            match term {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            _ = ctrl_c => {},
            _ = term => {},
        }
        tracing::info!("shutdown signal received; draining");
    }
}
