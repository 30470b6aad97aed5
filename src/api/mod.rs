//! HTTP surface: extract, authenticate, call the service, render. Handlers hold no
//! business rules and no SQL.
//!
//! Invariant: every route's behaviour and schema are described by the OpenAPI document
//! built in [`openapi`]; `openapi/kineticd.json` is that document, checked by a test.

/// Declares a `List...Response`: one page of `$item`s under `$field`, and the token of
/// the next page (absent on the last one), made from the service's [`Page`].
///
/// [`Page`]: crate::service::Page
macro_rules! list_response {
    ($name:ident, $field:ident: $item:ty) => {
        #[derive(Debug, serde::Serialize, utoipa::ToSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            pub $field: Vec<$item>,
            /// Absent on the last page.
            #[serde(skip_serializing_if = "Option::is_none")]
            #[schema(nullable = false)]
            pub next_page_token: Option<String>,
        }

        impl From<crate::service::Page<$item>> for $name {
            fn from(page: crate::service::Page<$item>) -> Self {
                $name {
                    $field: page.items,
                    next_page_token: page.next_page_token,
                }
            }
        }
    };
}

pub mod accelerators;
pub mod adopt;
pub mod audit;
pub mod auth;
pub mod call;
pub mod capacity;
pub mod check_workload;
pub mod cluster_verbs;
pub mod clusters;
pub mod credentials;
pub mod cross_site;
pub mod diagnose;
pub mod docs;
pub mod drill;
pub mod error;
pub mod events;
pub mod extract;
pub mod gate;
pub mod health;
pub mod idempotency;
pub mod limits;
pub mod metrics;
pub mod openapi;
pub mod openapi30;
pub mod operation_union;
pub mod operations;
pub mod panic;
pub mod placements;
pub mod policy;
pub mod pool_verbs;
pub mod preview;
pub mod profiles;
pub mod provision;
pub mod query_rules;
pub mod reasons;
pub mod resize;
pub mod route_reasons;
pub mod route_table;
pub mod snooze;
pub mod state;
pub mod status;
pub mod sync_access;
pub mod teams;
pub mod testing;
pub mod usage;
pub mod verbs;
pub mod webhooks;

use serde::Deserialize;
use utoipa::IntoParams;

use crate::service::PageRequest;
use crate::service::page::PageKey;

/// `?pageSize=&pageToken=` (AIP-158).
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Results per page: default 50, at most 1000 (larger values are lowered).
    pub page_size: Option<i32>,
    /// `nextPageToken` of the previous page.
    pub page_token: Option<String>,
}

impl PageQuery {
    /// The service's page request; tokens are checked against `key`.
    pub fn request(&self, key: &PageKey) -> PageRequest {
        PageRequest {
            size: self.page_size.map(i64::from),
            token: self.page_token.clone(),
            key: key.clone(),
        }
    }
}

/// The path of a cluster (for the document; handlers read it with `ClusterAt`).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // never built: only its parameters are used
pub struct ClusterParams {
    project: String,
    zone: String,
    cluster: String,
}

/// The path of a node pool (for the document; handlers read it with `PoolAt`).
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)] // never built: only its parameters are used
pub struct PoolParams {
    project: String,
    zone: String,
    cluster: String,
    pool: String,
}

/// The `If-Match` header (AIP-154): the etag last read; a stale one is 409 ABORTED.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IfMatchHeader {
    #[serde(rename = "If-Match")]
    pub if_match: Option<String>,
}
