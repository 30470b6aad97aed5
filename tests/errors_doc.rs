//! The reason catalogue (src/api/reasons.rs) against the code: every reason literal the
//! sources under src/ can emit is catalogued, every catalogue entry is emitted somewhere,
//! and docs/errors.md is exactly what `kineticd errors-reference` prints.
//!
//! The scan is textual and regex-free. Outside `#[cfg(test)] mod` blocks, `*_tests.rs`
//! files, src/sim/ (the simulator speaks Google's reasons, not kineticd's) and
//! src/cloud/ (the clients keep the cloud's reasons; a failed step maps them with
//! `ops::steps::cloud_reason`, checked below, and keeps them as `cloudReason`), a reason
//! is a SCREAMING_SNAKE string literal (at least 4 characters) found
//! - in the arguments of the error constructors: `invalid(`, `not_found(`, `exists(`,
//!   `precondition(`, `aborted(`, `unauthenticated(`, `unavailable(`, `hidden(`,
//!   `::new(` (service `Error`, `ApiError`, `PageError`), `terminal(` / `retryable(`
//!   (operation steps) and `status_json(` (operation errors);
//! - right after an `RpcCode::X,` argument (tuples of code and reason);
//! - as a `REASON: &str` constant or a `reason: "..."` field;
//! - anywhere in the body of a `fn reason(` method or a `let reason = ...;` statement,
//!   except as the argument of `contains(` / `starts_with(` or after `==`, which test a
//!   reason rather than make one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use kineticd::api::reasons::{ALIASES, CATALOGUE, find};
use kineticd::domain::RpcCode;
use kineticd::ops::steps::cloud_reason;

const REGENERATE: &str = "cargo run -- errors-reference > docs/errors.md";

const CALLS: [&str; 12] = [
    "invalid(",
    "not_found(",
    "exists(",
    "precondition(",
    "aborted(",
    "unauthenticated(",
    "unavailable(",
    "hidden(",
    "::new(",
    "terminal(",
    "retryable(",
    "status_json(",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src/") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            if path != root().join("src/sim") && path != root().join("src/cloud") {
                rust_files(&path, out);
            }
        } else {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.ends_with(".rs") && !name.ends_with("_tests.rs") {
                out.push(path);
            }
        }
    }
}

/// `src` with comments blanked (string and char literals kept intact).
fn strip_comments(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = src[i..].find('\n').map_or(b.len(), |n| i + n);
            i = end;
        } else if b[i..].starts_with(b"r#\"") {
            let end = src[i + 3..].find("\"#").map_or(b.len(), |n| i + 3 + n + 2);
            out.push_str(&src[i..end]);
            i = end;
        } else if b[i] == b'"' {
            let end = string_end(b, i);
            out.push_str(&src[i..end]);
            i = end;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            let end = src[i + 2..].find('\'').map_or(b.len(), |n| i + 2 + n + 1);
            out.push_str(&src[i..end]);
            i = end;
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.push_str(&src[i..i + 3]);
            i += 3;
        } else {
            let c = src[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Index just past the string literal opening at `start`.
fn string_end(b: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < b.len() && b[j] != b'"' {
        j += if b[j] == b'\\' { 2 } else { 1 };
    }
    (j + 1).min(b.len())
}

/// The code before the first `#[cfg(test)]` that opens a `mod`.
fn without_tests(s: &str) -> &str {
    let mut from = 0;
    while let Some(at) = s[from..].find("#[cfg(test)]") {
        let at = from + at;
        let rest = s[at + "#[cfg(test)]".len()..].trim_start();
        if rest.starts_with("mod ") || rest.starts_with("pub mod ") {
            return &s[..at];
        }
        from = at + 1;
    }
    s
}

fn is_reason(lit: &str) -> bool {
    lit.len() >= 4
        && lit.starts_with(|c: char| c.is_ascii_uppercase())
        && lit
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The text from `start` to where the bracket opened before it closes (`;` at depth 0
/// too when `at_semicolon`).
fn until_close(s: &str, start: usize, at_semicolon: bool) -> &str {
    let b = s.as_bytes();
    let mut depth = 0i32;
    let mut j = start;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = string_end(b, j);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    break;
                }
            }
            b';' if at_semicolon && depth == 0 => break,
            _ => {}
        }
        j += 1;
    }
    &s[start..j]
}

/// The reason-shaped string literals of `text`, except those tested rather than made.
fn literals(text: &str) -> Vec<String> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let end = string_end(b, i);
        let lit = &text[i + 1..end.saturating_sub(1).max(i + 1)];
        let before = text[..i].trim_end();
        let tested = ["contains(", "starts_with(", "=="]
            .iter()
            .any(|t| before.ends_with(t));
        if is_reason(lit) && !tested {
            out.push(lit.to_owned());
        }
        i = end;
    }
    out
}

/// The first string literal at `at` (after whitespace), if any.
fn literal_at(s: &str, at: usize) -> Option<&str> {
    let rest = s[at..].trim_start();
    let body = rest.strip_prefix('"')?;
    let end = string_end(rest.as_bytes(), 0);
    Some(&body[..end - 2])
}

/// Every reason the sources can emit, with where (`path:rule`).
fn emitted() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for path in files {
        let raw = std::fs::read_to_string(&path).expect("read a source file");
        let stripped = strip_comments(&raw);
        let s = without_tests(&stripped);
        let name = path
            .strip_prefix(root())
            .expect("under the crate")
            .display()
            .to_string();
        let mut add = |lits: Vec<String>, rule: &str| {
            for l in lits {
                found
                    .entry(l)
                    .or_default()
                    .insert(format!("{name} ({rule})"));
            }
        };
        for call in CALLS {
            for (at, _) in s.match_indices(call) {
                let named = call.starts_with(':')
                    || at == 0
                    || !s[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
                if named {
                    add(literals(until_close(s, at + call.len(), false)), call);
                }
            }
        }
        for (at, _) in s.match_indices("RpcCode::") {
            let rest = &s[at + "RpcCode::".len()..];
            let ident = rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(0);
            if let Some(after) = rest[ident..].strip_prefix(',') {
                let off = s.len() - after.len();
                if let Some(l) = literal_at(s, off).filter(|l| is_reason(l)) {
                    add(vec![l.to_owned()], "RpcCode::X, \"...\"");
                }
            }
        }
        for marker in ["REASON: &str =", "reason: "] {
            for (at, _) in s.match_indices(marker) {
                if let Some(l) = literal_at(s, at + marker.len()).filter(|l| is_reason(l)) {
                    add(vec![l.to_owned()], marker.trim_end());
                }
            }
        }
        for (at, _) in s.match_indices("fn reason(") {
            if let Some(open) = s[at..].find('{') {
                add(literals(until_close(s, at + open + 1, false)), "fn reason");
            }
        }
        for marker in ["let reason = ", "let mut reason = "] {
            for (at, _) in s.match_indices(marker) {
                add(
                    literals(until_close(s, at + marker.len(), true)),
                    "let reason",
                );
            }
        }
    }
    found
}

fn catalogued() -> BTreeSet<&'static str> {
    CATALOGUE.iter().map(|d| d.reason).collect()
}

#[test]
fn every_reason_the_code_emits_is_catalogued() {
    let known = catalogued();
    let missing: Vec<String> = emitted()
        .into_iter()
        .filter(|(r, _)| !known.contains(r.as_str()))
        .map(|(r, sites)| {
            format!(
                "  {r}: {}",
                sites.into_iter().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    assert!(
        missing.is_empty(),
        "reasons emitted by the code but missing from CATALOGUE in src/api/reasons.rs \
         (add an entry, then `{REGENERATE}`):\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_catalogued_reason_is_emitted() {
    let found = emitted();
    let unused: Vec<&str> = catalogued()
        .into_iter()
        .filter(|r| !found.contains_key(*r))
        .collect();
    assert!(
        unused.is_empty(),
        "CATALOGUE entries no code under src/ emits (remove them, then `{REGENERATE}`): {unused:?}"
    );
}

#[test]
fn the_scanner_finds_each_kind_of_site() {
    let found = emitted();
    for (reason, site) in [
        ("CLUSTER_NOT_FOUND", "src/service/clusters.rs (not_found()"),
        (
            "UNKNOWN_QUERY_PARAMETER",
            "src/api/query_rules.rs (REASON: &str =)",
        ),
        ("TOKEN_EXPIRED", "src/auth/error.rs (fn reason)"),
        (
            "BUCKETS_NOT_EMPTY",
            "src/ops/workflows/cluster/infra.rs (terminal()",
        ),
        (
            "ZONE_RESOURCE_EXHAUSTED",
            "src/ops/steps.rs (RpcCode::X, \"...\")",
        ),
        ("STEP_GRAPH_STUCK", "src/ops/runner.rs (status_json()"),
        ("UNKNOWN_FIELD", "src/api/extract.rs (let reason)"),
        (
            "KUBERNETES_WAIT_TIMEOUT",
            "src/ops/workflows/cluster/mod.rs (RpcCode::X, \"...\")",
        ),
    ] {
        let sites = found.get(reason).cloned().unwrap_or_default();
        assert!(
            sites.contains(site),
            "{reason} not found at {site}: {sites:?}"
        );
    }
    // The cloud clients' reasons are not kineticd's: mapped, never answered as such.
    assert!(!found.contains_key("GCE_STOCKOUT"));
    assert!(!found.contains_key("TRANSPORT"));
}

/// Whatever a cloud answers a step with, the reason that reaches the caller is in the
/// catalogue, with the code the catalogue gives it.
#[test]
fn every_cloud_error_maps_to_a_catalogued_reason() {
    let reasons = [
        "GCE_STOCKOUT",
        "ZONE_RESOURCE_POOL_EXHAUSTED",
        "QUOTA_EXCEEDED",
        "GCE_QUOTA_EXCEEDED",
        "quotaExceeded",
        "rateLimitExceeded",
        "SERVICE_DISABLED",
        "bucketNotEmpty",
        "TRANSPORT",
        "LRO_DEADLINE_EXCEEDED",
        "Forbidden",
        "UNKNOWN",
        "",
    ];
    let mut seen = BTreeSet::new();
    for code in RpcCode::ALL {
        for http in [0, 400, 403, 404, 409, 429, 500, 503] {
            for reason in reasons {
                let (c, r) = cloud_reason(http, code.name(), reason, "a message");
                let doc = find(r).unwrap_or_else(|| panic!("{r} (from {reason}) not catalogued"));
                // The one reason with two codes: the quota pre-check answers 409
                // FAILED_PRECONDITION (API.md); Google's quota refusal of a step stays
                // RESOURCE_EXHAUSTED in the operation's `error` (its `when` says so).
                if r != "QUOTA_INSUFFICIENT" {
                    assert_eq!(doc.code, c, "{r}: the catalogue's code");
                }
                seen.insert(r);
            }
        }
    }
    assert!(seen.contains("ZONE_RESOURCE_EXHAUSTED") && seen.contains("QUOTA_INSUFFICIENT"));
    assert_eq!(
        cloud_reason(
            400,
            "FAILED_PRECONDITION",
            "x",
            "Google Compute Engine does not have enough resources available"
        ),
        (RpcCode::ResourceExhausted, "ZONE_RESOURCE_EXHAUSTED")
    );
    assert_eq!(
        cloud_reason(
            403,
            "PERMISSION_DENIED",
            "quotaExceeded",
            "Quota 'CPUS' exceeded"
        ),
        (RpcCode::ResourceExhausted, "QUOTA_INSUFFICIENT")
    );
    // An abandoned wait stays a cancellation (the runner ends the operation CANCELLED).
    assert_eq!(
        cloud_reason(499, "CANCELLED", "CANCELLED", "wait abandoned"),
        (RpcCode::Cancelled, "CANCELLED")
    );
    assert_eq!(
        cloud_reason(0, "UNAVAILABLE", "TRANSPORT", "connection refused"),
        (RpcCode::Unavailable, "CLOUD_UNAVAILABLE")
    );
}

/// An old spelling appears in the sources only as a `deprecatedReason` (`.was("OLD")`),
/// and only if ALIASES says what replaced it.
#[test]
fn deprecated_reasons_are_aliases() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let aliases: BTreeMap<&str, &str> = ALIASES.iter().copied().collect();
    let mut used = BTreeSet::new();
    for path in files {
        let raw = std::fs::read_to_string(&path).expect("read a source file");
        let stripped = strip_comments(&raw);
        let s = without_tests(&stripped);
        for (at, _) in s.match_indices(".was(") {
            for old in literals(until_close(s, at + ".was(".len(), false)) {
                assert!(
                    aliases.contains_key(old.as_str()),
                    "{}: .was({old:?}) but ALIASES in src/api/reasons.rs has no {old}",
                    path.display()
                );
                used.insert(old);
            }
        }
    }
    for old in [
        "BUCKET_NOT_EMPTY",
        "BUCKET_CHECK_FAILED",
        "CLUSTER_NO_ENDPOINT",
        "QUOTA_EXCEEDED",
    ] {
        assert!(used.contains(old), "no .was({old:?}) found");
    }
}

/// Every operation of the published document has an entry in src/api/route_reasons.rs,
/// every entry is an operation, every reason listed is catalogued, and each operation's
/// error responses are exactly the statuses of its reasons, each listing them.
#[test]
fn every_operation_lists_its_reasons() {
    use kineticd::api::route_reasons::{EXTENSION, TABLE, entry, parse};
    let doc = serde_json::to_value(kineticd::api::openapi::document()).expect("JSON");
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let Some(id) = op["operationId"].as_str() else {
                continue;
            };
            ids.insert(id.to_owned());
            assert!(
                entry(id).is_some(),
                "{method} {path}: operation {id} has no entry in TABLE (src/api/route_reasons.rs)"
            );
            for (status, resp) in op["responses"].as_object().expect("responses") {
                if !(status.starts_with('4') || status.starts_with('5')) {
                    continue;
                }
                let reasons = resp[EXTENSION]
                    .as_array()
                    .unwrap_or_else(|| panic!("{id} {status}: no {EXTENSION}"));
                assert!(!reasons.is_empty(), "{id} {status}: an empty list");
                for r in reasons {
                    let r = r.as_str().expect("a string");
                    assert!(
                        resp["description"].as_str().unwrap_or("").contains(r),
                        "{id} {status}: the description does not name {r}"
                    );
                }
            }
        }
    }
    for (id, sets) in TABLE {
        assert!(
            ids.contains(*id),
            "TABLE has {id}, which is no operation of the document"
        );
        for item in sets.iter().flat_map(|s| s.iter()) {
            let (r, _) = parse(item);
            assert!(find(r).is_some(), "TABLE {id}: {r} is not in CATALOGUE");
        }
    }
    // A sample: createTeam answers 409 for TEAM_EXISTS and no 404 at all.
    let create = &doc["paths"]["/v1/teams"]["post"]["responses"];
    assert!(
        create["409"][EXTENSION]
            .as_array()
            .is_some_and(|a| a.iter().any(|r| r == "TEAM_EXISTS")),
        "{create:#}"
    );
    assert!(create["404"].is_null(), "{create:#}");
    // Unauthenticated routes answer no token reasons.
    assert!(doc["paths"]["/healthz"]["get"]["responses"]["401"].is_null());
}
