//! Documented shell examples run as tests: the fenced blocks of a markdown file, run with
//! `bash -euo pipefail` against a [`DevServer`], and the checks on what they printed.
//!
//! Invariant: a block runs exactly as written in the document (only its environment is
//! set by the test), so a document whose examples pass here is true as published.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use super::dev_server::DevServer;

/// Runs `cmd` (`what` names it) to completion and asserts it exited 0, else panics with
/// its stderr; its stdout.
pub async fn stdout_of(cmd: &mut tokio::process::Command, what: &str) -> String {
    let out = cmd
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `jq` is installed. Without it, a test that needs it says SKIPPED (`what`
/// names it), except where `KINETIC_REQUIRE_JQ` is set (CI), where it fails.
pub fn jq_or_skip(what: &str) -> bool {
    let found = std::process::Command::new("bash")
        .args(["-c", "command -v jq"])
        .output()
        .expect("run bash")
        .status
        .success();
    if !found {
        assert!(
            std::env::var_os("KINETIC_REQUIRE_JQ").is_none(),
            "{what} needs jq (Debian/Ubuntu: apt-get install jq; macOS: brew install jq)"
        );
        eprintln!(
            "SKIPPED: {what} needs jq, which is not installed (apt-get install jq / brew install jq)"
        );
    }
    found
}

/// Whether `gcloud` is on the PATH; panics when it is not and CI requires it.
pub fn gcloud_installed() -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).any(|dir| dir.join("gcloud").is_file());
    if !found && std::env::var("KINETIC_REQUIRE_GCLOUD").as_deref() == Ok("1") {
        panic!("gcloud is required (KINETIC_REQUIRE_GCLOUD=1) but is not on the PATH");
    }
    if !found {
        eprintln!("SKIPPED: gcloud is not installed (set KINETIC_REQUIRE_GCLOUD=1 to require it)");
    }
    found
}

/// The bodies of the blocks of `doc` whose opening fence line is exactly `fence`, in order.
pub fn fenced_blocks(doc: &str, fence: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != fence {
            continue;
        }
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| l.trim_end() != "```")
            .collect();
        let mut script = body.join("\n");
        script.push('\n');
        blocks.push(script);
    }
    blocks
}

/// A file of the repository, as text.
pub fn repo_file(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// `serve --dev` on a fresh database of the test server (DATABASE_URL's, or the private
/// one), its simulator at speed 0 (every cloud wait ends at once).
pub async fn instant_dev_server(label: &str) -> DevServer {
    let (db, url) = super::fresh_db().await;
    db.close().await;
    DevServer::start(label, |cmd| {
        cmd.env("DATABASE_URL", &url).env("KINETIC_SIM_SPEED", "0");
    })
}

/// What a script printed, with the server's log for failure messages.
pub struct ScriptRun<'a> {
    pub out: Output,
    pub server: &'a DevServer,
}

/// Runs `script` with `bash -euo pipefail` in the repository's root, with `env` added,
/// allowing it `limit` (generous: the machine may be loaded).
pub async fn run_script<'a>(
    server: &'a DevServer,
    script: &str,
    env: &[(&str, &str)],
    limit: Duration,
) -> ScriptRun<'a> {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", script])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(limit, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("the script finished within {limit:?}"))
        .expect("run bash");
    ScriptRun { out, server }
}

impl ScriptRun<'_> {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// Everything needed to see why a script failed.
    pub fn report(&self) -> String {
        format!(
            "--- script stdout\n{}\n--- script stderr\n{}\n--- server log (last lines)\n{}",
            self.stdout(),
            String::from_utf8_lossy(&self.out.stderr),
            self.server.log_tail(40)
        )
    }

    /// The script exited 0 and printed nothing containing `FAILED` on stderr.
    pub fn assert_success(&self) {
        assert!(
            self.out.status.success(),
            "script failed ({}):\n{}",
            self.out.status,
            self.report()
        );
        assert!(
            !String::from_utf8_lossy(&self.out.stderr).contains("FAILED"),
            "script reported a failure:\n{}",
            self.report()
        );
    }

    /// Each of `expected` appears in stdout, in this order.
    pub fn assert_printed_in_order(&self, expected: &[&str]) {
        let stdout = self.stdout();
        let mut rest: &str = &stdout;
        for e in expected {
            match rest.find(e) {
                Some(at) => rest = &rest[at + e.len()..],
                None => panic!("output lacks {e:?} (in order):\n{}", self.report()),
            }
        }
    }
}
