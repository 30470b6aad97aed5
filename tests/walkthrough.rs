//! The README's curl walk-through, run exactly as written: the block fenced
//! ```` ```sh title="walkthrough" ```` is taken from README.md and run with
//! `bash -euo pipefail` against the real `kineticd serve --dev` binary (simulator in
//! process at speed 0, a fresh database of the test server). The block checks every
//! state itself and exits non-zero on the first surprise; this test also checks that the
//! expected states were printed, in order.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::dev_server::DevServer;

/// Opening line of the block (the info string after the language tag marks it).
const FENCE: &str = "```sh title=\"walkthrough\"";

/// The body of the one walk-through block of `readme`.
fn walkthrough_block(readme: &str) -> String {
    let lines: Vec<&str> = readme.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_end() == FENCE)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        starts.len(),
        1,
        "README.md must hold exactly one {FENCE} block"
    );
    let body = &lines[starts[0] + 1..];
    let end = body
        .iter()
        .position(|l| l.trim_end() == "```")
        .expect("the walk-through block is closed");
    let mut script = body[..end].join("\n");
    script.push('\n');
    script
}

#[test]
fn readme_block_is_found() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let script = walkthrough_block(&readme);
    for needle in [
        "wait_op",
        "validateOnly=true",
        "tpu-v5litepod-16",
        "/v1/profiles",
    ] {
        assert!(script.contains(needle), "walk-through lacks {needle}");
    }
}

#[tokio::test]
async fn readme_walkthrough_runs_against_serve_dev() {
    let started = Instant::now();
    let jq = Command::new("bash")
        .args(["-c", "command -v jq"])
        .output()
        .expect("run bash");
    if !jq.status.success() {
        // CI (KINETIC_REQUIRE_JQ=1, set by .ci/run) must run it; a developer's machine
        // without jq says why it did not, instead of failing `cargo test`.
        assert!(
            std::env::var_os("KINETIC_REQUIRE_JQ").is_none(),
            "the README walk-through needs jq (Debian/Ubuntu: apt-get install jq; macOS: brew install jq)"
        );
        eprintln!(
            "SKIPPED: the README walk-through needs jq, which is not installed (apt-get install jq / brew install jq)"
        );
        return;
    }
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let script = walkthrough_block(&readme);

    // A fresh database on the test server (DATABASE_URL's, or the private one).
    let (db, url) = common::fresh_db().await;
    db.close().await;
    let server = DevServer::start("walkthrough", |cmd| {
        cmd.env("DATABASE_URL", &url).env("KINETIC_SIM_SPEED", "0");
    });
    let api = server.api.clone();

    let run = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .env("API", &api)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    // About 10 s on an idle machine; generous for a loaded one.
    let out = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the walk-through finished within 300 s")
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = || {
        format!(
            "--- walk-through stdout\n{stdout}\n--- walk-through stderr\n{stderr}\n--- server log (last lines)\n{}",
            server.log_tail(40)
        )
    };
    assert!(
        out.status.success(),
        "walk-through failed ({}):\n{}",
        out.status,
        report()
    );
    assert!(
        !stderr.contains("FAILED"),
        "walk-through reported a failure:\n{}",
        report()
    );
    // The states the walk-through goes through, in order.
    let expected = [
        "ok: CREATE",
        r#""type":"UP_CLUSTER","state":"SUCCEEDED""#,
        "ok: RUNNING",
        r#"{"gke":"RUNNING""#,
        "ok: RUNNING 0",
        r#""type":"ADD_NODE_POOL","state":"SUCCEEDED""#,
        "TPU tpu-v5litepod-16 RUNNING",
        r#""type":"REMOVE_NODE_POOL","state":"SUCCEEDED""#,
        "ok: 0",
        r#""type":"DOWN_CLUSTER","state":"SUCCEEDED""#,
        "ok: DELETED",
        r#""profileId":"demo""#,
        r#""stale":true"#,
        "ok: true",
        "walkthrough complete",
    ];
    let mut rest: &str = &stdout;
    for e in expected {
        match rest.find(e) {
            Some(at) => rest = &rest[at + e.len()..],
            None => panic!("walk-through output lacks {e:?} (in order):\n{}", report()),
        }
    }
    println!(
        "walk-through passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
