//! The error classifier against realistic Google error bodies (tests/fixtures/gcp_errors):
//! every shape (AIP-193, legacy `errors[]`, Storage without `status`, failed GKE and
//! Compute operations, non-JSON gateway pages) yields the status, reason and retry class
//! of the table in gcp-wire.md.

use kineticd::cloud::gcp::GcpError;
use kineticd::cloud::gcp::RetryClass::{self, Retryable, Terminal};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/gcp_errors/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// How a fixture reaches the classifier.
enum Via {
    /// An HTTP error response with this status.
    Http(u16),
    /// A done operation: its `error` (and Compute's `httpErrorStatusCode`).
    Operation,
}

struct Case {
    file: &'static str,
    service: &'static str,
    via: Via,
    http: u16,
    status: &'static str,
    reason: &'static str,
    retry: RetryClass,
}

/// Storage: no `status` in the body; the HTTP code decides it, so every 409 fixture
/// classifies as a plain conflict.
const fn storage_conflict(file: &'static str) -> Case {
    Case {
        file,
        service: "storage",
        via: Via::Http(409),
        http: 409,
        status: "ALREADY_EXISTS",
        reason: "conflict",
        retry: Terminal,
    }
}

const CASES: &[Case] = &[
    // GKE runs one operation per cluster: retry after the other finishes.
    Case {
        file: "container_400_gke_busy.json",
        service: "container",
        via: Via::Http(400),
        http: 400,
        status: "FAILED_PRECONDITION",
        reason: "FAILED_PRECONDITION",
        retry: Retryable,
    },
    // Stockouts and quota fail the step with a clear reason; retrying as is cannot help.
    Case {
        file: "container_op_gce_stockout.json",
        service: "container",
        via: Via::Operation,
        http: 429,
        status: "RESOURCE_EXHAUSTED",
        reason: "GCE_STOCKOUT",
        retry: Terminal,
    },
    Case {
        file: "container_op_insufficient_quota.json",
        service: "container",
        via: Via::Operation,
        http: 429,
        status: "RESOURCE_EXHAUSTED",
        reason: "QUOTA_EXCEEDED",
        retry: Terminal,
    },
    Case {
        file: "compute_op_quota_exceeded.json",
        service: "compute",
        via: Via::Operation,
        http: 403,
        status: "PERMISSION_DENIED",
        reason: "QUOTA_EXCEEDED",
        retry: Terminal,
    },
    Case {
        file: "compute_op_zone_resource_pool_exhausted.json",
        service: "compute",
        via: Via::Operation,
        http: 503,
        status: "UNAVAILABLE",
        reason: "ZONE_RESOURCE_POOL_EXHAUSTED",
        retry: Terminal,
    },
    Case {
        file: "compute_403_quota_exceeded.json",
        service: "compute",
        via: Via::Http(403),
        http: 403,
        status: "PERMISSION_DENIED",
        reason: "quotaExceeded",
        retry: Terminal,
    },
    storage_conflict("storage_409_bucket_exists.json"),
    // As Google sends it; `Storage::delete_bucket` turns it into `bucketNotEmpty`.
    storage_conflict("storage_409_bucket_not_empty.json"),
    Case {
        file: "storage_403_rate_limit_exceeded.json",
        service: "storage",
        via: Via::Http(403),
        http: 403,
        status: "PERMISSION_DENIED",
        reason: "rateLimitExceeded",
        retry: Retryable,
    },
    Case {
        file: "storage_503_backend_error.json",
        service: "storage",
        via: Via::Http(503),
        http: 503,
        status: "UNAVAILABLE",
        reason: "backendError",
        retry: Retryable,
    },
    Case {
        file: "container_429_resource_exhausted.json",
        service: "container",
        via: Via::Http(429),
        http: 429,
        status: "RESOURCE_EXHAUSTED",
        reason: "RATE_LIMIT_EXCEEDED",
        retry: Retryable,
    },
    // IAM etag conflict: redo get-modify-set.
    Case {
        file: "cloudresourcemanager_409_aborted.json",
        service: "cloudresourcemanager",
        via: Via::Http(409),
        http: 409,
        status: "ABORTED",
        reason: "ABORTED",
        retry: Retryable,
    },
    // The HTTP layer refreshes the token once; a 401 after that is final.
    Case {
        file: "iam_401_unauthenticated.json",
        service: "iam",
        via: Via::Http(401),
        http: 401,
        status: "UNAUTHENTICATED",
        reason: "ACCESS_TOKEN_EXPIRED",
        retry: Terminal,
    },
    Case {
        file: "container_404_not_found.json",
        service: "container",
        via: Via::Http(404),
        http: 404,
        status: "NOT_FOUND",
        reason: "NOT_FOUND",
        retry: Terminal,
    },
    Case {
        file: "artifactregistry_409_already_exists.json",
        service: "artifactregistry",
        via: Via::Http(409),
        http: 409,
        status: "ALREADY_EXISTS",
        reason: "ALREADY_EXISTS",
        retry: Terminal,
    },
    Case {
        file: "container_500_internal.json",
        service: "container",
        via: Via::Http(500),
        http: 500,
        status: "INTERNAL",
        reason: "INTERNAL",
        retry: Retryable,
    },
    Case {
        file: "iam_503_unavailable.json",
        service: "iam",
        via: Via::Http(503),
        http: 503,
        status: "UNAVAILABLE",
        reason: "UNAVAILABLE",
        retry: Retryable,
    },
    Case {
        file: "compute_502_html.txt",
        service: "compute",
        via: Via::Http(502),
        http: 502,
        status: "UNAVAILABLE",
        reason: "UNAVAILABLE",
        retry: Retryable,
    },
    Case {
        file: "serviceusage_400_invalid_argument.json",
        service: "serviceusage",
        via: Via::Http(400),
        http: 400,
        status: "INVALID_ARGUMENT",
        reason: "INVALID_ARGUMENT",
        retry: Terminal,
    },
    Case {
        file: "serviceusage_403_service_disabled.json",
        service: "serviceusage",
        via: Via::Http(403),
        http: 403,
        status: "PERMISSION_DENIED",
        reason: "SERVICE_DISABLED",
        retry: Terminal,
    },
];

fn classify(c: &Case) -> GcpError {
    let body = fixture(c.file);
    match c.via {
        Via::Http(code) => GcpError::from_response(c.service, "test.call", code, &body),
        Via::Operation => {
            let op: Value = serde_json::from_str(&body).expect("operation JSON");
            let hint = op["httpErrorStatusCode"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok());
            GcpError::from_operation(c.service, "operations.get", &op["error"], hint)
        }
    }
}

#[test]
fn fixtures_classify_per_the_table() {
    let mut failures = Vec::new();
    for c in CASES {
        let e = classify(c);
        let got = (e.http_status, e.status.as_str(), e.reason.as_str(), e.retry);
        let want = (c.http, c.status, c.reason, c.retry);
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", c.file));
        }
        assert!(!e.message.is_empty(), "{}: empty message", c.file);
        assert_eq!(e.service, c.service);
    }
    assert!(
        failures.is_empty(),
        "misclassified:\n{}",
        failures.join("\n")
    );
}

#[test]
fn every_fixture_is_in_the_table() {
    let dir = format!("{}/tests/fixtures/gcp_errors", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            CASES.iter().any(|c| c.file == name),
            "{name} is not checked"
        );
    }
}

#[test]
fn messages_say_what_happened() {
    let quota = classify(&CASES[3]);
    assert_eq!(
        quota.message,
        "Quota 'NVIDIA_L4_GPUS' exceeded. Limit: 8.0 in region us-central1."
    );
    let stockout = classify(&CASES[1]);
    assert!(stockout.message.contains("does not have enough resources"));
    let html = classify(&CASES[17]);
    assert!(html.message.contains("502"), "{}", html.message);
}

#[test]
fn predicates() {
    let by_file = |f: &str| classify(CASES.iter().find(|c| c.file == f).unwrap());
    assert!(by_file("storage_409_bucket_exists.json").is_already_exists());
    assert!(by_file("artifactregistry_409_already_exists.json").is_already_exists());
    // An etag conflict is a 409 too, but never "already exists".
    assert!(!by_file("cloudresourcemanager_409_aborted.json").is_already_exists());
    assert!(by_file("container_404_not_found.json").is_not_found());
    assert!(by_file("container_400_gke_busy.json").is_retryable());
}
