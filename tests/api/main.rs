//! API integration tests: the real app over HTTP against a real PostgreSQL.

#[path = "../common/mod.rs"]
mod common;
#[path = "../serve_process/journal.rs"]
mod sim_journal;

mod accelerators;
mod auth_matrix;
mod basics;
mod capacity;
mod capacity_sharing;
mod check_workload;
mod clusters;
mod connections;
mod console_limits;
mod conventions;
mod corrupt;
mod credentials;
mod cross_site;
mod etag_lock;
mod events;
mod hostile;
mod iap_http;
mod identity_input;
mod keyset;
mod limits;
mod members;
mod pagination;
mod placements;
mod profiles;
mod project_claims;
mod query_params;
mod request_ids;
mod roles;
mod service;
mod status;
mod support;
mod teams;
mod updates;
mod webhooks;
