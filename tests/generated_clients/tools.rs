//! The pinned third-party tools the generated-client tests run (openapi-generator from
//! the venv, java, node, the npm tools), a scratch folder, and running a command to
//! completion with its output kept for the failure message.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::common::dev_server::DevServer;

const DEFAULT_VENV: &str = "/var/tmp/kineticd-venv";
const DEFAULT_NPM_DIR: &str = "/var/tmp/kineticd-npm";

/// Where the tools are.
pub struct Tools {
    /// The venv's bin folder (openapi-generator-cli).
    venv_bin: PathBuf,
    /// The folder `npm ci` ran in (node_modules with tsc and Node's types).
    pub npm_dir: PathBuf,
}

impl Tools {
    /// The tools, or `None` (after saying why) when one is absent and not required.
    /// `need_node`: the TypeScript test also needs node and the npm tools.
    pub fn find(test: &str, need_node: bool) -> Option<Tools> {
        let venv = env_path("KINETIC_OPENAPI_VENV", DEFAULT_VENV);
        let npm_dir = env_path("KINETIC_NPM_DIR", DEFAULT_NPM_DIR);
        let venv_bin = venv.join("bin");
        let mut missing = Vec::new();
        if !venv_bin.join("openapi-generator-cli").is_file() {
            missing.push(format!(
                "openapi-generator-cli in the venv {} (python3 -m venv {0} && {0}/bin/pip \
                 install -r tests/openapi_client/requirements.txt)",
                venv.display()
            ));
        }
        if !on_path("java") {
            missing.push("java on PATH (openapi-generator runs on it)".to_owned());
        }
        if need_node {
            if !on_path("node") {
                missing.push("node on PATH".to_owned());
            }
            if !tsc(&npm_dir).is_file() {
                missing.push(format!(
                    "the npm tools in {} (mkdir -p {0} && cp tests/openapi_client_ts/package*.json \
                     {0} && npm ci --prefix {0})",
                    npm_dir.display()
                ));
            }
        }
        if missing.is_empty() {
            return Some(Tools { venv_bin, npm_dir });
        }
        let how = format!("{test} needs {}", missing.join("; "));
        // CI (KINETIC_REQUIRE_OPENAPI_TOOLS=1, set by .ci/run) must run it; a developer's
        // machine without the tools says why it did not, instead of failing `cargo test`.
        assert!(
            std::env::var_os("KINETIC_REQUIRE_OPENAPI_TOOLS").is_none(),
            "{how}"
        );
        eprintln!("SKIPPED: {how}");
        None
    }

    /// `openapi-generator-cli ARGS...` from the venv.
    pub fn openapi_generator(&self) -> Command {
        let mut cmd = Command::new(self.venv_bin.join("openapi-generator-cli"));
        cmd.stdin(Stdio::null());
        cmd
    }

    /// `node .../typescript/bin/tsc` of the pinned npm tools.
    pub fn tsc(&self) -> Command {
        let mut cmd = Command::new("node");
        cmd.arg(tsc(&self.npm_dir)).stdin(Stdio::null());
        cmd
    }
}

fn env_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

fn tsc(npm_dir: &Path) -> PathBuf {
    npm_dir.join("node_modules/typescript/bin/tsc")
}

fn on_path(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| dir.join(tool).is_file())
}

/// A folder of this test process under the system temp dir, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "kineticd-generated-clients-{label}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch folder");
        Scratch(dir)
    }

    /// Writes `text` to `name` here; returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn output_text(out: &Output) -> String {
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs `cmd` to completion; panics with its output unless it succeeded.
pub fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        output_text(&out)
    );
    out
}

/// Runs `cmd`, a generated client's program driving `server`, for at most 600 s; panics
/// with its output and the server log's last lines unless it succeeded and printed
/// `typed client: ok`. Returns what it printed.
pub async fn run_client(cmd: Command, what: &str, server: &DevServer) -> String {
    let run = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within 600 s"))
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n--- server log (last lines)\n{}",
        out.status,
        output_text(&out),
        server.log_tail(40)
    );
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("typed client: ok"), "{what} output: {said}");
    said
}
