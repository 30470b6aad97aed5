//! The committed OpenAPI document (`openapi/kineticd.json`) is exactly what the code
//! generates. Regenerate with `cargo run -- openapi > openapi/kineticd.json`.

#[test]
fn committed_openapi_matches_the_code() {
    let generated = kineticd::api::openapi::document_json();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/kineticd.json");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed != generated {
        if std::env::var_os("UPDATE_OPENAPI").is_some() {
            std::fs::write(path, &generated).expect("write openapi/kineticd.json");
            return;
        }
        panic!(
            "openapi/kineticd.json is out of date with the code: run \
             `cargo run -- openapi > openapi/kineticd.json` (or UPDATE_OPENAPI=1 cargo test --test openapi) and commit it"
        );
    }
}

#[test]
fn every_route_documents_its_errors_and_security() {
    let doc: serde_json::Value =
        serde_json::from_str(&kineticd::api::openapi::document_json()).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for must in [
        "/v1/me",
        "/v1/teams",
        "/v1/teams/{team}",
        "/v1/teams/{team}/members",
        "/v1/teams/{team}/members/{email}",
        "/v1/profiles",
        "/v1/profiles/{profile}",
        "/v1/profiles/{profile}:activate",
        "/v1/clusters",
        "/v1/projects/{project}/zones/{zone}/clusters",
        "/v1/projects/{project}/zones/{zone}/clusters/{cluster}",
        "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools",
        "/v1/projects/{project}/zones/{zone}/clusters/{cluster}/nodePools/{pool}",
        "/v1/operations",
        "/v1/operations/{operation}",
        "/v1/operations/{operation}:cancel",
        "/v1/operations/{operation}:wait",
        "/v1/operations/{operation}:watch",
        "/healthz",
        "/readyz",
        "/metrics",
    ] {
        assert!(paths.contains_key(must), "{must} is not documented");
    }
    for (path, item) in paths {
        for (method, op) in item.as_object().unwrap() {
            if !path.starts_with("/v1/") {
                continue;
            }
            let responses = op["responses"].as_object().unwrap();
            for code in ["400", "401", "404", "500"] {
                assert!(
                    responses.contains_key(code),
                    "{method} {path} does not document {code}"
                );
            }
        }
    }
    assert!(doc["components"]["securitySchemes"]["iap"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
}
