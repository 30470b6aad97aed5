//! The OpenAPI document, generated from the handlers' annotations (utoipa). Custom
//! methods (`:verb`) are dispatched by one route per resource but documented as their
//! own paths here.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};
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
        super::operations::get_operation,
        super::operations::watch_operation,
        super::operations::cancel_operation,
        super::operations::wait_operation,
        super::drill::drill_node_pool
    ),
    components(schemas(ErrorBody, crate::model::drill::DrillReport)),
    modifiers(&Security),
    security(("iap" = [])),
    tags(
        (name = "identity", description = "The caller"),
        (name = "teams", description = "Teams and members"),
        (name = "profiles", description = "Per-caller pointers at clusters"),
        (name = "clusters", description = "Cluster records"),
        (name = "nodePools", description = "Node pool records"),
        (name = "accelerators", description = "The GPU and TPU catalog"),
        (name = "operations", description = "Long-running operations (AIP-151)"),
        (name = "testing", description = "Engine test workflow (development and test mode only)"),
        (name = "service", description = "Health, readiness, metrics")
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "iap",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                crate::auth::IAP_HEADER,
                "Identity-Aware Proxy signed JWT (production). In development mode the \
                 X-Kinetic-User header names the caller instead.",
            ))),
        );
    }
}

/// Every documented route, with the document.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(super::health::router())
        .routes(utoipa_axum::routes!(super::metrics::metrics_text))
        .merge(super::teams::router())
        .merge(super::profiles::router())
        .merge(super::clusters::router())
        .merge(super::accelerators::router())
        .merge(super::status::router())
        .merge(super::capacity::router())
        .merge(super::cluster_verbs::router())
        .merge(super::operations::router())
        .merge(super::testing::router())
}

/// The OpenAPI document as served at `/openapi.json` and committed as
/// `openapi/kineticd.json`.
pub fn document() -> utoipa::openapi::OpenApi {
    let (_, mut doc) = router().split_for_parts();
    doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
    doc
}

/// Pretty JSON of [`document`], newline-terminated (the committed file's exact bytes).
pub fn document_json() -> String {
    let mut s = document().to_pretty_json().unwrap_or_default();
    s.push('\n');
    s
}
