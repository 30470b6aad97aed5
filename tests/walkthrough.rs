//! The README's curl walk-through, run exactly as written: the block fenced
//! ```` ```sh title="walkthrough" ```` is taken from README.md and run with
//! `bash -euo pipefail` against the real `kineticd serve --dev` binary (simulator in
//! process at speed 0, a fresh database of the test server). The block checks every
//! state itself and exits non-zero on the first surprise; this test also checks that the
//! expected states were printed, in order.

mod common;

use std::time::{Duration, Instant};

use common::shell::{fenced_blocks, instant_dev_server, jq_or_skip, repo_file, run_script};

/// Opening line of the block (the info string after the language tag marks it).
const FENCE: &str = "```sh title=\"walkthrough\"";

/// The body of the one walk-through block of `readme`.
fn walkthrough_block(readme: &str) -> String {
    let mut blocks = fenced_blocks(readme, FENCE);
    assert_eq!(
        blocks.len(),
        1,
        "README.md must hold exactly one {FENCE} block"
    );
    blocks.remove(0)
}

#[test]
fn readme_block_is_found() {
    let script = walkthrough_block(&repo_file("README.md"));
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
    if !jq_or_skip("the README walk-through") {
        return;
    }
    let script = walkthrough_block(&repo_file("README.md"));

    let server = instant_dev_server("walkthrough").await;
    // About 10 s on an idle machine; generous for a loaded one.
    let run = run_script(
        &server,
        &script,
        &[("API", &server.api)],
        Duration::from_secs(300),
    )
    .await;
    run.assert_success();
    // The states the walk-through goes through, in order.
    run.assert_printed_in_order(&[
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
    ]);
    println!(
        "walk-through passed in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
