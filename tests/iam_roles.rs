//! deploy/README.md's IAM table ("Roles on each team project") lists every Google
//! method kineticd calls, with a role and the steps that need it. A day's workflows run
//! through the production clients against the simulator (an up refused for its zone, up
//! with forceDestroy, status, previews of a second up, of a TPU pool and of a pool bound
//! to a reservation that does not exist, pool add with failover, pool list, a drill, a
//! pool resize, pool remove, down emptying a bucket);
//! every method in the simulator's journal must have a row, and every row must be a
//! method the workflows called (or one of the operation polls the simulator makes
//! unnecessary, checked against its client), so a new call without a role, or a row no
//! workflow needs, fails here.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{TestApp, test_worker_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

const OWNER: &str = "owner@example.com";
const PROJECT: &str = "ml-proj";
const CLUSTER: &str = "/v1/projects/ml-proj/zones/us-central1-a/clusters/kc";
const SECTION: &str = "### Roles on each team project";
/// Long-running-operation polls the simulator never needs (its Service Usage and
/// Artifact Registry operations are done when returned) but Google does: they have rows
/// although the journal cannot show them.
const UNSEEN_POLLS: [&str; 2] = [
    "serviceusage.operations.get",
    "artifactregistry.operations.get",
];

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/README.md"))
        .expect("deploy/README.md")
}

/// The table's rows: method -> (roles, steps).
fn table(readme: &str) -> BTreeMap<String, (Vec<String>, String)> {
    let section = readme
        .split(SECTION)
        .nth(1)
        .unwrap_or_else(|| panic!("deploy/README.md has no {SECTION:?} section"));
    let section = section.split("\n#").next().unwrap_or(section);
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 3, "row {line:?}: method | role | steps");
        let method = cells[0].trim_matches('`').to_owned();
        let roles: Vec<String> = cells[1]
            .split('`')
            .filter(|s| s.starts_with("roles/"))
            .map(str::to_owned)
            .collect();
        assert!(!roles.is_empty(), "row {method}: no role");
        assert!(!cells[2].is_empty(), "row {method}: no steps");
        assert!(
            rows.insert(method.clone(), (roles, cells[2].to_owned()))
                .is_none(),
            "row {method} twice"
        );
    }
    assert!(!rows.is_empty(), "no rows under {SECTION:?}");
    rows
}

/// Whether the Google client of `service` makes a call named `method`.
fn client_calls(service: &str, method: &str) -> bool {
    let file = match service {
        "artifactregistry" => "artifact_registry",
        "cloudresourcemanager" => "resource_manager",
        "serviceusage" => "service_usage",
        "compute" | "container" | "iam" | "storage" => service,
        _ => return false,
    };
    let path = format!("{}/src/cloud/gcp/{file}.rs", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).expect("client source");
    // A call's name as a literal, or heading the doc comment of a client method that
    // delegates to a shared helper (Artifact Registry's operations.get).
    source.contains(&format!("\"{method}\"")) || source.contains(&format!("/// {method}:"))
}

/// Send a request as the owner, expecting `status`; returns the body.
async fn call(app: &TestApp, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
    let r = app.call(OWNER, method.clone(), path, body).await;
    let want = if method == reqwest::Method::GET {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    assert_eq!(r.status, want, "{method} {path}: {}", r.body);
    r.body
}

/// Run an accepted operation to success.
async fn succeed(app: &TestApp, op: Value) {
    let done = app
        .wait_done(OWNER, op["name"].as_str().expect("operation name"))
        .await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
}

/// `service.method` of every call kineticd made in a day's workflows.
async fn methods_a_day_calls() -> BTreeSet<String> {
    let (app, sim) = TestApp::spawn_sim_with(kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Auto { speed: 0.0 },
        ..Default::default()
    })
    .await;
    app.team(OWNER, "ml-team", &[PROJECT]).await;
    let _workers = app.workers(test_worker_config(2));
    use reqwest::Method as M;

    // An `up` in a zone Compute does not have is refused before anything is written
    // (zones.get, then zones.list for the region's zones): those reads need a role too.
    let bad_zone = CLUSTER.replace("us-central1-a", "us-central1-q");
    let r = app
        .call(
            OWNER,
            M::PUT,
            &bad_zone,
            Some(json!({"accelerator": "gpu-l4"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);

    let up = json!({"accelerator": "gpu-l4", "forceDestroy": true});
    succeed(&app, call(&app, M::PUT, CLUSTER, Some(up)).await).await;
    call(&app, M::GET, &format!("{CLUSTER}/status"), None).await;
    // Previews read live too: a second `up` (the APIs, to say KEEP) and a TPU pool (its
    // machine type offered in the zone).
    let previews = [
        (M::PUT, CLUSTER.to_owned(), json!({})),
        (
            M::POST,
            format!("{CLUSTER}/nodePools"),
            json!({"accelerator": "tpu-v5litepod-16"}),
        ),
    ];
    for (method, path, body) in previews {
        let r = app
            .call(
                OWNER,
                method,
                &format!("{path}?validateOnly=true"),
                Some(body),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
    }
    let pools = format!("{CLUSTER}/nodePools");
    // A pool bound to a reservation reads it first (reservations.get); none exists here.
    let r = app
        .call(
            OWNER,
            M::POST,
            &format!("{pools}?validateOnly=true"),
            Some(json!({"accelerator": "l4", "reservation": "team-res"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.reason(), "RESERVATION_NOT_FOUND", "{}", r.body);
    // A spot pool with a node, so its failover drill has VMs to delete.
    let add = json!({"accelerator": "l4", "failover": true, "minNodes": 1});
    succeed(&app, call(&app, M::POST, &pools, Some(add)).await).await;
    let listed = call(&app, M::GET, &pools, None).await;
    let spot = listed["nodePools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["spot"] == true)
        .and_then(|p| p["poolId"].as_str())
        .expect("the spot pool")
        .to_owned();
    let drill = format!("{pools}/{spot}:drill");
    succeed(&app, call(&app, M::POST, &drill, Some(json!({}))).await).await;
    // A resize past the fallback's maximum: both pools' autoscaling is set.
    let resize = json!({"minNodes": 1, "maxNodes": 12});
    succeed(
        &app,
        call(&app, M::PATCH, &format!("{pools}/{spot}"), Some(resize)).await,
    )
    .await;
    succeed(
        &app,
        call(&app, M::DELETE, &format!("{pools}/{spot}"), None).await,
    )
    .await;

    // An object in the jobs bucket (put there by the test, not by kineticd) so `down`
    // has a bucket to empty.
    let jobs_bucket = sim
        .journal()
        .entries()
        .into_iter()
        .filter(|e| e.method == "buckets.insert")
        .filter_map(|e| e.body["name"].as_str().map(str::to_owned))
        .find(|name| name.ends_with("-jobs"))
        .expect("up created a jobs bucket");
    let before = sim.journal().entries().len();
    let root = url::Url::parse(&sim.url()).expect("sim url");
    let gcp = kineticd::cloud::gcp::GcpClients::new(
        kineticd::cloud::gcp::GcpConfig::single_root(&root),
        app.http.clone(),
    );
    gcp.storage
        .upload_object(
            &jobs_bucket,
            "logs/run-1.txt",
            b"done".to_vec(),
            "text/plain",
        )
        .await
        .expect("upload");
    let ours = before..sim.journal().entries().len();
    succeed(&app, call(&app, M::DELETE, CLUSTER, None).await).await;

    sim.journal()
        .entries()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !ours.contains(i))
        .map(|(_, e)| qualified(&e.service, &e.method))
        .collect()
}

/// `service.method`; the simulator already prefixes Kubernetes calls (`kube.apply`).
fn qualified(service: &str, method: &str) -> String {
    match method.strip_prefix(service) {
        Some(rest) if rest.starts_with('.') => method.to_owned(),
        _ => format!("{service}.{method}"),
    }
}

#[tokio::test]
async fn every_google_method_a_day_calls_has_a_role_in_the_deploy_readme() {
    let rows = table(&readme());
    let called = methods_a_day_calls().await;
    assert!(called.contains("container.clusters.create"), "{called:?}");
    assert!(
        called.contains("storage.objects.delete"),
        "down emptied the bucket: {called:?}"
    );

    let missing: Vec<&String> = called.iter().filter(|m| !rows.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "kineticd calls {missing:?} but deploy/README.md ({SECTION}) lists no role for it: \
         add a row with the least-privileged role and the steps that call it"
    );
    let stale: Vec<&String> = rows
        .keys()
        .filter(|m| !called.contains(*m) && !UNSEEN_POLLS.contains(&m.as_str()))
        .collect();
    assert!(
        stale.is_empty(),
        "deploy/README.md lists {stale:?}, which no workflow called: remove the rows"
    );
    for m in UNSEEN_POLLS {
        let (service, name) = m.split_once('.').expect("service.method");
        assert!(
            client_calls(service, name),
            "{m}: no such call in its client"
        );
        assert!(
            rows.contains_key(m),
            "{m}: waiting on a real operation needs a row"
        );
    }
}

#[test]
fn the_grant_condition_names_exactly_the_roles_kineticd_grants() {
    let readme = readme();
    let condition = readme
        .split("hasOnly([")
        .nth(1)
        .and_then(|s| s.split("])").next())
        .expect("the projectIamAdmin condition in deploy/README.md");
    let listed: BTreeSet<&str> = condition
        .split(',')
        .map(|r| r.trim().trim_matches('"'))
        .collect();
    let granted: BTreeSet<&str> = kineticd::plan::up::NODE_ROLES
        .iter()
        .chain(kineticd::plan::up::BUILD_ROLES.iter())
        .copied()
        .collect();
    assert_eq!(listed, granted, "update the condition in deploy/README.md");
}
