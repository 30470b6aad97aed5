//! The reasons each operation of the published document can answer, written into its
//! error responses: one response per HTTP status the operation can answer, whose
//! description names the reasons and whose `x-kineticd-reasons` extension lists them.
//!
//! Invariant: an operation's reasons are what its parameters imply (every route's, then
//! authentication, a body, a page token, a request id, an etag: [`implied`]) plus its
//! entry in [`TABLE`];
//! each reason's status comes from the catalogue (src/api/reasons.rs), so an operation
//! lists no status it cannot answer. The test harness (tests/common) checks every error
//! answer the tests receive against the published document, and tests/errors_doc.rs
//! that every operation has an entry and every reason listed is catalogued.

use std::collections::BTreeMap;

use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::response::Response;
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr};

use super::reasons;

/// The extension on an error response that lists its reasons (a JSON array of strings).
pub const EXTENSION: &str = "x-kineticd-reasons";

/// Every operation, the unauthenticated ones (health, metrics) included: the server
/// itself, its request deadline, and the query string as sent.
pub const EVERY: &[&str] = &["INTERNAL", "REQUEST_TIMEOUT", "UNKNOWN_QUERY_PARAMETER"];

/// Every authenticated operation: identity, the caller's limits, the database, and the
/// query string and path as sent.
pub const AUTHENTICATED: &[&str] = &[
    "BAD_DEV_USER",
    "CORRUPT_RECORD",
    "DATABASE_UNAVAILABLE",
    "INVALID_PATH",
    "INVALID_QUERY",
    "KEYS_UNAVAILABLE",
    "RATE_LIMITED",
    "TOKEN_BAD_ALGORITHM",
    "TOKEN_BAD_AUDIENCE",
    "TOKEN_BAD_EMAIL",
    "TOKEN_BAD_ISSUER",
    "TOKEN_BAD_SIGNATURE",
    "TOKEN_DUPLICATED",
    "TOKEN_EXPIRED",
    "TOKEN_MALFORMED",
    "TOKEN_MISSING",
    "TOKEN_MISSING_EMAIL",
    "TOKEN_NOT_YET_VALID",
    "TOKEN_UNKNOWN_KEY",
];

/// Every operation that is not a GET: a browser's cross-site request is refused.
pub const MUTATION: &[&str] = &["CROSS_SITE_REQUEST"];

/// Every operation with a JSON request body.
pub const BODY: &[&str] = &[
    "BAD_BODY",
    "BODY_NOT_OBJECT",
    "BODY_TOO_LARGE",
    "INVALID_FIELD",
    "MALFORMED_JSON",
    "UNKNOWN_FIELD",
    "UNSUPPORTED_MEDIA_TYPE",
];

/// Every operation with `pageToken` (AIP-158).
pub const PAGED: &[&str] = &["INVALID_PAGE_SIZE", "INVALID_PAGE_TOKEN"];

/// Every operation with `requestId` (AIP-155).
pub const REQUEST_ID: &[&str] = &["INVALID_REQUEST_ID", "REQUEST_ID_REUSED"];

/// Every operation with an `If-Match` header (AIP-154).
pub const IF_MATCH: &[&str] = &["ETAG_MISMATCH", "INVALID_ETAG"];

/// A cluster addressed by its path: the project must be one of the caller's teams'.
const CLUSTER: &[&str] = &["CLUSTER_NOT_FOUND", "INVALID_NAME", "PROJECT_NOT_FOUND"];

/// What a read of a cluster's live state (GKE, Kubernetes) can answer besides.
const LIVE: &[&str] = &[
    "CLOUD_UNAVAILABLE",
    "CLUSTER_NOT_READY",
    "GKE_CLUSTER_NOT_FOUND",
    "KUBERNETES_UNAVAILABLE",
];

/// A change that a cluster's state or a concurrent request can refuse.
const CLUSTER_CHANGE: &[&str] = &["CLUSTER_CHANGED", "CLUSTER_DELETING", "PERMISSION_DENIED"];

/// What a new node pool's description can be refused for.
const POOL_SPEC: &[&str] = &[
    "ACCELERATOR_NOT_IN_ZONE",
    "ACCELERATOR_REQUIRED",
    "CPU_POOL_NOT_ALLOWED",
    "FLEX_START_UNSUPPORTED",
    "GKE_VERSION_TOO_OLD",
    "INVALID_DRIVER_VERSION",
    "INVALID_MAX_RUN_DURATION",
    "INVALID_MIN_NODES",
    "INVALID_PARTITION_SIZE",
    "INVALID_PROVISIONING",
    "INVALID_RESERVATION",
    "INVALID_SHARING",
    "INVALID_ZONE",
    "PROVISIONING_CONFLICT",
    "QUOTA_INSUFFICIENT",
    "RESERVATION_EXHAUSTED",
    "RESERVATION_MISMATCH",
    "RESERVATION_NOT_FOUND",
    "RESERVATION_REQUIRED",
    "SPOT_CONFLICT",
    "SPOT_WITH_RESERVATION",
    "TPU_MIN_NODES_NOT_WHOLE_SLICES",
    "UNKNOWN_ACCELERATOR",
];

/// A node pool addressed by its path.
const POOL: &[&str] = &["NODE_POOL_NOT_FOUND"];

/// A team addressed by its path.
const TEAM: &[&str] = &["INVALID_NAME", "TEAM_NOT_FOUND"];

/// A webhook addressed by its path.
const WEBHOOK: &[&str] = &["WEBHOOK_NOT_FOUND"];

/// An operation addressed by its path.
const OPERATION: &[&str] = &["OPERATION_NOT_FOUND"];

/// A profile addressed by its path.
const PROFILE: &[&str] = &["INVALID_NAME", "PROFILE_NOT_FOUND"];

/// A resource path that has custom methods (`{id}:verb`): an unknown verb is 404.
const VERBS: &[&str] = &["METHOD_NOT_FOUND"];

/// A request the team's policy judges (an apply; its preview shows the verdict).
const POLICY: &[&str] = &["POLICY_VIOLATION"];

/// What `applyCluster` and its preview (`previewApplyCluster`) can answer.
const APPLY_CLUSTER: &[&[&str]] = &[
    CLUSTER,
    CLUSTER_CHANGE,
    POOL_SPEC,
    POLICY,
    &[
        "CLOUD_UNAVAILABLE",
        "INVALID_TTL",
        "NO_ACCELERATOR_POOL",
        "RESOURCE_NOT_OURS",
    ],
];

/// What `createNodePool` and its preview (`previewCreateNodePool`) can answer.
const CREATE_NODE_POOL: &[&[&str]] = &[
    CLUSTER,
    CLUSTER_CHANGE,
    POOL_SPEC,
    POLICY,
    &["CLOUD_UNAVAILABLE"],
];

/// What `deleteCluster` and its preview (`previewDeleteCluster`) can answer.
const DELETE_CLUSTER: &[&[&str]] = &[
    CLUSTER,
    CLUSTER_CHANGE,
    &["BUCKETS_NOT_EMPTY", "CLOUD_UNAVAILABLE"],
];

/// What `deleteNodePool` and its preview (`previewDeleteNodePool`) can answer.
const DELETE_NODE_POOL: &[&[&str]] = &[CLUSTER, CLUSTER_CHANGE, POOL, &["NODE_POOL_CHANGED"]];

/// What `drillNodePool` and its preview (`previewDrillNodePool`) can answer.
const DRILL_NODE_POOL: &[&[&str]] = &[
    CLUSTER,
    CLUSTER_CHANGE,
    POOL,
    &[
        "INVALID_DEADLINE",
        "INVALID_DRILL_MODE",
        "NODE_POOL_CHANGED",
        "NODE_POOL_NOT_RUNNING",
        "NO_FAILOVER_PAIR",
    ],
];

/// What `updateNodePool` and its preview (`previewUpdateNodePool`) can answer.
const UPDATE_NODE_POOL: &[&[&str]] = &[CLUSTER, CLUSTER_CHANGE, POOL, POLICY, RESIZE];

/// What approving replays: an apply, a pool add or a resize, as its requester.
const APPROVE: &[&[&str]] = &[
    OPERATION,
    CLUSTER,
    CLUSTER_CHANGE,
    POOL_SPEC,
    POOL,
    POLICY,
    RESIZE,
    DECIDE,
    &["NO_ACCELERATOR_POOL"],
];

/// Who may decide a pending operation, and whether it still waits.
const DECIDE: &[&str] = &[
    "APPROVAL_BY_REQUESTER",
    "OPERATION_NOT_PENDING_APPROVAL",
    "PERMISSION_DENIED",
];

/// A resize's own refusals.
const RESIZE: &[&str] = &[
    "FAILOVER_MAX_TOO_SMALL",
    "INVALID_MAX_NODES",
    "INVALID_MIN_NODES",
    "INVALID_UPDATE_MASK",
    "NODE_POOL_BUSY",
    "NODE_POOL_CHANGED",
    "NODE_POOL_NOT_RESIZABLE",
    "NODE_POOL_NOT_RUNNING",
    "NOTHING_TO_UPDATE",
    "PROVISIONING_CONFLICT",
    "QUOTA_INSUFFICIENT",
    "RESERVATION_EXHAUSTED",
    "RESERVATION_NOT_FOUND",
    "TPU_MAX_NODES_NOT_WHOLE_SLICES",
    "TPU_MIN_NODES_NOT_WHOLE_SLICES",
    "CLOUD_UNAVAILABLE",
];

/// Each operation's own reasons, by operationId (besides [`implied`]). A reason written
/// `REASON=STATUS` is answered with that HTTP status by this operation rather than its
/// code's (e.g. UNKNOWN_ACCELERATOR is 404 where the accelerator is the resource read).
pub const TABLE: &[(&str, &[&[&str]])] = &[
    ("activateProfile", &[PROFILE]),
    ("applyCluster", APPLY_CLUSTER),
    ("previewApplyCluster", APPLY_CLUSTER),
    ("cancelOperation", &[OPERATION, &["PERMISSION_DENIED"]]),
    ("approveOperation", APPROVE),
    ("rejectOperation", &[OPERATION, DECIDE]),
    ("getTeamPolicy", &[TEAM]),
    ("evaluateTeamPolicy", &[TEAM]),
    (
        "searchPlacements",
        &[TEAM, &["INVALID_PLACEMENT_QUERY", "UNKNOWN_ACCELERATOR"]],
    ),
    (
        "getTeamUsage",
        &[TEAM, &["CLOUD_UNAVAILABLE", "INVALID_USAGE_QUERY"]],
    ),
    (
        "updateTeamPolicy",
        &[
            TEAM,
            &[
                "ETAG_CONFLICTING",
                "INVALID_POLICY",
                "INVALID_UPDATE_MASK",
                "PERMISSION_DENIED",
            ],
        ],
    ),
    (
        "checkWorkload",
        &[
            CLUSTER,
            LIVE,
            &["INVALID_WORKLOAD", "MALFORMED_YAML", "UNSUPPORTED_KIND"],
        ],
    ),
    ("createNodePool", CREATE_NODE_POOL),
    ("previewCreateNodePool", CREATE_NODE_POOL),
    (
        "createTeam",
        &[&[
            "CLOUD_UNAVAILABLE",
            "INVALID_DISPLAY_NAME",
            "INVALID_NAME",
            "INVALID_PROJECT",
            "PROJECT_CLAIMED",
            "PROJECT_OWNERSHIP_REQUIRED",
            "PROJECT_POLICY_UNREADABLE",
            "TEAM_EXISTS",
        ]],
    ),
    ("deleteCluster", DELETE_CLUSTER),
    ("previewDeleteCluster", DELETE_CLUSTER),
    (
        "deleteMember",
        &[
            TEAM,
            &["LAST_OWNER", "MEMBER_NOT_FOUND", "PERMISSION_DENIED"],
        ],
    ),
    ("deleteNodePool", DELETE_NODE_POOL),
    ("previewDeleteNodePool", DELETE_NODE_POOL),
    ("deleteProfile", &[PROFILE]),
    (
        "deleteTeam",
        &[TEAM, &["PERMISSION_DENIED", "TEAM_HAS_CLUSTERS"]],
    ),
    ("diagnoseCluster", &[CLUSTER, &["INVALID_TIMEOUT"]]),
    ("drillNodePool", DRILL_NODE_POOL),
    ("syncClusterAccess", &[CLUSTER, &["PERMISSION_DENIED"]]),
    (
        "snoozeCluster",
        &[
            CLUSTER,
            &[
                "CLOUD_UNAVAILABLE",
                "INVALID_SNOOZE",
                "PERMISSION_DENIED",
                "SNOOZE_TOO_LONG",
            ],
        ],
    ),
    (
        "snoozeNodePool",
        &[
            CLUSTER,
            &[
                "CLOUD_UNAVAILABLE",
                "INVALID_SNOOZE",
                "NODE_POOL_NOT_FOUND",
                "PERMISSION_DENIED",
                "SNOOZE_TOO_LONG",
            ],
        ],
    ),
    (
        "importNodePool",
        &[
            CLUSTER,
            &[
                "CLOUD_UNAVAILABLE",
                "NODE_POOL_NOT_FOUND",
                "NODE_POOL_NOT_IMPORTABLE",
                "NODE_POOL_RECORDED",
                "PERMISSION_DENIED",
                "RESOURCE_NOT_OURS",
            ],
        ],
    ),
    ("previewDrillNodePool", DRILL_NODE_POOL),
    ("getAccelerator", &[&["UNKNOWN_ACCELERATOR=404"]]),
    ("getCaller", &[]),
    ("getCluster", &[CLUSTER, VERBS]),
    ("getClusterCapacity", &[CLUSTER, LIVE]),
    (
        "getClusterCredentials",
        &[
            CLUSTER,
            &[
                "CLOUD_UNAVAILABLE",
                "CLUSTER_NOT_READY",
                "CLUSTER_STATE_NOT_RUNNING",
                "GKE_CLUSTER_NOT_FOUND",
            ],
        ],
    ),
    ("getClusterStatus", &[CLUSTER, LIVE]),
    ("getHealth", &[]),
    ("getMetrics", &[]),
    ("getNodePool", &[CLUSTER, POOL, VERBS]),
    ("getOperation", &[OPERATION, VERBS]),
    ("getProfile", &[PROFILE, VERBS]),
    ("getReadiness", &[&["NOT_READY"]]),
    ("getTeam", &[TEAM, VERBS]),
    ("discoverClusters", &[TEAM]),
    ("listAccelerators", &[]),
    ("listClusterAccelerators", &[CLUSTER]),
    (
        "listClusters",
        &[&["INVALID_FILTER", "INVALID_NAME", "TEAM_NOT_FOUND"]],
    ),
    ("listEvents", &[&["INVALID_FILTER", "PERMISSION_DENIED"]]),
    ("listMembers", &[TEAM]),
    ("listNodePools", &[CLUSTER]),
    ("listOperations", &[&["INVALID_FILTER"]]),
    ("listProfiles", &[]),
    (
        "listProjectClusters",
        &[&["INVALID_FILTER", "INVALID_NAME", "PROJECT_NOT_FOUND"]],
    ),
    ("listTeamEvents", &[TEAM, &["INVALID_FILTER"]]),
    (
        "createWebhook",
        &[
            TEAM,
            &[
                "INVALID_WEBHOOK",
                "PERMISSION_DENIED",
                "WEBHOOK_LIMIT_REACHED",
                "WEBHOOK_URL_REFUSED",
            ],
        ],
    ),
    ("listWebhooks", &[TEAM]),
    ("getWebhook", &[TEAM, WEBHOOK]),
    ("deleteWebhook", &[TEAM, WEBHOOK, &["PERMISSION_DENIED"]]),
    ("listWebhookDeliveries", &[TEAM, WEBHOOK]),
    ("listTeams", &[]),
    (
        "replaceMember",
        &[TEAM, &["INVALID_NAME", "LAST_OWNER", "PERMISSION_DENIED"]],
    ),
    (
        "replaceProfile",
        &[&[
            "CLUSTER_NOT_FOUND",
            "INVALID_CLUSTER_NAME",
            "INVALID_NAME",
            "INVALID_NAMESPACE",
            "PROJECT_NOT_FOUND",
        ]],
    ),
    ("updateNodePool", UPDATE_NODE_POOL),
    ("previewUpdateNodePool", UPDATE_NODE_POOL),
    (
        "updateTeam",
        &[
            TEAM,
            &[
                "CLOUD_UNAVAILABLE",
                "ETAG_CONFLICTING",
                "INVALID_DISPLAY_NAME",
                "INVALID_PROJECT",
                "INVALID_UPDATE_MASK",
                "PERMISSION_DENIED",
                "PROJECT_CLAIMED",
                "PROJECT_HAS_CLUSTERS",
                "PROJECT_OWNERSHIP_REQUIRED",
                "PROJECT_POLICY_UNREADABLE",
            ],
        ],
    ),
    (
        "waitOperation",
        &[OPERATION, &["INVALID_TIMEOUT", "TOO_MANY_WATCHES"]],
    ),
    ("watchOperation", &[OPERATION, &["TOO_MANY_WATCHES"]]),
];

/// The table entry of `operation_id`.
pub fn entry(operation_id: &str) -> Option<&'static [&'static [&'static str]]> {
    TABLE
        .iter()
        .find(|(id, _)| *id == operation_id)
        .map(|(_, r)| *r)
}

/// `REASON` or `REASON=STATUS` as the reason and its HTTP status for the operation.
pub fn parse(item: &str) -> (&str, Option<u16>) {
    match item.split_once('=') {
        Some((r, s)) => (r, s.parse().ok()),
        None => (item, None),
    }
}

/// The reasons `op` implies by its parameters and security alone.
pub fn implied(method: &str, op: &Operation) -> Vec<&'static str> {
    let authenticated = op.security.as_ref().is_none_or(|s| !s.is_empty());
    let params: Vec<(&ParameterIn, &str)> = op
        .parameters
        .iter()
        .flatten()
        .filter_map(|p| match p {
            RefOr::T(p) => Some((&p.parameter_in, p.name.as_str())),
            RefOr::Ref(_) => None,
        })
        .collect();
    let has = |loc: fn(&ParameterIn) -> bool, name: &str| {
        params.iter().any(|(l, n)| loc(l) && *n == name)
    };
    let query = |l: &ParameterIn| matches!(l, ParameterIn::Query);
    let header = |l: &ParameterIn| matches!(l, ParameterIn::Header);
    let mut out = Vec::new();
    for (applies, set) in [
        (true, EVERY),
        (authenticated, AUTHENTICATED),
        (authenticated && method != "get", MUTATION),
        (op.request_body.is_some(), BODY),
        (has(query, "pageToken"), PAGED),
        (has(query, "requestId"), REQUEST_ID),
        (has(header, "If-Match"), IF_MATCH),
    ] {
        if applies {
            out.extend_from_slice(set);
        }
    }
    out
}

/// Every reason `op` (operationId `id`, HTTP method `method` in lower case) can answer,
/// with the HTTP status it answers each with; sorted by status, then reason.
pub fn reasons_of(id: &str, method: &str, op: &Operation) -> BTreeMap<u16, Vec<&'static str>> {
    let own = entry(id).unwrap_or_default().iter().flat_map(|s| s.iter());
    let mut by_status: BTreeMap<u16, Vec<&'static str>> = BTreeMap::new();
    for item in implied(method, op).into_iter().chain(own.copied()) {
        let (reason, status) = parse(item);
        let Some(doc) = reasons::find(reason) else {
            continue; // tests/errors_doc.rs fails on it
        };
        let status = status.unwrap_or_else(|| doc.http());
        let list = by_status.entry(status).or_default();
        if !list.contains(&doc.reason) {
            list.push(doc.reason);
        }
    }
    for list in by_status.values_mut() {
        list.sort_unstable();
    }
    by_status
}

/// The error response of status `status` listing `reasons`.
fn error_response(status: u16, reasons: &[&str]) -> Response {
    let mut codes: Vec<&str> = reasons
        .iter()
        .filter_map(|r| reasons::find(r))
        .map(|d| d.code.name())
        .collect();
    codes.dedup();
    codes.sort_unstable();
    codes.dedup();
    let listed = reasons
        .iter()
        .map(|r| format!("`{r}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut r = Response::new(format!(
        "{} ({}). Reasons: {listed}.",
        codes.join(" / "),
        status_phrase(status)
    ));
    r.content.insert(
        "application/json".to_owned(),
        RefOr::T(
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        ),
    );
    r.extensions = Some(ExtensionsBuilder::new().add(EXTENSION, reasons).build());
    r
}

fn status_phrase(status: u16) -> &'static str {
    axum::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("error")
}

/// `doc` with every operation's error responses (4xx, 5xx) replaced by one per status
/// it can answer, listing the reasons.
pub fn listed(mut doc: OpenApi) -> OpenApi {
    apply(&mut doc);
    doc
}

fn apply(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        for (method, op) in [
            ("get", &mut item.get),
            ("put", &mut item.put),
            ("post", &mut item.post),
            ("delete", &mut item.delete),
            ("patch", &mut item.patch),
        ] {
            let Some(op) = op.as_mut() else { continue };
            let id = op.operation_id.clone().unwrap_or_default();
            let by_status = reasons_of(&id, method, op);
            op.responses
                .responses
                .retain(|status, _| !status.starts_with('4') && !status.starts_with('5'));
            for (status, reasons) in by_status {
                op.responses.responses.insert(
                    status.to_string(),
                    RefOr::T(error_response(status, &reasons)),
                );
            }
        }
    }
}
