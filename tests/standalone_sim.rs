//! The README's standalone set-up, end to end: `kineticd sim` runs as its own process
//! and prints `export KEY=value` lines; `kineticd serve` (production mode: no `--dev`,
//! its environment cleared) gets only those variables plus a database and the dev
//! identity, and an `up` of a gpu-l4 cluster through the REST API succeeds, with the
//! manifests served by the simulator (nothing fetched from the internet). The same
//! processes' output is plain text (no ANSI colours into pipes or files), and their
//! `/metrics` describe every family and use one label style.

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use serve_process::{LogPath, Server, SimProcess};

const OWNER: &str = "standalone-owner@example.com";
const CLUSTER: &str = "/v1/projects/standalone-proj/zones/us-central1-a/clusters/sa";

/// A `kineticd sim`, a `kineticd serve` configured only with what the simulator printed,
/// and a finished `up` of a gpu-l4 cluster.
struct Standalone {
    sim: SimProcess,
    server: Server,
    db: kineticd::store::Db,
    http: reqwest::Client,
    log_path: LogPath,
    /// The `up` operation, done.
    op: Value,
}

impl Standalone {
    async fn up(name: &str) -> Standalone {
        let sim = SimProcess::start(&[]);
        let printed: BTreeMap<String, String> = sim.exports().into_iter().collect();
        for key in [
            "KINETIC_GCP_URL",
            "KINETIC_GCP_AUTH",
            "KINETIC_SIM_SPEED",
            "KINETIC_LWS_MANIFEST_URL",
            "KINETIC_LWS_MANIFEST_SHA256",
            "KINETIC_NVIDIA_DRIVER_MANIFEST_URL",
            "KINETIC_NVIDIA_DRIVER_MANIFEST_SHA256",
        ] {
            assert!(
                printed.contains_key(key),
                "kineticd sim did not print {key}: {:#?}",
                sim.printed
            );
        }
        let env = sim.serve_env();

        let (db, url) = common::fresh_db().await;
        let http = kineticd::app::http_client().expect("http client");
        let (log_path, log) = LogPath::temp(name);
        let server = Server::start_healthy(&url, &log, &log_path, &http, &env).await;
        let call = |method: reqwest::Method, path: &str| {
            http.request(method, server.url(path))
                .header("x-kinetic-user", OWNER)
        };
        let r = call(reqwest::Method::POST, "/v1/teams")
            .json(&json!({"teamId": "standalone", "projects": ["standalone-proj"]}))
            .send()
            .await
            .expect("create team");
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
        let r = call(reqwest::Method::PUT, CLUSTER)
            .json(&json!({"accelerator": "gpu-l4"}))
            .send()
            .await
            .expect("up");
        assert_eq!(r.status(), 202, "{}", r.text().await.unwrap_or_default());
        let op: Value = r.json().await.expect("operation");
        let name = op["name"].as_str().expect("operation name").to_owned();

        // Long-poll until done; a generous deadline (the simulator's GKE takes seconds).
        let deadline = Instant::now() + Duration::from_secs(300);
        let op = loop {
            let op: Value = call(
                reqwest::Method::POST,
                &format!("/v1/{name}:wait?timeout=30s"),
            )
            .send()
            .await
            .expect(":wait")
            .json()
            .await
            .expect(":wait body");
            if op["done"] == true {
                break op;
            }
            assert!(
                Instant::now() < deadline,
                "up not done after 300 s: {op}; log: {log_path}"
            );
        };
        Standalone {
            sim,
            server,
            db,
            http,
            log_path,
            op,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_through_serve_against_a_separate_sim_configured_only_by_what_it_printed() {
    let mut s = Standalone::up("standalone-up").await;
    assert_eq!(
        s.op["metadata"]["state"], "SUCCEEDED",
        "{}; log: {}",
        s.op, s.log_path
    );
    let cluster: Value = s
        .http
        .get(s.server.url(CLUSTER))
        .header("x-kinetic-user", OWNER)
        .send()
        .await
        .expect("get cluster")
        .json()
        .await
        .expect("cluster body");
    assert_eq!(cluster["state"], "RUNNING", "{cluster}");

    // Both manifests came from the simulator, as pinned by what it printed.
    let sim_url = s.sim.url();
    let steps: Value = sqlx::query_scalar("SELECT steps FROM operations")
        .fetch_one(&s.db)
        .await
        .expect("steps");
    let manifests: Vec<&Value> = steps
        .as_array()
        .expect("steps array")
        .iter()
        .filter_map(|step| step["result"].get("manifest"))
        .collect();
    assert_eq!(manifests.len(), 2, "LWS and the driver installer: {steps}");
    for m in manifests {
        let url = m["url"].as_str().unwrap_or_default();
        assert!(
            url.starts_with(&format!("{sim_url}/sim/v1/manifests/")),
            "{m}"
        );
    }

    // Output into a pipe (the simulator) and a file (serve) carries no ANSI colours.
    s.server.kill();
    s.sim.child.kill();
    let sim_output: Vec<String> = s
        .sim
        .printed
        .iter()
        .cloned()
        .chain(s.sim.rest.try_iter())
        .collect();
    assert!(
        sim_output.iter().all(|l| !l.contains('\u{1b}')),
        "ANSI escape in kineticd sim output: {sim_output:#?}"
    );
    let log = std::fs::read_to_string(&s.log_path.0).expect("serve log");
    assert!(!log.is_empty(), "serve wrote no log");
    assert!(!log.contains('\u{1b}'), "ANSI escape in {}", s.log_path);
    s.log_path.remove();
}

/// Every metric family kineticd records.
const FAMILIES: [&str; 7] = [
    "kineticd_http_requests_total",
    "kineticd_http_request_duration_seconds",
    "kineticd_cloud_calls_total",
    "kineticd_cloud_call_duration_seconds",
    "kineticd_step_duration_seconds",
    "kineticd_operations_finished_total",
    "kineticd_operations_unfinished",
];

/// Label values that name a code, state, type or outcome: UPPER_SNAKE, as the API spells them.
const CODE_LABELS: [&str; 3] = ["state", "outcome", "type"];

fn upper_snake(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_describe_every_family_and_use_one_label_style() {
    let s = Standalone::up("standalone-metrics").await;
    assert_eq!(s.op["metadata"]["state"], "SUCCEEDED", "{}", s.op);
    // The worker counts a finished operation just after committing it, so a scrape right
    // after `:wait` may precede that: scrape until every family is there (bounded).
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = s
            .http
            .get(s.server.url("/metrics"))
            .send()
            .await
            .expect("scrape")
            .text()
            .await
            .expect("metrics text");
        let missing: Vec<&str> = FAMILIES
            .iter()
            .copied()
            .filter(|f| !text.contains(&format!("# TYPE {f} ")))
            .collect();
        if missing.is_empty() {
            break text;
        }
        assert!(Instant::now() < deadline, "{missing:?} missing:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let families: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    for family in &families {
        let help = format!("# HELP {family} ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&help) && l.len() > help.len()),
            "{family} has no # HELP line:\n{text}"
        );
    }

    // Every code/state/outcome label value is UPPER_SNAKE.
    let mut seen = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((_, labels)) = line.split_once('{') else {
            continue;
        };
        let labels = labels.rsplit_once('}').map(|(l, _)| l).unwrap_or(labels);
        for pair in labels.split("\",") {
            let Some((key, value)) = pair.split_once("=\"") else {
                continue;
            };
            if CODE_LABELS.contains(&key) {
                let value = value.trim_end_matches('"');
                assert!(upper_snake(value), "{key}=\"{value}\" in: {line}");
                seen += 1;
            }
        }
    }
    assert!(seen > 0, "no state/outcome labels at all:\n{text}");
    s.log_path.remove();
}
