//! The OpenAPI document, generated from the handlers' annotations (utoipa). Custom
//! methods (`:verb`) are dispatched by one route per resource but documented as their
//! own paths here.

use utoipa::openapi::RefOr;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use super::state::AppState;

use super::error::ErrorBody;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "kineticd",
        description = "Team-wide control plane for GKE accelerator clusters. Errors follow \
                       google.rpc.Status with an ErrorInfo reason; lists use keyset page tokens.",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    paths(
        super::profiles::activate_profile,
        super::check_workload::check_workload,
        super::diagnose::diagnose_cluster,
        super::sync_access::sync_cluster_access,
        super::snooze::snooze_cluster,
        super::adopt::discover_clusters,
        super::adopt::import_node_pool,
        super::snooze::snooze_node_pool,
        super::operations::get_operation,
        super::operations::watch_operation,
        super::operations::cancel_operation,
        super::operations::wait_operation,
        super::operations::approve_operation,
        super::operations::reject_operation,
        super::drill::drill_node_pool,
        super::preview::preview_apply_cluster,
        super::preview::preview_delete_cluster,
        super::preview::preview_delete_node_pool,
        super::preview::preview_update_node_pool,
        super::preview::preview_drill_node_pool
    ),
    components(schemas(ErrorBody, crate::model::drill::DrillReport)),
    modifiers(&Security),
    servers((url = "/", description = "The kineticd that serves this document")),
    security(("bearer" = [])),
    tags(
        (name = "identity", description = "The caller"),
        (name = "teams", description = "Teams and members"),
        (name = "profiles", description = "Per-caller pointers at clusters"),
        (name = "clusters", description = "Cluster records"),
        (name = "nodePools", description = "Node pool records"),
        (name = "accelerators", description = "The GPU and TPU catalog"),
        (name = "operations", description = "Long-running operations (AIP-151)"),
        (name = "service", description = "Health, readiness, metrics")
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let bearer = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .bearer_format("JWT")
            .description(Some(
                "A Google-signed OIDC ID token whose audience is the IAP OAuth client id \
                 (`gcloud auth print-identity-token --audiences=CLIENT_ID`, or a service \
                 account's). Identity-Aware Proxy checks it and forwards its own signed \
                 assertion, which kineticd verifies. In development mode the \
                 X-Kinetic-User header names the caller instead.",
            ))
            .build();
        components.add_security_scheme("bearer", SecurityScheme::Http(bearer));
    }
}

/// Paths served only in development and test mode (`serve --dev`): routed and held to
/// the same layers, never published.
const UNPUBLISHED_PREFIX: &str = "/v1/testing/";

/// Every documented route, with the document.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(super::health::router())
        .routes(utoipa_axum::routes!(super::metrics::metrics_text))
        .merge(super::teams::router())
        .merge(super::events::router())
        .merge(super::profiles::router())
        .merge(super::clusters::router())
        .merge(super::accelerators::router())
        .merge(super::status::router())
        .merge(super::capacity::router())
        .merge(super::credentials::router())
        .merge(super::policy::router())
        .merge(super::webhooks::router())
        .merge(super::usage::router())
        .merge(super::placements::router())
        .merge(super::cluster_verbs::router())
        .merge(super::operations::router())
        .merge(super::testing::router())
}

/// The published form of the routes' full document `doc`: versioned, without the
/// development-only routes (and the schemas only they use).
pub fn published(mut doc: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    super::operation_union::apply(&mut doc);
    doc.paths
        .paths
        .retain(|path, _| !path.starts_with(UNPUBLISHED_PREFIX));
    if let Some(c) = doc.components.as_mut() {
        c.schemas.retain(|name, _| name != "NoopRequest");
    }
    for item in doc.paths.paths.values_mut() {
        let ops = [
            &mut item.put,
            &mut item.post,
            &mut item.patch,
            &mut item.delete,
        ];
        for op in ops.into_iter().flatten() {
            one_success_type(op);
        }
    }
    super::route_reasons::listed(doc)
}

/// A mutation answers 202 with its operation; its `validateOnly=true` form (200 with the
/// plan) stays served for curl and scripts but is not published: generated clients get
/// one success type per call and preview through the `:preview…` methods.
fn one_success_type(op: &mut utoipa::openapi::path::Operation) {
    if !op.responses.responses.contains_key("202") {
        return;
    }
    op.responses.responses.remove("200");
    if let Some(params) = op.parameters.as_mut() {
        params.retain(|p| !matches!(p, RefOr::T(p) if p.name == VALIDATE_ONLY));
    }
}

/// The query parameter of [`one_success_type`]'s hidden form.
const VALIDATE_ONLY: &str = "validateOnly";

/// The OpenAPI document as served at `/openapi.json` and committed as
/// `openapi/kineticd.json`.
pub fn document() -> utoipa::openapi::OpenApi {
    let (_, doc) = router().split_for_parts();
    published(doc)
}

/// Pretty JSON of [`document`], newline-terminated (the committed file's exact bytes).
pub fn document_json() -> String {
    let mut s = document().to_pretty_json().unwrap_or_default();
    s.push('\n');
    s
}
