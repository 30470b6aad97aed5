//! The reason catalogue: every ErrorInfo `reason` kineticd answers (in an error response,
//! a console page, or a failed operation's `error`), with its google.rpc code, when it
//! happens, the metadata keys it carries and what the caller should do. `kineticd
//! errors-reference` prints it as docs/errors.md.
//!
//! Invariant: [`CATALOGUE`] is sorted by reason, has one entry per reason, and holds
//! exactly the reason literals that code under src/ can emit (the simulator and the
//! cloud clients aside: a cloud's reasons are mapped to these where a step fails, by
//! `ops::steps::cloud_reason`, and kept in `cloudReason`);
//! tests/errors_doc.rs scans the sources and fails on a reason missing here or an entry
//! no code emits. The HTTP status is derived from the code ([`http_status`]) except for
//! the few answers `ApiError::new` makes with a status no code maps to.

use crate::api::error::http_status;
use crate::domain::RpcCode;

/// Where a reason reaches the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// An error response of the API (and, where the console calls the same service, a
    /// console page).
    Response,
    /// The `error` of a failed operation (`GET /v1/operations/{id}`).
    Operation,
    /// Both an error response and a failed operation's `error`.
    Both,
    /// A web console page only.
    Console,
}

impl Seen {
    pub fn label(self) -> &'static str {
        match self {
            Seen::Response => "response",
            Seen::Operation => "operation",
            Seen::Both => "response, operation",
            Seen::Console => "console",
        }
    }
}

/// One reason's documentation.
#[derive(Debug, Clone, Copy)]
pub struct ReasonDoc {
    /// The ErrorInfo `reason`, e.g. `CLUSTER_NOT_FOUND`.
    pub reason: &'static str,
    /// The google.rpc code it is answered with (the usual one where sites differ; `when`
    /// says so).
    pub code: RpcCode,
    pub seen: Seen,
    /// The HTTP status, only where it is not `http_status(code)`: `ApiError::new` with a
    /// status that no google.rpc code stands for (405, 413, 415).
    pub http_override: Option<u16>,
    /// The ErrorInfo metadata keys it carries (besides `step` on every failed step).
    pub metadata: &'static [&'static str],
    /// When it happens (one sentence).
    pub when: &'static str,
    /// What the caller should do (one sentence).
    pub fix: &'static str,
}

impl ReasonDoc {
    /// The HTTP status of a response with this reason.
    pub fn http(&self) -> u16 {
        self.http_override
            .unwrap_or_else(|| http_status(self.code).as_u16())
    }
}

/// The catalogue entry of `reason`.
pub fn find(reason: &str) -> Option<&'static ReasonDoc> {
    CATALOGUE
        .binary_search_by(|d| d.reason.cmp(reason))
        .ok()
        .map(|i| &CATALOGUE[i])
}

const fn e(
    reason: &'static str,
    code: RpcCode,
    seen: Seen,
    metadata: &'static [&'static str],
    when: &'static str,
    fix: &'static str,
) -> ReasonDoc {
    ReasonDoc {
        reason,
        code,
        seen,
        http_override: None,
        metadata,
        when,
        fix,
    }
}

/// `d` answered with HTTP status `http`.
const fn with_http(d: ReasonDoc, http: u16) -> ReasonDoc {
    ReasonDoc {
        http_override: Some(http),
        ..d
    }
}

use RpcCode::{
    Aborted, AlreadyExists, Cancelled, DeadlineExceeded, FailedPrecondition, Internal,
    InvalidArgument, NotFound, PermissionDenied, ResourceExhausted, Unauthenticated, Unavailable,
    Unimplemented, Unknown,
};
use Seen::{Both, Console, Operation, Response};

/// The metadata of an error a cloud API (Google's, or a cluster's Kubernetes API)
/// answered a step with: the call, and the cloud's own reason and message.
const CLOUD_CALL: &[&str] = &[
    "service",
    "method",
    "httpStatus",
    "cloudReason",
    "cloudMessage",
];

/// Reasons renamed into another (old, new), answered under the new one with the old in
/// `deprecatedReason` until the next release. An old spelling made from a cloud's reason
/// (`GKE_{status}`, or any reason a cloud answered) is not listed: it is `cloudReason`.
pub const ALIASES: &[(&str, &str)] = &[
    ("BUCKET_CHECK_FAILED", "CLOUD_UNAVAILABLE"),
    ("BUCKET_NOT_EMPTY", "BUCKETS_NOT_EMPTY"),
    ("CLUSTER_NOT_RUNNING", "CLUSTER_NOT_READY"),
    ("CLUSTER_NO_ENDPOINT", "CLUSTER_NOT_READY"),
    ("GCE_QUOTA_EXCEEDED", "QUOTA_INSUFFICIENT"),
    ("GCE_STOCKOUT", "ZONE_RESOURCE_EXHAUSTED"),
    ("GKE_UNAVAILABLE", "CLOUD_UNAVAILABLE"),
    ("LRO_DEADLINE_EXCEEDED", "CLOUD_UNAVAILABLE"),
    ("QUOTA_EXCEEDED", "QUOTA_INSUFFICIENT"),
    ("TRANSPORT", "CLOUD_UNAVAILABLE"),
    ("ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_EXHAUSTED"),
];

/// Every reason, sorted by reason.
pub const CATALOGUE: &[ReasonDoc] = &[
    e(
        "ACCELERATOR_NOT_IN_ZONE",
        InvalidArgument,
        Response,
        &["accelerator", "zone", "region", "zones"],
        "The zone asked for does not offer the accelerator (Compute Engine's accelerator types say so).",
        "Pick one of the zones listed in `zones`, or another accelerator.",
    ),
    e(
        "ACCELERATOR_REQUIRED",
        InvalidArgument,
        Response,
        &[],
        "Creating a cluster or adding a node pool without an `accelerator`.",
        "Send `accelerator` (GET /v1/accelerators lists them; `cpu` for a cluster without one).",
    ),
    e(
        "ACCESS_SYNC_FORBIDDEN",
        PermissionDenied,
        Operation,
        &["resource", "permission"],
        "A SYNC_ACCESS operation could not read or set the IAM policy of a project, bucket, repository or service account: kineticd's service account lacks the permission `permission` names (access already granted is unchanged).",
        "Grant kineticd's service account a role with that permission (deploy/README.md lists them), then POST .../clusters/{c}:syncAccess.",
    ),
    e(
        "ALREADY_APPLIED",
        AlreadyExists,
        Console,
        &[],
        "A console preview's Apply was sent again after its request id had already been applied.",
        "Open the cluster page to follow the operation already started; preview again for a new change.",
    ),
    e(
        "APPROVAL_BY_REQUESTER",
        PermissionDenied,
        Response,
        &[],
        "An ADMIN or OWNER tried to approve or reject an operation they requested themselves.",
        "Ask another ADMIN or OWNER of the team to decide it.",
    ),
    e(
        "APPROVAL_EXPIRED",
        Cancelled,
        Operation,
        &[],
        "Nobody approved or rejected the request within the approval period (KINETIC_APPROVAL_TTL_SECONDS, 7 days by default): the operation ended CANCELLED.",
        "Send the request again, and ask an ADMIN or OWNER to decide it sooner.",
    ),
    e(
        "APPROVAL_REJECTED",
        Cancelled,
        Operation,
        &["rejectedBy", "comment"],
        "An ADMIN or OWNER rejected the request (its comment is in the message and metadata): the operation ended CANCELLED and nothing was changed.",
        "Read the comment; change the request (or the team's policy) and send it again.",
    ),
    e(
        "BACKEND_UNAVAILABLE",
        Unavailable,
        Operation,
        &[],
        "A test (noop) operation's step failed on purpose with a retryable error.",
        "Nothing: it is retried; it only exists on servers with test workflows enabled.",
    ),
    e(
        "BAD_BODY",
        InvalidArgument,
        Response,
        &[],
        "The request body could not be read (for example the connection broke while sending it).",
        "Send the request again with a complete body.",
    ),
    e(
        "BAD_DEV_USER",
        Unauthenticated,
        Response,
        &[],
        "In development mode the `x-kinetic-dev-user` header (or the console's sign-in form, as 400) is not an email address.",
        "Send a printable-ASCII email address such as alice@example.com.",
    ),
    e(
        "BAD_FORM",
        InvalidArgument,
        Console,
        &[],
        "A console form post could not be decoded (wrong content type, too large, or not form-encoded).",
        "Submit the form from the console page again.",
    ),
    e(
        "BAD_OPERATION_INPUT",
        Internal,
        Operation,
        &[],
        "An operation's stored input could not be decoded or lacks what a step needs (a bug or an incompatible server version).",
        "Report it with the operation id; start a new operation from a current server.",
    ),
    e(
        "BAD_STEP_RESULT",
        Internal,
        Operation,
        &[],
        "A step's stored result could not be written or read back (a bug or an incompatible server version).",
        "Report it with the operation id; run the command again.",
    ),
    e(
        "BODY_NOT_OBJECT",
        InvalidArgument,
        Response,
        &[],
        "The request body is valid JSON or YAML but not an object (a scalar or a list).",
        "Send one JSON object (or, for checkWorkload, one YAML mapping).",
    ),
    with_http(
        e(
            "BODY_TOO_LARGE",
            InvalidArgument,
            Response,
            &[],
            "The request body is larger than the 1 MiB limit.",
            "Send a smaller body.",
        ),
        413,
    ),
    e(
        "BUCKETS_NOT_EMPTY",
        FailedPrecondition,
        Both,
        &["buckets", "bucket"],
        "`down` of a cluster with `forceDestroy: false` whose buckets still hold objects: refused before the operation starts, or found by its bucket deletion (`bucket`, kept one release, names the same bucket as `buckets`).",
        "Empty the buckets listed in `buckets` (`gcloud storage rm -r gs://BUCKET/**`), or PUT the cluster with `forceDestroy: true`, then run down again.",
    ),
    e(
        "CANCELLED",
        Cancelled,
        Operation,
        &[],
        "The operation was cancelled by request (or a drill or Kubernetes wait it ran was).",
        "Nothing; start the operation again if it is still wanted.",
    ),
    e(
        "CLOUD_ABORTED",
        Aborted,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API reported a concurrent change (an etag conflict) and retries did not get past it.",
        "Run the command again.",
    ),
    e(
        "CLOUD_ALREADY_EXISTS",
        AlreadyExists,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API refused to create something that exists and that the step could not adopt.",
        "Read `cloudMessage`; remove or rename the conflicting resource, then run the command again.",
    ),
    e(
        "CLOUD_ERROR",
        Unknown,
        Operation,
        CLOUD_CALL,
        "A Google API failed a step with an error of no known kind (for example a long-running operation without an error code).",
        "Read `cloudMessage`, then run the command again; report it if it persists.",
    ),
    e(
        "CLOUD_FAILED_PRECONDITION",
        FailedPrecondition,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API refused a step because of the state of a resource (Google's reason in `cloudReason`).",
        "Read `cloudMessage`, fix the resource's state, then run the command again.",
    ),
    e(
        "CLOUD_INVALID_ARGUMENT",
        InvalidArgument,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API refused a request kineticd made as invalid (Google's reason in `cloudReason`).",
        "Report it with the operation id and `cloudMessage`.",
    ),
    e(
        "CLOUD_NOT_FOUND",
        NotFound,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API did not find something a step needed (for example a resource deleted outside kineticd).",
        "Read `cloudMessage`; run up again to recreate what is missing.",
    ),
    e(
        "CLOUD_PERMISSION_DENIED",
        PermissionDenied,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API refused kineticd's service account (missing role, API disabled: `cloudReason` says which, for example SERVICE_DISABLED).",
        "Grant kineticd's service account the role `cloudMessage` names, or enable the API, then run the command again.",
    ),
    e(
        "CLOUD_RATE_LIMITED",
        ResourceExhausted,
        Operation,
        CLOUD_CALL,
        "A Google or Kubernetes API kept refusing kineticd's calls for their rate (not quota) beyond the step's retries.",
        "Run the command again later.",
    ),
    e(
        "CLOUD_UNAVAILABLE",
        Unavailable,
        Both,
        &[
            "project",
            "service",
            "method",
            "httpStatus",
            "cloudReason",
            "cloudMessage",
            "retryAfterSeconds",
        ],
        "A Google API kineticd needed (IAM policy, Compute Engine, GKE, Storage, the cluster's resources) failed, timed out or could not be reached; a request changed nothing, a step is retried first.",
        "Retry (after `retryAfterSeconds` where given); if it persists, check `cloudReason` and kineticd's access to the project.",
    ),
    e(
        "CLUSTER_CHANGED",
        Aborted,
        Response,
        &[],
        "The cluster was created or changed by a concurrent request while this one was prepared.",
        "Send the request again.",
    ),
    e(
        "CLUSTER_DELETING",
        FailedPrecondition,
        Response,
        &[],
        "The cluster is being deleted by a DOWN_CLUSTER operation.",
        "Wait for the down operation to finish (GET /v1/operations?filter=target=...), then create the cluster again if wanted.",
    ),
    e(
        "CLUSTER_NOT_FOUND",
        NotFound,
        Response,
        &["cluster"],
        "No cluster of this name belongs to a team you are a member of.",
        "Check the name (GET /v1/projects/P/zones/Z/clusters lists them) or create it with PUT.",
    ),
    e(
        "CLUSTER_NOT_READY",
        Unavailable,
        Both,
        &["retryAfterSeconds"],
        "The GKE cluster is not RUNNING or has no endpoint yet (a live read such as capacity or checkWorkload answers it with Retry-After; a step is retried).",
        "Retry once the cluster is RUNNING (after `retryAfterSeconds`); if an operation fails with it, check the cluster in GKE and run up again.",
    ),
    e(
        "CLUSTER_STATE_NOT_RUNNING",
        FailedPrecondition,
        Response,
        &["cluster", "state"],
        "Credentials were asked for a cluster that is not RUNNING (or RECONCILING): it is being created, being deleted, deleted or in ERROR.",
        "Wait for the cluster's operation to finish (GET /v1/operations?filter=target=...), or run up to repair it, then ask again.",
    ),
    e(
        "CORRUPT_RECORD",
        Internal,
        Both,
        &[],
        "A stored record could not be decoded (the server log names the table, row and column).",
        "Report it with the x-request-id or operation id; an operator must repair the record.",
    ),
    e(
        "CPU_POOL_NOT_ALLOWED",
        InvalidArgument,
        Response,
        &[],
        "Adding a node pool with `accelerator: cpu`: the cluster's default pool runs CPU work.",
        "Choose a GPU or TPU accelerator (GET /v1/accelerators).",
    ),
    e(
        "CROSS_SITE_REQUEST",
        PermissionDenied,
        Response,
        &[],
        "A mutation of /v1/ came from another site's page (its Origin or Sec-Fetch-Site says so).",
        "Send API changes from scripts, API clients or kineticd's own pages, not from another site.",
    ),
    e(
        "CSRF_CHECK_FAILED",
        PermissionDenied,
        Console,
        &[],
        "A console form's token does not match the session (an old page, or a post from elsewhere).",
        "Reload the console page and submit the form again.",
    ),
    e(
        "DATABASE_UNAVAILABLE",
        Unavailable,
        Both,
        &["retryAfterSeconds"],
        "The database is down, restarting or has no free connection (a step is retried).",
        "Retry after `retryAfterSeconds` (the response's Retry-After).",
    ),
    e(
        "DEADLINE_EXCEEDED",
        DeadlineExceeded,
        Operation,
        &[],
        "The operation ran longer than its deadline and was stopped.",
        "Look at the step that was running, then run the command again.",
    ),
    e(
        "DRILL_DEADLINE_EXCEEDED",
        DeadlineExceeded,
        Operation,
        &[
            "report",
            "timeline",
            "podsAffected",
            "podsNeverRecovered",
            "fallbackNodesAdded",
        ],
        "A failover drill's pods did not run again (or the spot pool did not come back) within the drill's deadline.",
        "Read `report` and `timeline`; fix the fallback pool (size, quota) or give a longer `deadline`.",
    ),
    e(
        "ETAG_CONFLICTING",
        InvalidArgument,
        Response,
        &[],
        "The If-Match header and the body's `etag` differ.",
        "Send the etag in one of them only.",
    ),
    e(
        "ETAG_MISMATCH",
        Aborted,
        Response,
        &["etag"],
        "The resource changed since the etag sent was read.",
        "Read the resource again and retry the change with its current etag.",
    ),
    e(
        "FAILOVER_MAX_TOO_SMALL",
        InvalidArgument,
        Response,
        &[],
        "Resizing an on-demand fallback pool to a maxNodes below its spot pool's.",
        "Give the fallback pool a maxNodes at least the spot pool's, or resize the spot pool first.",
    ),
    e(
        "FLEX_START_UNSUPPORTED",
        InvalidArgument,
        Response,
        &["provisioning", "accelerator"],
        "FLEX_START or QUEUED provisioning asked for an accelerator that does not support it.",
        "Ask for ON_DEMAND or SPOT, or for an accelerator that supports the mode.",
    ),
    e(
        "GKE_CLUSTER_NOT_FOUND",
        FailedPrecondition,
        Response,
        &[],
        "A live read found the cluster recorded but GKE has no such cluster.",
        "Run up (PUT the cluster) to create it again.",
    ),
    e(
        "GKE_RESOURCE_BROKEN",
        FailedPrecondition,
        Operation,
        &["resource", "gkeStatus"],
        "A GKE cluster or node pool kineticd waited for settled in a state other than RUNNING (`gkeStatus`, for example STOPPING or DEGRADED).",
        "Delete it (down, or pool remove), then run the command again.",
    ),
    e(
        "GKE_VERSION_TOO_OLD",
        InvalidArgument,
        Both,
        &["currentMasterVersion", "minimumVersion", "provisioning"],
        "The cluster's GKE version is too old for what was asked (failover pairs, flex-start, GPU sharing); FAILED_PRECONDITION when a step finds it.",
        "Upgrade the cluster (`gcloud container clusters upgrade --master`), or ask without that feature.",
    ),
    e(
        "INTERNAL",
        Internal,
        Response,
        &["requestId"],
        "An unexpected error or a handler panic; the cause is in the server log only.",
        "Report it with the x-request-id (`requestId`).",
    ),
    e(
        "INVALID_CLUSTER_NAME",
        InvalidArgument,
        Response,
        &[],
        "A profile names a cluster that is not `projects/PROJECT/zones/ZONE/clusters/CLUSTER`.",
        "Send the cluster's full resource name.",
    ),
    e(
        "INVALID_DEADLINE",
        InvalidArgument,
        Response,
        &["deadline"],
        "A drill's `deadline` is not a duration between 1s and the maximum.",
        "Send a duration like \"900s\".",
    ),
    e(
        "INVALID_DISPLAY_NAME",
        InvalidArgument,
        Response,
        &[],
        "A team's displayName is longer than 100 characters or holds control characters.",
        "Send a shorter name without control characters.",
    ),
    e(
        "INVALID_DRILL_MODE",
        InvalidArgument,
        Response,
        &["mode"],
        "A drill's `mode` is not RECLAIM_NODES or DELETE_POOL.",
        "Send RECLAIM_NODES (the default) or DELETE_POOL.",
    ),
    e(
        "INVALID_DRIVER_VERSION",
        InvalidArgument,
        Response,
        &[],
        "`driverVersion` is not DEFAULT, LATEST or INSTALLATION_DISABLED, or was given for a TPU pool.",
        "Send one of those values, for GPU pools only.",
    ),
    e(
        "INVALID_ETAG",
        InvalidArgument,
        Response,
        &[],
        "The If-Match header is not an etag.",
        "Send the etag exactly as the resource's `etag` field gives it.",
    ),
    e(
        "INVALID_FIELD",
        InvalidArgument,
        Response,
        &[],
        "A field of the JSON body has the wrong type or value (the message names it and its position).",
        "Fix the field as the message says (the OpenAPI document gives each field's type).",
    ),
    e(
        "INVALID_FILTER",
        InvalidArgument,
        Response,
        &[],
        "A list's `filter` (or `state`) is not one it understands.",
        "Use terms like `done=false AND type=UP_CLUSTER AND target=\"projects/p/zones/z/clusters/c\"`.",
    ),
    e(
        "INVALID_MAX_NODES",
        InvalidArgument,
        Response,
        &[],
        "A resize's maxNodes is 0, above 1000 or below minNodes.",
        "Send a maxNodes between minNodes and 1000.",
    ),
    e(
        "INVALID_MAX_RUN_DURATION",
        InvalidArgument,
        Response,
        &["maxRunDuration", "maximum"],
        "`maxRunDuration` is not a whole number of seconds, or is longer than 7 days.",
        "Send a duration like \"86400s\", at most `maximum`.",
    ),
    e(
        "INVALID_MIN_NODES",
        InvalidArgument,
        Response,
        &[],
        "minNodes is above 1000.",
        "Send a minNodes of at most 1000.",
    ),
    e(
        "INVALID_NAME",
        InvalidArgument,
        Response,
        &["field"],
        "A name in the path or body (project, zone, cluster, team, pool, email, ...) is not valid; `field` says which.",
        "Fix the name as the message says.",
    ),
    e(
        "INVALID_NAMESPACE",
        InvalidArgument,
        Response,
        &[],
        "A profile's namespace is not a Kubernetes namespace name.",
        "Use lowercase letters, digits and hyphens, at most 63.",
    ),
    e(
        "INVALID_NOOP_SPEC",
        InvalidArgument,
        Response,
        &[],
        "A test (noop) operation's spec is out of range (steps 1-100, stepMillis at most 60000).",
        "Send a spec within those bounds.",
    ),
    e(
        "INVALID_NUMBER",
        InvalidArgument,
        Console,
        &[],
        "A console form's number field is not a whole number of 0 or more.",
        "Enter a whole number.",
    ),
    e(
        "INVALID_PAGE_SIZE",
        InvalidArgument,
        Response,
        &[],
        "`pageSize` is negative.",
        "Omit it for the default, or send a positive number.",
    ),
    e(
        "INVALID_PAGE_TOKEN",
        InvalidArgument,
        Response,
        &[],
        "`pageToken` was not made by this list with these filters (or was altered).",
        "Pass the previous page's nextPageToken with the same filters.",
    ),
    e(
        "INVALID_PARTITION_SIZE",
        InvalidArgument,
        Response,
        &["accelerator", "validPartitionSizes"],
        "`partitionSize` is not a MIG partition of the GPU, or the GPU has none.",
        "Use one of `validPartitionSizes`, or drop `partitionSize`.",
    ),
    e(
        "INVALID_PATH",
        InvalidArgument,
        Response,
        &[],
        "A path parameter could not be decoded.",
        "Fix the URL path.",
    ),
    e(
        "INVALID_PLACEMENT_QUERY",
        InvalidArgument,
        Response,
        &["field", "zone", "project"],
        "A placement search (`placements:search`) lacks `accelerator` or `count`, asks for a count outside 1..10000, names a provisioning mode that is not one (or contradicts a `:spot` accelerator), or names a zone that is malformed or not in the reach of the team's projects.",
        "Fix the field named in `field`; zones must exist in the regions Compute offers to the team's projects.",
    ),
    e(
        "INVALID_POLICY",
        InvalidArgument,
        Response,
        &["field"],
        "A team policy field is unknown or out of range (an accelerator type not in the catalogue, a zone that is not one, a negative amount, a list naming a value twice).",
        "Fix the named field: accelerator types are Kinetic's names without the count (gpu-l4, tpu-v5litepod), amounts are USD of at least 0.",
    ),
    e(
        "INVALID_PROJECT",
        InvalidArgument,
        Response,
        &["project"],
        "A team's project is not a GCP project id.",
        "Send the project id (6-30 lowercase letters, digits, hyphens).",
    ),
    e(
        "INVALID_PROVISIONING",
        InvalidArgument,
        Response,
        &[],
        "`provisioning` is not ON_DEMAND, SPOT, RESERVATION, FLEX_START or QUEUED.",
        "Send one of those values.",
    ),
    e(
        "INVALID_QUERY",
        InvalidArgument,
        Response,
        &[],
        "A query parameter's value could not be decoded (wrong type).",
        "Fix the query string as the message says.",
    ),
    e(
        "INVALID_REQUEST_ID",
        InvalidArgument,
        Response,
        &[],
        "`requestId` / Idempotency-Key is not 1-128 letters, digits, `- _ . :`.",
        "Send a UUID.",
    ),
    e(
        "INVALID_RESERVATION",
        InvalidArgument,
        Response,
        &[],
        "`reservation` is not a reservation name or `projects/OWNER/reservations/NAME`.",
        "Send the reservation's name as the message says.",
    ),
    e(
        "INVALID_ROLE",
        InvalidArgument,
        Console,
        &[],
        "A console member form's role is not one of the team roles.",
        "Choose one of the roles offered.",
    ),
    e(
        "INVALID_SHARING",
        InvalidArgument,
        Response,
        &["accelerator"],
        "`sharing` is invalid: a TPU pool, an unknown strategy, maxClientsPerGpu out of range, or MPS with partitions.",
        "Fix `sharing` as the message says, or drop it.",
    ),
    e(
        "INVALID_SNOOZE",
        InvalidArgument,
        Response,
        &["field"],
        "A `:snooze` duration is not a positive duration in seconds like \"7200s\".",
        "Send {\"duration\": \"7200s\"}.",
    ),
    e(
        "INVALID_TIMEOUT",
        InvalidArgument,
        Response,
        &["limit"],
        "`timeout` (:wait) or `checkTimeout` (:diagnose) is not a duration above 0 and within `limit`.",
        "Send a duration like 10s or 500ms, at most `limit`.",
    ),
    e(
        "INVALID_TTL",
        InvalidArgument,
        Response,
        &["field"],
        "`up`'s `ttl` is not a duration in seconds (\"86400s\"), `expireTime` is not an RFC 3339 time, both are given, or the expiry is less than a minute or more than a year away (`field` names which).",
        "Send one of ttl (\"86400s\") or expireTime (RFC 3339), between a minute and a year from now.",
    ),
    e(
        "INVALID_UPDATE_MASK",
        InvalidArgument,
        Response,
        &["field"],
        "`updateMask` names a field the update cannot change.",
        "Name only the fields the message lists, or `*`.",
    ),
    e(
        "INVALID_USAGE_QUERY",
        InvalidArgument,
        Response,
        &["field"],
        "A usage question is not one kineticd answers: an unknown groupBy, a time that is not RFC 3339, an endTime not after startTime, or a range over 400 days (`field` names the parameter).",
        "Use groupBy cluster, pool, accelerator, provisioning, member or day, RFC 3339 times, and a range of at most 400 days.",
    ),
    e(
        "INVALID_WEBHOOK",
        InvalidArgument,
        Response,
        &["field"],
        "A webhook field is wrong: a URL that is not https (http only to an allowed loopback or private host) or holds credentials, no events, an unknown or repeated event, an unknown format.",
        "Fix the named field: events are OPERATION_FINISHED, APPROVAL_NEEDED, APPROVAL_DECIDED, IDLE_WARNING, IDLE_ACTION, TTL_WARNING, BUDGET_THRESHOLD, SPOT_RECLAIMED; format is JSON or SLACK.",
    ),
    e(
        "INVALID_WORKLOAD",
        InvalidArgument,
        Response,
        &[],
        "A checkWorkload manifest has a field of the wrong shape.",
        "Fix the field the message names.",
    ),
    e(
        "INVALID_ZONE",
        InvalidArgument,
        Response,
        &["regions", "zone"],
        "The zone does not exist, or a pool's zone is not in the cluster's region.",
        "Use a zone the message lists.",
    ),
    e(
        "KEYS_UNAVAILABLE",
        Unavailable,
        Response,
        &[],
        "The IAP signing keys could not be fetched, so no identity token can be verified (kineticd's failure).",
        "Retry shortly; operators see the cause in the server log.",
    ),
    e(
        "KUBERNETES_UNAVAILABLE",
        Unavailable,
        Both,
        &["service", "cloudReason", "cloudMessage"],
        "The cluster's Kubernetes API did not answer (or not in time); a step is retried.",
        "Retry shortly; check the cluster in GKE if it persists.",
    ),
    e(
        "KUBERNETES_WAIT_TIMEOUT",
        DeadlineExceeded,
        Operation,
        &["service"],
        "A step waited for Kubernetes objects (for example a rollout) longer than its limit.",
        "Check the cluster's workloads and events, then run up again.",
    ),
    e(
        "LAST_OWNER",
        FailedPrecondition,
        Response,
        &[],
        "Removing or demoting the team's last OWNER.",
        "Make someone else OWNER first.",
    ),
    e(
        "MALFORMED_JSON",
        InvalidArgument,
        Response,
        &["byte"],
        "The request body is not valid JSON (or not UTF-8: `byte` says where).",
        "Send valid UTF-8 JSON.",
    ),
    e(
        "MALFORMED_YAML",
        InvalidArgument,
        Response,
        &[],
        "A checkWorkload body is not valid YAML or UTF-8.",
        "Send valid YAML.",
    ),
    e(
        "MANIFEST_CHECKSUM_MISMATCH",
        FailedPrecondition,
        Operation,
        &["service"],
        "A downloaded add-on manifest (LWS, NVIDIA driver) does not match its configured SHA-256.",
        "Operators: fix KINETIC_*_MANIFEST_URL / _SHA256, then run up again.",
    ),
    e(
        "MEMBER_NOT_FOUND",
        NotFound,
        Response,
        &[],
        "The email is not a member of the team.",
        "Check the address (GET /v1/teams/TEAM lists members).",
    ),
    with_http(
        e(
            "METHOD_NOT_ALLOWED",
            Unimplemented,
            Response,
            &[],
            "The HTTP method is not supported on this path (the Allow header lists those that are).",
            "Use a method from the Allow header.",
        ),
        405,
    ),
    e(
        "METHOD_NOT_FOUND",
        NotFound,
        Response,
        &[],
        "The `:verb` of the path is not a custom method of the resource.",
        "See /docs for the resource's methods.",
    ),
    e(
        "NODE_POOL_BUSY",
        FailedPrecondition,
        Response,
        &["pool"],
        "The pool has an unfinished resize.",
        "Wait for it (GET /v1/operations?filter=type=UPDATE_NODE_POOL AND done=false), then send this one again.",
    ),
    e(
        "NODE_POOL_CHANGED",
        Aborted,
        Response,
        &[],
        "The node pool changed while the request was prepared.",
        "Send the request again.",
    ),
    e(
        "NODE_POOL_NOT_FOUND",
        NotFound,
        Response,
        &["pool"],
        "The cluster has no node pool of this name.",
        "Check the name (GET .../nodePools lists them).",
    ),
    e(
        "NODE_POOL_NOT_IMPORTABLE",
        FailedPrecondition,
        Response,
        &["pool"],
        "An import found the GKE pool unfit for a record: its machine is no accelerator of the catalogue, or GKE is deleting it.",
        "Leave it to GKE (or remove it there); only accelerator pools are recorded.",
    ),
    e(
        "NODE_POOL_NOT_IN_GKE",
        FailedPrecondition,
        Operation,
        &["pool"],
        "A resize found the pool recorded but GKE has no such pool.",
        "Run up (PUT the cluster) to create it again from its record, then resize.",
    ),
    e(
        "NODE_POOL_NOT_RECORDED",
        FailedPrecondition,
        Operation,
        &[],
        "A step found no record of the node pool it works on (removed meanwhile).",
        "Check the cluster's pools and run the command again if still wanted.",
    ),
    e(
        "NODE_POOL_NOT_RESIZABLE",
        FailedPrecondition,
        Response,
        &[],
        "The pool records an accelerator this kineticd does not know.",
        "Resize it with a kineticd that knows the accelerator, or in GKE.",
    ),
    e(
        "NODE_POOL_NOT_RUNNING",
        FailedPrecondition,
        Response,
        &["pool", "state"],
        "Resizing or drilling a pool that is not RUNNING.",
        "Wait for its operation to finish, or repair it with up, then retry.",
    ),
    e(
        "NODE_POOL_RECORDED",
        AlreadyExists,
        Response,
        &["pool"],
        "An import named a pool that has a record already.",
        "Nothing to do: GET the pool to see its record.",
    ),
    e(
        "NOTHING_TO_UPDATE",
        InvalidArgument,
        Response,
        &[],
        "A resize names neither minNodes nor maxNodes.",
        "Send minNodes and/or maxNodes, or name them in updateMask.",
    ),
    e(
        "NOT_FOUND",
        NotFound,
        Console,
        &[],
        "A console page's team, cluster or operation does not exist or is not yours.",
        "Go back to the console's home page.",
    ),
    e(
        "NOT_READY",
        Unavailable,
        Response,
        &[],
        "GET /readyz: the database does not answer or a migration is not applied.",
        "Operators: check the database and run `kineticd migrate`.",
    ),
    e(
        "NO_ACCELERATOR_POOL",
        InvalidArgument,
        Response,
        &[],
        "Creating a `cpu` cluster with minNodes, spot or reservation, which describe an accelerator pool.",
        "Drop those fields, or ask for an accelerator.",
    ),
    e(
        "NO_FAILOVER_PAIR",
        FailedPrecondition,
        Response,
        &["pool"],
        "A drill names a pool without an on-demand fallback partner.",
        "Add a spot pool with `\"failover\": true` (POST .../nodePools) and drill that.",
    ),
    e(
        "OPERATION_NOT_FOUND",
        NotFound,
        Response,
        &["operation"],
        "No operation of this id belongs to a team you are a member of.",
        "Check the id (GET /v1/operations lists them).",
    ),
    e(
        "OPERATION_NOT_PENDING_APPROVAL",
        FailedPrecondition,
        Response,
        &["operation"],
        "The operation is not waiting for approval: it never did, or it was approved, rejected, cancelled or has expired.",
        "GET the operation to see its state.",
    ),
    e(
        "PERMISSION_DENIED",
        PermissionDenied,
        Response,
        &[],
        "Your role in the team does not allow the request (for example a VIEWER changing a cluster).",
        "Ask a team ADMIN or OWNER to do it, or to give you a higher role.",
    ),
    e(
        "POLICY_VIOLATION",
        PermissionDenied,
        Response,
        &["rule", "limit", "requested", "current"],
        "The team's policy does not allow the request (an accelerator, zone or provisioning mode it does not allow, or a cap on accelerators, clusters, node pools, hourly cost or the monthly budget that the request would pass); nothing was enqueued.",
        "Preview the request (validateOnly=true) to see every violation; ask for less, or ask a team ADMIN or OWNER to change the policy (PATCH /v1/teams/TEAM/policy).",
    ),
    e(
        "PROFILE_NOT_FOUND",
        NotFound,
        Response,
        &["profile"],
        "No profile of this id is yours.",
        "List yours with GET /v1/profiles.",
    ),
    e(
        "PROJECT_CLAIMED",
        AlreadyExists,
        Response,
        &["project"],
        "The project already belongs to another team.",
        "Use another project, or ask that team to remove it.",
    ),
    e(
        "PROJECT_HAS_CLUSTERS",
        FailedPrecondition,
        Response,
        &[],
        "Removing a project from a team while it still has clusters.",
        "Run down on its clusters first.",
    ),
    e(
        "PROJECT_NOT_FOUND",
        NotFound,
        Response,
        &["project"],
        "The project does not belong to any of your teams.",
        "Ask a team ADMIN to add it (PATCH /v1/teams/TEAM).",
    ),
    e(
        "PROJECT_OWNERSHIP_REQUIRED",
        PermissionDenied,
        Response,
        &["project", "permission", "requiredRole"],
        "Binding a project to a team when its IAM policy does not give you roles/owner or setIamPolicy.",
        "Ask an owner of the project, or a kineticd service admin, to bind it.",
    ),
    e(
        "PROJECT_POLICY_UNREADABLE",
        PermissionDenied,
        Response,
        &["project", "permission", "cloudReason"],
        "kineticd cannot read the project's IAM policy, so it cannot check that you may bind it.",
        "Have a project owner grant kineticd's service account its team-project role there (docs/deploying.md).",
    ),
    e(
        "PROVISIONING_CONFLICT",
        InvalidArgument,
        Response,
        &["provisioning", "field"],
        "`provisioning` contradicts another field (spot, reservation, failover, minNodes of a flex-start pool).",
        "Drop the contradicting field or pick another mode, as the message says.",
    ),
    e(
        "QUOTA_INSUFFICIENT",
        FailedPrecondition,
        Both,
        &[
            "metric",
            "limit",
            "usage",
            "needed",
            "region",
            "pool",
            "service",
            "method",
            "httpStatus",
            "cloudReason",
            "cloudMessage",
        ],
        "The project's quota cannot hold what was asked: the pre-check before any operation (metric, limit, usage, needed), or Google refusing a step for quota (RESOURCE_EXHAUSTED in the operation's `error`, Google's reason in `cloudReason`).",
        "Request more quota (console.cloud.google.com/iam-admin/quotas), free some, or ask for less, then run the command again.",
    ),
    e(
        "RATE_LIMITED",
        ResourceExhausted,
        Response,
        &["retryAfterSeconds"],
        "You sent more requests than KINETIC_RATE_LIMIT_PER_SECOND allows per caller.",
        "Retry after `retryAfterSeconds` (the Retry-After header).",
    ),
    e(
        "REQUEST_ID_REUSED",
        FailedPrecondition,
        Response,
        &["operation"],
        "The requestId / Idempotency-Key was already used for a different request.",
        "Use a new key for a new request.",
    ),
    e(
        "REQUEST_TIMEOUT",
        DeadlineExceeded,
        Response,
        &["timeoutSeconds"],
        "The request took longer than KINETIC_REQUEST_TIMEOUT_SECONDS and was abandoned (nothing uncommitted was kept).",
        "Retry; operators may raise KINETIC_REQUEST_TIMEOUT_SECONDS.",
    ),
    e(
        "RESERVATION_EXHAUSTED",
        FailedPrecondition,
        Both,
        &["reservation", "zone", "count", "inUseCount", "needed"],
        "The reservation has too few free VMs for the pool's minNodes.",
        "Lower minNodes, free reserved VMs, or use another reservation.",
    ),
    e(
        "RESERVATION_MISMATCH",
        FailedPrecondition,
        Both,
        &["reservation", "zone", "field", "wanted", "found"],
        "The reservation's zone, machine type or accelerator differs from the pool's (`field` says which).",
        "Name a reservation that matches the pool, or change the pool as the message says.",
    ),
    e(
        "RESERVATION_NOT_FOUND",
        FailedPrecondition,
        Both,
        &["reservation", "project", "zone"],
        "The reservation does not exist, or is not shared with the cluster's project.",
        "Check the reservation's name and owner project, and share it with the cluster's project.",
    ),
    e(
        "RESERVATION_REQUIRED",
        InvalidArgument,
        Response,
        &[],
        "provisioning RESERVATION without `reservation`.",
        "Name a reservation in the cluster's zone.",
    ),
    e(
        "RESOURCE_NOT_OURS",
        FailedPrecondition,
        Both,
        &["resource"],
        "A cloud resource with the name kineticd would use (or adopt, or import) exists but was not created by kinetic.",
        "Delete or rename that resource, or use another cluster name.",
    ),
    e(
        "RESPONSE_NOT_WRITTEN",
        Internal,
        Operation,
        &[],
        "An operation's response could not be written (a bug).",
        "Report it with the operation id.",
    ),
    e(
        "ROUTE_NOT_FOUND",
        NotFound,
        Response,
        &[],
        "No route for the path (or the test routes are disabled on this server).",
        "Check the path against /docs.",
    ),
    e(
        "SNOOZE_TOO_LONG",
        InvalidArgument,
        Response,
        &["maxSnooze"],
        "A `:snooze` asks for longer than the team policy's `idle.maxSnooze` (default a day).",
        "Snooze for at most maxSnooze; snooze again later, or ask an ADMIN to raise idle.maxSnooze.",
    ),
    e(
        "SPOT_CONFLICT",
        InvalidArgument,
        Response,
        &[],
        "The accelerator asks for spot (`:spot`) but `spot` is false.",
        "Drop `:spot` or drop `\"spot\": false`.",
    ),
    e(
        "SPOT_WITH_RESERVATION",
        InvalidArgument,
        Response,
        &[],
        "A spot pool names a reservation.",
        "Choose spot or a reservation, not both.",
    ),
    e(
        "STEP_GRAPH_STUCK",
        Internal,
        Operation,
        &[],
        "The operation's steps could not make progress (a dependency is missing; a bug).",
        "Report it with the operation id; run the command again.",
    ),
    e(
        "TEAM_DELETED",
        FailedPrecondition,
        Operation,
        &[],
        "A SYNC_ACCESS operation ran after its cluster's team was deleted: there is no roster to derive access from.",
        "Nothing to do: a deleted team's clusters are deleted with it.",
    ),
    e(
        "TEAM_EXISTS",
        AlreadyExists,
        Response,
        &[],
        "A team with this teamId already exists.",
        "Choose another teamId.",
    ),
    e(
        "TEAM_HAS_CLUSTERS",
        FailedPrecondition,
        Response,
        &["clusters"],
        "Deleting a team that still has clusters.",
        "Run down on its clusters first.",
    ),
    e(
        "TEAM_NOT_FOUND",
        NotFound,
        Response,
        &["team"],
        "No team of this id, or you are not a member of it.",
        "Check the id (GET /v1/teams lists yours).",
    ),
    e(
        "TOKEN_BAD_ALGORITHM",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion is not signed with ES256.",
        "Reach kineticd through Identity-Aware Proxy only.",
    ),
    e(
        "TOKEN_BAD_AUDIENCE",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion's audience is not KINETIC_IAP_AUDIENCE.",
        "Operators: set KINETIC_IAP_AUDIENCE to the backend service's audience.",
    ),
    e(
        "TOKEN_BAD_EMAIL",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion's email claim is not an address kineticd accepts.",
        "Sign in with an ordinary email identity.",
    ),
    e(
        "TOKEN_BAD_ISSUER",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion was not issued by Identity-Aware Proxy.",
        "Reach kineticd through Identity-Aware Proxy only.",
    ),
    e(
        "TOKEN_BAD_SIGNATURE",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion's signature does not verify.",
        "Reach kineticd through Identity-Aware Proxy only.",
    ),
    e(
        "TOKEN_DUPLICATED",
        Unauthenticated,
        Response,
        &[],
        "The request carries more than one IAP assertion header.",
        "Remove whatever between IAP and kineticd adds its own header.",
    ),
    e(
        "TOKEN_EXPIRED",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion has expired.",
        "Get a fresh ID token and retry.",
    ),
    e(
        "TOKEN_MALFORMED",
        Unauthenticated,
        Response,
        &[],
        "The identity token is not a JWT.",
        "Send the ID token as `Authorization: Bearer <token>` through IAP.",
    ),
    e(
        "TOKEN_MISSING",
        Unauthenticated,
        Response,
        &[],
        "The request has no `x-goog-iap-jwt-assertion` header (not reached through Identity-Aware Proxy).",
        "Reach kineticd through Identity-Aware Proxy with an ID token.",
    ),
    e(
        "TOKEN_MISSING_EMAIL",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion has no email claim.",
        "Sign in with an identity that has an email.",
    ),
    e(
        "TOKEN_NOT_YET_VALID",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion is not valid yet (issued in the future: clock skew).",
        "Check the clocks; retry shortly.",
    ),
    e(
        "TOKEN_UNKNOWN_KEY",
        Unauthenticated,
        Response,
        &[],
        "The IAP assertion is signed with a key IAP does not publish.",
        "Reach kineticd through Identity-Aware Proxy only.",
    ),
    e(
        "TOO_MANY_OPERATIONS",
        FailedPrecondition,
        Response,
        &["maxOperations", "unfinishedOperations"],
        "The team already has KINETIC_MAX_OPERATIONS_PER_TEAM unfinished operations.",
        "Wait for some to finish or cancel them, then retry.",
    ),
    e(
        "TOO_MANY_WATCHES",
        ResourceExhausted,
        Response,
        &["maxWatches", "retryAfterSeconds"],
        "You already have KINETIC_MAX_WATCHES_PER_CALLER event streams open.",
        "Close one, or use :wait instead of :watch.",
    ),
    e(
        "TPU_MAX_NODES_NOT_WHOLE_SLICES",
        InvalidArgument,
        Response,
        &[],
        "A multi-host TPU pool's maxNodes is not a multiple of the slice's host count.",
        "Use one of the two multiples the message gives.",
    ),
    e(
        "TPU_MIN_NODES_NOT_WHOLE_SLICES",
        InvalidArgument,
        Response,
        &[],
        "A multi-host TPU pool's minNodes is not a multiple of the slice's host count.",
        "Use one of the two multiples the message gives.",
    ),
    e(
        "UNEXPECTED_INSTANCE_GROUP",
        FailedPrecondition,
        Operation,
        &[],
        "A RECLAIM_NODES drill found a pool whose instance group is not a zonal managed instance group.",
        "Drill with mode DELETE_POOL instead.",
    ),
    e(
        "UNKNOWN_ACCELERATOR",
        InvalidArgument,
        Response,
        &["accelerator", "suggestions"],
        "The accelerator is not in the catalogue (NOT_FOUND from GET /v1/accelerators/{name}).",
        "Use one of `suggestions` (GET /v1/accelerators lists them all).",
    ),
    e(
        "UNKNOWN_FIELD",
        InvalidArgument,
        Response,
        &[],
        "The JSON body has a field the request does not have.",
        "Remove or correct the field the message names.",
    ),
    e(
        "UNKNOWN_OPERATION_TYPE",
        Internal,
        Operation,
        &[],
        "The operation's type is one this server cannot run (a newer server queued it).",
        "Let a server of the newer version run it, or cancel it.",
    ),
    e(
        "UNKNOWN_QUERY_PARAMETER",
        InvalidArgument,
        Response,
        &["parameter", "allowed", "suggestion"],
        "A query parameter is not one the route takes; nothing ran.",
        "Use the `suggestion` spelling, or one of `allowed`.",
    ),
    e(
        "UNSUPPORTED_KIND",
        InvalidArgument,
        Response,
        &["supportedKinds"],
        "checkWorkload got a manifest of a kind it does not judge.",
        "Send one of `supportedKinds`.",
    ),
    with_http(
        e(
            "UNSUPPORTED_MEDIA_TYPE",
            InvalidArgument,
            Response,
            &[],
            "The body's Content-Type is not JSON (or, for checkWorkload, JSON or YAML).",
            "Send `Content-Type: application/json` (or application/yaml for checkWorkload).",
        ),
        415,
    ),
    e(
        "WEBHOOK_LIMIT_REACHED",
        FailedPrecondition,
        Response,
        &["team", "limit"],
        "The team already has the most webhooks a team may have (20).",
        "Delete a webhook the team no longer needs, then add the new one.",
    ),
    e(
        "WEBHOOK_NOT_FOUND",
        NotFound,
        Response,
        &["team"],
        "The team has no webhook with that id.",
        "List the team's webhooks (GET /v1/teams/{team}/webhooks) for their names.",
    ),
    e(
        "WEBHOOK_URL_REFUSED",
        InvalidArgument,
        Response,
        &["field"],
        "The webhook URL's host is an address deliveries may never reach (link-local, the cloud metadata server, unspecified, multicast) or one this deployment does not allow (loopback, private: KINETIC_WEBHOOK_ALLOW).",
        "Use a public https URL, or ask the operator to allow loopback or private receivers.",
    ),
    e(
        "ZONE_RESOURCE_EXHAUSTED",
        ResourceExhausted,
        Operation,
        CLOUD_CALL,
        "Google had no capacity for the VMs in the zone (a stockout: GKE's GCE_STOCKOUT, Compute Engine's ZONE_RESOURCE_POOL_EXHAUSTED, in `cloudReason`).",
        "Try another zone, a reservation, SPOT or FLEX_START provisioning, or later.",
    ),
];

/// The catalogue as Markdown (docs/errors.md).
pub fn markdown() -> String {
    let mut out = String::from(
        "# Error reasons\n\n\
         <!-- Generated by `kineticd errors-reference` from src/api/reasons.rs; do not edit.\n     \
         Regenerate: cargo run -- errors-reference > docs/errors.md -->\n\n\
         Every error kineticd answers is Google-shaped (AIP-193): \
         `{\"error\":{code,status,message,details:[ErrorInfo]}}`, and the ErrorInfo's \
         `reason` (domain `kineticd`) says what happened. A failed operation's `error` has \
         the same shape; its ErrorInfo also carries `step`, the step that failed. A step that \
         failed on a Google or Kubernetes call answers a reason of this catalogue; the \
         cloud's own reason and message (for example `SERVICE_DISABLED`) are in \
         `cloudReason` and `cloudMessage`, with `service`, `method` and `httpStatus`.\n\n\
         FAILED_PRECONDITION is HTTP 409 (the API contract fixes it; Google's mapping says \
         400); a transient condition that says \"try again\" is UNAVAILABLE, 503 with \
         `Retry-After`. The reasons each operation can answer are in the OpenAPI \
         document (`x-kineticd-reasons` on each error response).\n\n\
         *Seen* is where the reason appears: `response` (an error response of the API, and \
         console pages showing the same error), `operation` (a failed operation's `error`; \
         the HTTP status is then not an answer but what the code stands for), `console` \
         (web console pages only).\n\n\
         | Reason | Code | HTTP | Seen | When | Metadata | What to do |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for d in CATALOGUE {
        let meta = if d.metadata.is_empty() {
            String::new()
        } else {
            d.metadata
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} | {} |\n",
            d.reason,
            d.code.name(),
            d.http(),
            d.seen.label(),
            cell(d.when),
            meta,
            cell(d.fix),
        ));
    }
    out.push_str(
        "\n## Renamed reasons\n\n\
         Reasons that meant the same were merged. Until the next release an answer that \
         used to carry an old spelling also carries it in the ErrorInfo metadata as \
         `deprecatedReason`, so a tool matching on it can move over.\n\n\
         | Old reason (alias until the next release) | Now |\n|---|---|\n",
    );
    for (old, new) in ALIASES {
        out.push_str(&format!("| `{old}` | `{new}` |\n"));
    }
    out.push_str(
        "\nBesides these, a failed step used to answer a cloud's own reason \
         (`quotaExceeded`, `SERVICE_DISABLED`, `Forbidden`, ...) or `GKE_<status>` (for \
         example `GKE_ERROR`): it now answers the reason of this catalogue for it \
         (`CLOUD_*`, `GKE_RESOURCE_BROKEN`, ...), with the old one as `deprecatedReason` \
         until the next release and the cloud's in `cloudReason`.\n",
    );
    out
}

/// Text safe in a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_unique_and_complete() {
        for w in CATALOGUE.windows(2) {
            assert!(
                w[0].reason < w[1].reason,
                "{} then {}",
                w[0].reason,
                w[1].reason
            );
        }
        for d in CATALOGUE {
            assert!(!d.when.is_empty() && !d.fix.is_empty(), "{}", d.reason);
            assert!(
                d.when.ends_with('.') && d.fix.ends_with('.'),
                "{}",
                d.reason
            );
            assert_eq!(find(d.reason).map(|f| f.reason), Some(d.reason));
        }
    }

    #[test]
    fn aliases_are_sorted_retired_and_point_at_entries() {
        for w in ALIASES.windows(2) {
            assert!(w[0].0 < w[1].0, "{} then {}", w[0].0, w[1].0);
        }
        for (old, new) in ALIASES {
            assert!(find(old).is_none(), "{old} is both an alias and a reason");
            assert!(
                find(new).is_some(),
                "{old} points at {new}, not in CATALOGUE"
            );
        }
    }

    #[test]
    fn overrides_only_where_the_code_does_not_give_the_status() {
        for d in CATALOGUE {
            if let Some(h) = d.http_override {
                assert_ne!(h, http_status(d.code).as_u16(), "{}", d.reason);
                assert_eq!(RpcCode::from_http(h), d.code, "{}", d.reason);
            }
        }
        assert_eq!(find("CLUSTER_NOT_FOUND").map(|d| d.http()), Some(404));
        assert_eq!(find("QUOTA_INSUFFICIENT").map(|d| d.http()), Some(409));
        assert_eq!(find("CLUSTER_NOT_READY").map(|d| d.http()), Some(503));
        assert_eq!(find("BODY_TOO_LARGE").map(|d| d.http()), Some(413));
    }
}
