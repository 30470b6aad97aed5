//! The committed OpenAPI document (`openapi/kineticd.json`) is exactly what the code
//! generates. Regenerate with `cargo run -- openapi > openapi/kineticd.json`; its 3.0
//! rendering (`openapi/kineticd.openapi30.json`, which tests/generated_clients.rs builds
//! the progenitor client from) with `cargo run -- openapi --openapi-version 3.0 >
//! openapi/kineticd.openapi30.json`.

#[path = "common/api_paths.rs"]
mod api_paths;

/// `file` (under openapi/) holds exactly `generated`; with UPDATE_OPENAPI set it is
/// rewritten instead. `regenerate`: the command that writes it.
fn assert_committed(file: &str, generated: &str, regenerate: &str) {
    let path = format!("{}/openapi/{file}", env!("CARGO_MANIFEST_DIR"));
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        return;
    }
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, generated).unwrap_or_else(|e| panic!("write openapi/{file}: {e}"));
        return;
    }
    panic!(
        "openapi/{file} is out of date with the code: run `{regenerate} > openapi/{file}` \
         (or UPDATE_OPENAPI=1 cargo test --test openapi) and commit it"
    );
}

#[test]
fn committed_openapi_matches_the_code() {
    let generated = kineticd::api::openapi::document_json();
    assert_committed("kineticd.json", &generated, "cargo run -- openapi");
}

#[test]
fn committed_openapi30_rendering_matches_the_code() {
    let generated = kineticd::api::openapi30::document_json();
    let regenerate = "cargo run -- openapi --openapi-version 3.0";
    assert_committed("kineticd.openapi30.json", &generated, regenerate);
}

#[test]
fn every_route_documents_its_errors_and_security() {
    let doc: serde_json::Value =
        serde_json::from_str(&kineticd::api::openapi::document_json()).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for &must in api_paths::DOCUMENTED {
        assert!(paths.contains_key(must), "{must} is not documented");
    }
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            if !path.starts_with("/v1/") {
                continue;
            }
            // The statuses an operation can answer: 404 only where something can be
            // missing (src/api/route_reasons.rs; tests/errors_doc.rs checks the rest).
            let responses = op["responses"].as_object().unwrap();
            for code in ["400", "401", "500", "503"] {
                assert!(
                    responses.contains_key(code),
                    "{method} {path} does not document {code}"
                );
            }
        }
    }
    // Clients send `Authorization: Bearer <ID token>`; IAP's own header is not theirs.
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(
        (bearer["type"].as_str(), bearer["scheme"].as_str()),
        (Some("http"), Some("bearer")),
        "{bearer}"
    );
    assert_eq!(doc["security"][0]["bearer"], serde_json::json!([]));
    assert!(doc["servers"][0]["url"].is_string(), "{}", doc["servers"]);
    // Development-only routes are routed but never published.
    assert!(
        paths.keys().all(|p| !p.starts_with("/v1/testing/")),
        "{:?}",
        paths.keys()
    );
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}

/// OpenAPI 3.1 requires a `description` on every response; client generators also need
/// one unique `operationId` per operation (it names the generated method), a declared
/// parameter for every `{name}` of a path, and `$ref`s that resolve.
#[test]
fn every_operation_is_complete_for_client_generators() {
    let doc: serde_json::Value =
        serde_json::from_str(&kineticd::api::openapi::document_json()).unwrap();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1."),
        "{}",
        doc["openapi"]
    );
    let mut problems = Vec::new();
    let mut operation_ids = std::collections::BTreeMap::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let at = format!("{} {path}", method.to_uppercase());
            match op["operationId"].as_str() {
                Some(id) if is_identifier(id) => {
                    if let Some(other) = operation_ids.insert(id.to_owned(), at.clone()) {
                        problems.push(format!("{at}: operationId {id} is also {other}'s"));
                    }
                }
                other => problems.push(format!("{at}: operationId {other:?} is not an identifier")),
            }
            for (code, response) in op["responses"].as_object().unwrap() {
                if !response["description"].is_string() {
                    problems.push(format!("{at}: response {code} has no description"));
                }
            }
            for name in path_parameters(path) {
                let declared = op["parameters"]
                    .as_array()
                    .is_some_and(|ps| ps.iter().any(|p| p["in"] == "path" && p["name"] == name));
                if !declared {
                    problems.push(format!("{at}: path parameter {name} is not declared"));
                }
            }
        }
    }
    for name in doc["components"]["schemas"].as_object().unwrap().keys() {
        // Component names become class names: `^[a-zA-Z0-9._-]+$` (the spec), PascalCase.
        let ok = name.starts_with(|c: char| c.is_ascii_uppercase())
            && name.chars().all(|c| c.is_ascii_alphanumeric());
        if !ok {
            problems.push(format!("schema name {name:?} is not PascalCase"));
        }
    }
    collect_schema_problems(&doc, &doc, &mut problems);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A stable lowerCamelCase operationId in Google's method style (`createTeam`,
/// `listNodePools`, `cancelOperation`): a verb, then the resource.
fn is_identifier(id: &str) -> bool {
    const VERBS: &[&str] = &[
        "get", "list", "create", "update", "delete", "replace", "apply", "cancel", "wait", "watch",
        "activate", "check", "diagnose", "drill", "preview", "sync", "approve", "reject",
        "evaluate", "snooze", "discover", "import", "search",
    ];
    id.chars().all(|c| c.is_ascii_alphanumeric())
        && VERBS.iter().any(|v| {
            id.strip_prefix(v)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
        })
}

/// The `{name}`s of a path template.
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .collect()
}

/// Every `$ref` under `value` that does not point at something in `doc`, and every
/// OpenAPI 3.0 `nullable` (3.1 spells it `"type": [..., "null"]`).
fn collect_schema_problems(
    doc: &serde_json::Value,
    value: &serde_json::Value,
    out: &mut Vec<String>,
) {
    match value {
        serde_json::Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(|r| r.as_str()) {
                let resolved = r.strip_prefix('#').and_then(|pointer| doc.pointer(pointer));
                if resolved.is_none() {
                    out.push(format!("$ref {r} does not resolve"));
                }
            }
            if map.get("nullable").is_some_and(|n| n.is_boolean()) {
                out.push(format!("OpenAPI 3.0 `nullable` in {value}"));
            }
            map.values()
                .for_each(|v| collect_schema_problems(doc, v, out));
        }
        serde_json::Value::Array(items) => items
            .iter()
            .for_each(|v| collect_schema_problems(doc, v, out)),
        _ => {}
    }
}
