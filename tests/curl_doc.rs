//! docs/curl.md, run as written: every ```` ```bash ```` block of the document, in order,
//! as one script with `bash -euo pipefail` from the repository's root (so `deploy/kn.sh`
//! is the helper the document uses) against the real `kineticd serve --dev` binary
//! (a fresh database of the test server, the built-in simulator at speed 0). The blocks
//! check their own results (`kn wait` fails on an operation that did not end as
//! expected, `jq -e` on a false answer); this test also checks the milestones of the day
//! were printed, in order.

mod common;

use std::time::{Duration, Instant};

use common::shell::{fenced_blocks, instant_dev_server, jq_or_skip, repo_file, run_script};

/// The opening line of a block that runs; other blocks (```` ```sh ````, output in
/// ```` ```text ````) are illustrations.
const RUN_FENCE: &str = "```bash";

fn script() -> String {
    fenced_blocks(&repo_file("docs/curl.md"), RUN_FENCE).concat()
}

#[test]
fn the_document_covers_a_whole_day() {
    let script = script();
    for (what, needle) in [
        ("create team", "kn post teams "),
        ("add members", "/members/"),
        ("up", "kn put "),
        ("poll", "kn get \"$OP\""),
        ("wait", "kn wait "),
        ("status", "/status\""),
        ("credentials", "kn kubeconfig"),
        ("pool add with failover", "\"failover\":true"),
        ("pool list", "/nodePools\" |"),
        ("pool resize", "kn patch \"$C/nodePools/"),
        ("accelerators", "kn get accelerators"),
        ("operations with filters", "operations?filter="),
        ("cancel", ":cancel"),
        ("pool remove", "kn delete \"$C/nodePools/"),
        ("down", "kn delete \"$C\""),
    ] {
        assert!(
            script.contains(needle),
            "docs/curl.md lacks {what} ({needle})"
        );
    }
}

#[tokio::test]
async fn every_example_runs_against_serve_dev() {
    let started = Instant::now();
    if !jq_or_skip("docs/curl.md") {
        return;
    }
    let server = instant_dev_server("curl-doc").await;
    let run = run_script(
        &server,
        &script(),
        &[("KN_URL", &server.api), ("SIM", &server.sim)],
        Duration::from_secs(300),
    )
    .await;
    run.assert_success();
    run.assert_printed_in_order(&[
        "teams/ml-research",
        "bob@example.com MEMBER",
        "UP_CLUSTER SUCCEEDED",
        "projects/ml-research-gcp/zones/us-central1-a/clusters/train",
        "ADD_NODE_POOL SUCCEEDED",
        "spot=false ON_DEMAND RUNNING",
        "spot=true SPOT RUNNING",
        "maxNodes 10 -> 12",
        "ADD_NODE_POOL CANCELLED",
        "CPU_POOL_NOT_ALLOWED",
        "REMOVE_NODE_POOL SUCCEEDED",
        "DOWN_CLUSTER SUCCEEDED",
        "the day is over",
    ]);
    println!("{}", run.stdout());
    println!(
        "docs/curl.md ran in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
