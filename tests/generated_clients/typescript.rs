//! The TypeScript client: openapi-generator `typescript-fetch` generates it from the 3.0
//! rendering (the generator's 3.1 support is in beta; it says so at every run), the
//! pinned `tsc` compiles it with
//! tests/openapi_client_ts/run.ts in strict mode, and Node runs the day in the life
//! against `serve --dev`.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::time::Instant;

use super::common;
use super::common::dev_server::DevServer;
use super::tools::{Scratch, Tools, run, run_client};

/// The committed sources of the TypeScript side.
fn source(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/openapi_client_ts")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// What the generator logs at WARN that says nothing about the document: it names the
/// inline members of composed schemas (`allOf` of a `$ref` and the flattened fields, as
/// in AcceleratorCapacity; the `oneOf` of Action) itself, and logs that they had none.
const BENIGN_WARNINGS: [&str; 1] = ["Failed to get the schema name: null"];

/// Generates the client into `scratch/client`, without docs; the generator may warn of
/// nothing but [`BENIGN_WARNINGS`].
fn generate(tools: &Tools, scratch: &Scratch) {
    let document = scratch.write(
        "kineticd.openapi30.json",
        &kineticd::api::openapi30::document_json(),
    );
    let out = run(
        tools
            .openapi_generator()
            .args(["generate", "-g", "typescript-fetch", "-i"])
            .arg(&document)
            .arg("-o")
            .arg(scratch.0.join("client"))
            .args([
                "--global-property",
                "apiDocs=false,modelDocs=false,apiTests=false,modelTests=false",
                "--additional-properties",
                "supportsES6=true",
            ]),
        "openapi-generator generate -g typescript-fetch",
    );
    let said = String::from_utf8_lossy(&out.stdout);
    let warnings: Vec<&str> = said
        .lines()
        .filter(|l| l.contains(" WARN ") && !BENIGN_WARNINGS.iter().any(|b| l.ends_with(b)))
        .collect();
    assert!(
        warnings.is_empty(),
        "the generator warned:\n{}",
        warnings.join("\n")
    );
    assert!(
        scratch.0.join("client/apis/ClustersApi.ts").is_file(),
        "the generator wrote no client in {}",
        scratch.0.display()
    );
}

#[tokio::test]
async fn generated_typescript_client_drives_serve_dev() {
    let Some(tools) = Tools::find("generated_typescript_client_drives_serve_dev", true) else {
        return;
    };
    let scratch = Scratch::new("typescript");
    let started = Instant::now();
    generate(&tools, &scratch);
    let generated = started.elapsed();

    scratch.write("run.ts", &source("run.ts"));
    scratch.write("tsconfig.json", &source("tsconfig.json"));
    symlink(
        tools.npm_dir.join("node_modules"),
        scratch.0.join("node_modules"),
    )
    .expect("link node_modules");
    run(
        tools
            .tsc()
            .arg("-p")
            .arg(scratch.0.join("tsconfig.json"))
            .current_dir(&scratch.0),
        "tsc (strict) of the generated client and run.ts",
    );
    let compiled = started.elapsed() - generated;

    let (db, url) = common::fresh_db().await;
    db.close().await;
    let server = DevServer::start("generated-ts", |cmd| {
        cmd.env("DATABASE_URL", &url).env("KINETIC_SIM_SPEED", "0");
    });
    let mut cmd = std::process::Command::new("node");
    cmd.arg(scratch.0.join("out/run.js"))
        .arg(&server.api)
        .current_dir(&scratch.0)
        .stdin(std::process::Stdio::null());
    let said = run_client(cmd, "the generated TypeScript client's program", &server).await;
    println!(
        "{said}generate {:.1} s, tsc {:.1} s",
        generated.as_secs_f64(),
        compiled.as_secs_f64()
    );
}
