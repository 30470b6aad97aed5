//! The README's standalone set-up, end to end: `kineticd sim` runs as its own process
//! and prints `export KEY=value` lines; `kineticd serve` (production mode: no `--dev`,
//! its environment cleared) gets only those variables plus a database and the dev
//! identity, and an `up` of a gpu-l4 cluster through the REST API succeeds (its first
//! Compute call answered 429 and sent again), with the
//! manifests served by the simulator (nothing fetched from the internet). The same
//! processes' output is plain text (no ANSI colours into pipes or files); their
//! `/metrics` expose exactly the families `docs/metrics.md` lists, each described, in one
//! label style; and serve's logs are JSON lines in which every line a step writes names
//! its operation, step and attempt, and no line holds a person's email address.

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::collections::{BTreeMap, BTreeSet};
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
    /// `extra_env`: more variables for `serve` (e.g. `RUST_LOG`).
    async fn up(name: &str, extra_env: &[(&str, String)]) -> Standalone {
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
        let mut env = sim.serve_env();
        env.extend(extra_env.iter().cloned());

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
        // Google rate-limits the first Compute call: kineticd sends it again (counted
        // in /metrics) and the up goes on as if nothing happened.
        let r = http
            .post(format!("{}/sim/v1/faults", sim.url()))
            .json(&json!({"service": "compute", "kind": "HTTP_429", "count": 1}))
            .send()
            .await
            .expect("arm a 429");
        assert!(
            r.status().is_success(),
            "{}",
            r.text().await.unwrap_or_default()
        );
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
    let mut s = Standalone::up("standalone-up", &[]).await;
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

/// The metric families `docs/metrics.md` lists (its table rows start "| `kineticd_").
fn documented_families() -> BTreeSet<String> {
    let doc = include_str!("../docs/metrics.md");
    let families: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .filter(|name| name.starts_with("kineticd_"))
        .collect();
    assert!(families.len() >= 10, "docs/metrics.md lists {families:?}");
    families
}

/// The families a scrape exposes (its `# TYPE` lines).
fn exposed_families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Label values that name a code, state, type or outcome: UPPER_SNAKE, as the API spells them.
const CODE_LABELS: [&str; 4] = ["state", "outcome", "type", "workflow"];

/// The `(key, value)` label pairs of every sample line.
fn labels(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((_, labels)) = line.split_once('{') else {
            continue;
        };
        let labels = labels.rsplit_once('}').map(|(l, _)| l).unwrap_or(labels);
        for pair in labels.split("\",") {
            if let Some((key, value)) = pair.split_once("=\"") {
                out.push((key.to_owned(), value.trim_end_matches('"').to_owned()));
            }
        }
    }
    out
}

fn upper_snake(v: &str) -> bool {
    !v.is_empty()
        && v.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_describe_every_family_and_use_one_label_style() {
    let s = Standalone::up("standalone-metrics", &[]).await;
    assert_eq!(s.op["metadata"]["state"], "SUCCEEDED", "{}", s.op);
    // The worker counts a finished operation just after committing it, and the queue
    // gauges are refreshed every few seconds: scrape until every documented family is
    // there (bounded).
    let documented = documented_families();
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        let text = s.server.scrape(&s.http).await;
        let exposed = exposed_families(&text);
        if documented.is_subset(&exposed) {
            break text;
        }
        let missing: Vec<&String> = documented.difference(&exposed).collect();
        assert!(Instant::now() < deadline, "{missing:?} missing:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let exposed = exposed_families(&text);
    let undocumented: Vec<&String> = exposed.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "exposed but not in docs/metrics.md: {undocumented:?}"
    );
    for family in &exposed {
        let help = format!("# HELP {family} ");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&help) && l.len() > help.len()),
            "{family} has no # HELP line:\n{text}"
        );
    }

    let labels = labels(&text);
    // Every code/state/outcome label value is UPPER_SNAKE.
    let mut seen = 0;
    for (key, value) in &labels {
        if CODE_LABELS.contains(&key.as_str()) {
            assert!(upper_snake(value), "{key}=\"{value}\":\n{text}");
            seen += 1;
        }
    }
    assert!(seen > 0, "no state/outcome labels at all:\n{text}");
    // Routes are templates, never paths with ids in them.
    for (key, value) in labels.iter().filter(|(k, _)| k == "route") {
        assert!(!value.contains("standalone"), "{key}=\"{value}\"");
    }
    // The up called Google and the cluster's Kubernetes API; steps are labelled by
    // resource kind, never by id.
    let has = |k: &str, v: &str| labels.iter().any(|(key, value)| key == k && value == v);
    for service in ["container", "compute", "kubernetes"] {
        assert!(has("service", service), "no {service} calls:\n{text}");
    }
    assert!(has("step", "container.cluster"), "{text}");
    assert!(
        !labels.iter().any(|(k, v)| k == "step" && v.contains(':')),
        "a step id as label:\n{text}"
    );
    s.log_path.remove();
}

/// The `step` span's fields every line written inside a step carries.
const STEP_FIELDS: [&str; 4] = ["operation.id", "operation.type", "step.id", "attempt"];

/// `x@y.z` somewhere in `text` (a dot-separated domain after the `@`), other than a
/// Google service account (a workload, not a person, named by the plan itself).
fn person_email(text: &str) -> Option<String> {
    let local = |c: char| c.is_ascii_alphanumeric() || "._%+-".contains(c);
    let domain = |c: char| c.is_ascii_alphanumeric() || ".-".contains(c);
    for (at, _) in text.match_indices('@') {
        let before: String = text[..at]
            .chars()
            .rev()
            .take_while(|&c| local(c))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let after: String = text[at + 1..].chars().take_while(|&c| domain(c)).collect();
        let after = after.trim_end_matches('.');
        if !before.is_empty() && after.contains('.') && !after.ends_with(".gserviceaccount.com") {
            return Some(format!("{before}@{after}"));
        }
    }
    None
}

#[test]
fn person_emails_are_found_and_service_accounts_are_not() {
    assert_eq!(
        person_email(r#"{"by":"standalone-owner@example.com"}"#).as_deref(),
        Some("standalone-owner@example.com")
    );
    assert_eq!(
        person_email("node-sa@p.iam.gserviceaccount.com failed"),
        None
    );
    assert_eq!(person_email("u-1234abcd and @ alone, a@b"), None);
}

/// `serve` in production writes JSON lines by default; after an `up`, every line written
/// while a step ran (the cloud calls it made included, logged at debug) names the
/// operation, its type, the step and the attempt, and no line holds a person's email
/// address (the caller is logged as a stable id).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn step_logs_name_operation_step_and_attempt_and_hold_no_email() {
    let extra = [("RUST_LOG", "info,sqlx=warn,kineticd=debug".to_owned())];
    let mut s = Standalone::up("standalone-logs", &extra).await;
    assert_eq!(s.op["metadata"]["state"], "SUCCEEDED", "{}", s.op);
    // Cancel the finished up (a 4xx) so a caller-attributed line is written too.
    let name = s.op["name"].as_str().expect("operation name").to_owned();
    let r = s
        .http
        .post(s.server.url(&format!("/v1/{name}:cancel")))
        .header("x-kinetic-user", OWNER)
        .send()
        .await
        .expect("cancel");
    assert!(
        r.status().is_client_error() || r.status().is_success(),
        "{}",
        r.status()
    );
    s.server.kill();
    let log = std::fs::read_to_string(&s.log_path.0).expect("serve log");

    let mut in_step = 0;
    let mut calls: BTreeSet<String> = BTreeSet::new();
    for line in log.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        if let Some(email) = person_email(line) {
            panic!("an email address ({email}) in a log line: {line}");
        }
        let spans = v["spans"].as_array().cloned().unwrap_or_default();
        let step = spans.iter().find(|s| s["name"] == "step");
        let target = v["target"].as_str().unwrap_or_default();
        let in_http = spans.iter().any(|s| s["name"] == "http");
        let step_code =
            target.starts_with("kineticd::cloud") || target.starts_with("kineticd::ops::workflows");
        match step {
            Some(step) => {
                for field in STEP_FIELDS {
                    assert!(!step[field].is_null(), "no {field} in: {line}");
                }
                in_step += 1;
                if v["message"] == "cloud call" {
                    calls.insert(v["service"].as_str().unwrap_or_default().to_owned());
                }
            }
            None => assert!(
                !step_code || in_http,
                "step code logged outside a step span: {line}"
            ),
        }
    }
    assert!(in_step > 0, "no line inside a step:\n{log}");
    for service in ["container", "compute", "kubernetes"] {
        assert!(
            calls.contains(service),
            "no {service} call logged in a step: {calls:?}"
        );
    }
    assert!(!log.contains(OWNER), "the caller's email in the log");
    s.log_path.remove();
}
