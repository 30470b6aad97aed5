//! The OpenAPI document is usable, not just present: a third-party validator
//! (openapi-spec-validator) accepts it as OpenAPI 3.1, a third-party generator
//! (openapi-python-client) makes a typed Python client from it without a warning, and
//! that client drives the real `kineticd serve --dev` (tests/openapi_client/run.py: create
//! a team, `up` with gpu-l4, wait for the operation, read the cluster and its node pools).
//!
//! The tools live in a venv outside the clone, `KINETIC_OPENAPI_VENV` (default
//! /var/tmp/kineticd-venv), installed from tests/openapi_client/requirements.txt. Without
//! it these tests say why they did not run, unless `KINETIC_REQUIRE_OPENAPI_TOOLS` is set
//! (as .ci/run does): then they fail.

mod common;
// Running tools and reading their output, as the other generated clients do.
#[path = "generated_clients/tools.rs"]
#[allow(dead_code)]
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::dev_server::DevServer;
use tools::{Scratch, run, run_client};

const DEFAULT_VENV: &str = "/var/tmp/kineticd-venv";

/// The venv holding the pinned third-party tools.
struct Tools {
    bin: PathBuf,
}

impl Tools {
    /// The tools, or `None` (after saying why) when they are absent and not required.
    fn find(test: &str) -> Option<Tools> {
        let venv = std::env::var_os("KINETIC_OPENAPI_VENV")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_VENV));
        let bin = venv.join("bin");
        let missing: Vec<&str> = ["python", "openapi-spec-validator", "openapi-python-client"]
            .into_iter()
            .filter(|tool| !bin.join(tool).is_file())
            .collect();
        if missing.is_empty() {
            return Some(Tools { bin });
        }
        let (missing, venv) = (missing.join(", "), venv.display());
        let how = format!(
            "{test} needs {missing} in the venv {venv}: python3 -m venv {venv} && \
             {venv}/bin/pip install -r tests/openapi_client/requirements.txt"
        );
        // CI (KINETIC_REQUIRE_OPENAPI_TOOLS=1, set by .ci/run) must run it; a developer's
        // machine without the venv says why it did not, instead of failing `cargo test`.
        assert!(
            std::env::var_os("KINETIC_REQUIRE_OPENAPI_TOOLS").is_none(),
            "{how}"
        );
        eprintln!("SKIPPED: {how}");
        None
    }

    /// A command running `tool` of the venv, with the venv first on PATH (the generator
    /// runs ruff from there).
    fn command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(self.bin.join(tool));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let paths = std::iter::once(self.bin.clone()).chain(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(paths).expect("PATH"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null());
        cmd
    }
}

/// The document the code generates, written to `scratch`.
fn document(scratch: &Scratch) -> PathBuf {
    scratch.write("kineticd.json", &kineticd::api::openapi::document_json())
}

/// Generates the typed client package `kineticd_client` into `dir` (with
/// `tests/openapi_client/generator.yaml`), failing on any warning of the generator.
fn generate_client(tools: &Tools, document: &Path, dir: &Path) {
    run(
        tools
            .command("openapi-python-client")
            .arg("generate")
            .arg("--path")
            .arg(document)
            .args(["--meta", "none", "--fail-on-warning", "--config"])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openapi_client/generator.yaml"))
            .arg("--output-path")
            .arg(dir.join("kineticd_client"))
            .current_dir(dir),
        "openapi-python-client generate",
    );
    assert!(
        dir.join("kineticd_client/api/clusters/apply_cluster.py")
            .is_file(),
        "the generator wrote no kineticd_client package in {}",
        dir.display()
    );
}

#[test]
fn third_party_validator_accepts_the_document() {
    let Some(tools) = Tools::find("third_party_validator_accepts_the_document") else {
        return;
    };
    let scratch = Scratch::new("openapi-validate");
    let document = document(&scratch);
    let out = run(
        tools.command("openapi-spec-validator").arg(&document),
        "openapi-spec-validator",
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(": OK"), "validator output: {said}");
}

#[tokio::test]
async fn generated_python_client_drives_serve_dev() {
    let Some(tools) = Tools::find("generated_python_client_drives_serve_dev") else {
        return;
    };
    let scratch = Scratch::new("openapi-client");
    generate_client(&tools, &document(&scratch), &scratch.0);

    // A fresh database on the test server (DATABASE_URL's, or the private one).
    let (db, url) = common::fresh_db().await;
    db.close().await;
    let server = DevServer::start("openapi-client", |cmd| {
        cmd.env("DATABASE_URL", &url).env("KINETIC_SIM_SPEED", "0");
    });

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openapi_client/run.py");
    let mut cmd = tools.command("python");
    cmd.arg(script)
        .arg(&server.api)
        .env("PYTHONPATH", &scratch.0)
        .current_dir(&scratch.0);
    let said = run_client(cmd, "the generated Python client's script", &server).await;
    println!("{said}");
}
