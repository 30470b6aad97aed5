//! `openapi-generator validate` reports no error and no warning on the
//! published document (OpenAPI 3.1) nor on its 3.0 rendering.

use super::tools::{Scratch, Tools, output_text};

/// Validates `document`: no error and no warning.
fn validate(tools: &Tools, scratch: &Scratch, name: &str, document: &str) {
    let path = scratch.write(name, document);
    let out = tools
        .openapi_generator()
        .args(["validate", "-i"])
        .arg(&path)
        .output()
        .expect("run openapi-generator-cli validate");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "openapi-generator validate found errors in {name}:\n{}",
        output_text(&out)
    );
    let issues: Vec<&str> = said
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .collect();
    assert!(
        issues.is_empty(),
        "openapi-generator validate warns about {name}: {issues:#?}\n{}",
        output_text(&out)
    );
    assert!(
        said.contains("No validation issues detected."),
        "unexpected output: {said}"
    );
}

#[test]
fn openapi_generator_validates_both_renderings() {
    let Some(tools) = Tools::find("openapi_generator_validates_both_renderings", false) else {
        return;
    };
    let scratch = Scratch::new("validate");
    validate(
        &tools,
        &scratch,
        "kineticd.json",
        &kineticd::api::openapi::document_json(),
    );
    validate(
        &tools,
        &scratch,
        "kineticd.openapi30.json",
        &kineticd::api::openapi30::document_json(),
    );
}
