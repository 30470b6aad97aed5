//! Google's own client reads the simulated cloud: a separate `kineticd sim` prints the
//! `gcloud config set` lines that point gcloud at it; after an `up` of a gpu-l4 cluster
//! through kineticd against that simulator, gcloud (with a configuration of its own made
//! only of those lines and the project) lists and describes everything the `up` created:
//! the GKE cluster, its node pools and operations, the network, the router, the buckets,
//! the repository, the service accounts and the enabled services, and the accelerator
//! types kineticd checked; then gcloud resizes the pool (`node-pools update
//! --enable-autoscaling`) and reads the new autoscaling back. `container clusters
//! get-credentials` writes the kubeconfig kineticd's `.../credentials` answers.
//!
//! Skips with a message where gcloud is not installed, unless `KINETIC_REQUIRE_GCLOUD=1`
//! (set by `.ci/run`).

#[path = "common/mod.rs"]
mod common;
#[path = "serve_process/mod.rs"]
mod serve_process;

use std::path::PathBuf;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

use common::TestApp;
use common::shell::stdout_of;
use serve_process::SimProcess;

const OWNER: &str = "gcloud-owner@example.com";
const PROJECT: &str = "gcloud-proj";
const ZONE: &str = "us-central1-a";
const REGION: &str = "us-central1";
const CLUSTER: &str = "gc";

/// The prefix of the lines `kineticd sim` prints for gcloud.
const GCLOUD_LINE: &str = "#   gcloud config set ";

/// gcloud with a configuration directory of its own (removed when dropped).
struct Gcloud {
    config: PathBuf,
}

impl Drop for Gcloud {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.config);
    }
}

impl Gcloud {
    /// A `kineticd sim` at speed 0 and gcloud configured for it; `None` (the test skips)
    /// when gcloud is not installed.
    async fn on_a_sim() -> Option<(SimProcess, Gcloud)> {
        if !common::shell::gcloud_installed() {
            return None;
        }
        let sim = SimProcess::start(&["--speed", "0"]);
        let g = Gcloud::configure(&sim.printed).await;
        Some((sim, g))
    }

    /// A fresh configuration: `core/project`, then every `gcloud config set` line the
    /// simulator printed, run as printed.
    async fn configure(printed: &[String]) -> Gcloud {
        let config = std::env::temp_dir().join(format!(
            "kineticd-gcloud-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&config).expect("gcloud config dir");
        let g = Gcloud { config };
        let lines: Vec<&str> = printed
            .iter()
            .filter_map(|l| l.strip_prefix(GCLOUD_LINE))
            .collect();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("api_endpoint_overrides/")),
            "kineticd sim printed no gcloud lines: {printed:#?}"
        );
        g.run(&["config", "set", "core/project", PROJECT]).await;
        for line in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            let [property, value] = words[..] else {
                panic!("not `KEY VALUE`: {line:?}");
            };
            g.run(&["config", "set", property, value]).await;
        }
        g
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("gcloud");
        cmd.args(args)
            .env("CLOUDSDK_CONFIG", &self.config)
            .env("CLOUDSDK_CORE_DISABLE_PROMPTS", "1")
            .env("CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK", "true")
            .env("CLOUDSDK_CORE_DISABLE_USAGE_REPORTING", "true")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Run `gcloud ARGS`, asserting success; its standard output.
    async fn run(&self, args: &[&str]) -> String {
        stdout_of(
            &mut self.command(args),
            &format!("gcloud {}", args.join(" ")),
        )
        .await
    }

    /// Run `gcloud` with the whitespace-separated words of `line`, asserting success.
    async fn run_line(&self, line: &str) -> String {
        self.run(&line.split_whitespace().collect::<Vec<_>>()).await
    }

    /// [`Gcloud::json`] of the whitespace-separated words of `line`.
    async fn json_line(&self, line: &str) -> Value {
        self.json(line.split_whitespace().map(str::to_owned).collect())
            .await
    }

    /// `gcloud ARGS --format=json`, parsed.
    async fn json(&self, args: Vec<String>) -> Value {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.push("--format=json");
        let out = self.run(&all).await;
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("gcloud {}: not JSON ({e}):\n{out}", args.join(" ")))
    }
}

/// The last path segment of a resource name or URL (`gs://b` -> `b`).
fn short(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// The `field` of every item of a gcloud list.
fn field<'a>(list: &'a Value, field: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .filter_map(|i| i[field].as_str())
        .collect()
}

/// `up` of a gpu-l4 cluster through kineticd against the simulator `sim`, to its end;
/// the app and the cluster as kineticd records it.
async fn up(sim: &SimProcess) -> (TestApp, Value) {
    let sim_url = sim
        .exports()
        .into_iter()
        .find(|(k, _)| k == "KINETIC_GCP_URL")
        .expect("KINETIC_GCP_URL")
        .1;
    let (db, url) = common::fresh_db().await;
    let app = TestApp::spawn_on(db, url, &sim_url, |s| s).await;
    app.team(OWNER, "gcloud-team", &[PROJECT]).await;
    let _workers = app.workers(common::test_worker_config(2));
    let path = format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/{CLUSTER}");
    let r = app
        .put(OWNER, &path, json!({"accelerator": "gpu-l4"}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let op = r.body["name"].as_str().expect("operation name").to_owned();
    let done = app.wait_done(OWNER, &op).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let cluster = app.get(OWNER, &path).await;
    assert_eq!(cluster.status, StatusCode::OK, "{}", cluster.body);
    (app, cluster.body)
}

/// A `kineticd sim` at speed 0, [`up`] through kineticd against it, and gcloud configured
/// for it; `None` (the test skips) when gcloud is not installed.
async fn up_on_a_sim() -> Option<(SimProcess, TestApp, Value, Gcloud)> {
    if !common::shell::gcloud_installed() {
        return None;
    }
    let sim = SimProcess::start(&["--speed", "0"]);
    let (app, cluster) = up(&sim).await;
    let g = Gcloud::configure(&sim.printed).await;
    Some((sim, app, cluster, g))
}

/// What gcloud answered, by command.
struct Answers(Vec<(String, Value)>);

impl Answers {
    /// Run every command at once (each gcloud start takes a second or two).
    async fn ask(g: &Gcloud, commands: Vec<String>) -> Answers {
        let answers = join_all(commands.iter().map(|c| {
            let args = c.split_whitespace().map(str::to_owned).collect();
            g.json(args)
        }))
        .await;
        Answers(commands.into_iter().zip(answers).collect())
    }

    fn get(&self, prefix: &str) -> &Value {
        self.0
            .iter()
            .find(|(c, _)| c.starts_with(prefix))
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no answer to {prefix}"))
    }
}

/// The short name of `resources[key]` (kineticd records names or URLs).
fn resource(resources: &Value, key: &str) -> String {
    let name = resources[key].as_str();
    short(name.unwrap_or_else(|| panic!("no {key} in {resources}"))).to_owned()
}

/// One list and one describe per kind of resource `up` created.
fn commands(cluster: &Value) -> Vec<String> {
    let r = |k: &str| resource(&cluster["resources"], k);
    let pool = cluster["nodePools"][0]["poolId"].as_str().unwrap_or("none");
    let repo_location = kineticd::domain::resource_names::repository_location(REGION);
    vec![
        "container clusters list".into(),
        format!("container clusters describe {CLUSTER} --location {ZONE}"),
        format!("container node-pools list --cluster {CLUSTER} --location {ZONE}"),
        format!("container node-pools describe {pool} --cluster {CLUSTER} --location {ZONE}"),
        "container operations list".into(),
        "compute networks list".into(),
        format!("compute networks describe {}", r("network")),
        "compute routers list".into(),
        format!("compute routers describe {} --region {REGION}", r("router")),
        "compute accelerator-types list".into(),
        format!("compute accelerator-types describe nvidia-l4 --zone {ZONE}"),
        "storage buckets list".into(),
        format!("storage buckets describe gs://{}", r("stateBucket")),
        // Without --location: every location the registry lists, then each one's repositories.
        "artifacts repositories list".into(),
        format!(
            "artifacts repositories describe {} --location {repo_location}",
            r("artifactRepository")
        ),
        "iam service-accounts list".into(),
        format!("iam service-accounts describe {}", r("nodeServiceAccount")),
        "services list --enabled".into(),
    ]
}

fn check_container(a: &Answers, cluster: &Value) {
    let clusters = a.get("container clusters list");
    assert!(field(clusters, "name").contains(&CLUSTER), "{clusters}");
    let described = a.get("container clusters describe");
    assert_eq!(described["name"], CLUSTER, "{described}");
    assert_eq!(described["status"], "RUNNING", "{described}");
    assert_eq!(described["location"], ZONE, "{described}");

    let pools = a.get("container node-pools list");
    let listed = field(pools, "name");
    let recorded: Vec<&str> = cluster["nodePools"]
        .as_array()
        .expect("nodePools")
        .iter()
        .filter_map(|p| p["poolId"].as_str())
        .collect();
    assert!(!recorded.is_empty(), "{cluster}");
    for pool in &recorded {
        assert!(listed.contains(pool), "{pool} not in {pools}");
    }
    let pool = a.get("container node-pools describe");
    assert_eq!(pool["name"], recorded[0], "{pool}");
    assert_eq!(pool["status"], "RUNNING", "{pool}");

    let ops = a.get("container operations list");
    let created = ops.as_array().expect("operations").iter().any(|o| {
        o["operationType"] == "CREATE_CLUSTER"
            && o["status"] == "DONE"
            && o["targetLink"]
                .as_str()
                .is_some_and(|l| l.ends_with(&format!("/clusters/{CLUSTER}")))
    });
    assert!(created, "no DONE CREATE_CLUSTER of {CLUSTER}: {ops}");
}

fn check_compute(a: &Answers, resources: &Value) {
    let network = resource(resources, "network");
    let networks = a.get("compute networks list");
    assert!(
        field(networks, "name").contains(&network.as_str()),
        "{networks}"
    );
    assert_eq!(a.get("compute networks describe")["name"], network.as_str());

    let router = resource(resources, "router");
    let routers = a.get("compute routers list");
    assert!(
        field(routers, "name").contains(&router.as_str()),
        "{routers}"
    );
    let described = a.get("compute routers describe");
    assert_eq!(described["name"], router.as_str(), "{described}");
    let nat = resource(resources, "nat");
    assert!(
        field(&described["nats"], "name").contains(&nat.as_str()),
        "{described}"
    );

    let types = a.get("compute accelerator-types list");
    let l4_here = types
        .as_array()
        .expect("accelerator types")
        .iter()
        .any(|t| t["name"] == "nvidia-l4" && t["zone"].as_str().is_some_and(|z| short(z) == ZONE));
    assert!(l4_here, "no nvidia-l4 in {ZONE}: {types}");
    let l4 = a.get("compute accelerator-types describe");
    assert_eq!(l4["name"], "nvidia-l4", "{l4}");
}

fn check_storage_and_registry(a: &Answers, resources: &Value) {
    let buckets = a.get("storage buckets list");
    let names = field(buckets, "name");
    for key in ["jobsBucket", "buildsBucket", "stateBucket"] {
        let b = resource(resources, key);
        assert!(names.contains(&b.as_str()), "{key} {b} not in {buckets}");
    }
    let state = a.get("storage buckets describe");
    assert_eq!(
        state["name"],
        resource(resources, "stateBucket").as_str(),
        "{state}"
    );

    let repo = resource(resources, "artifactRepository");
    let repos = a.get("artifacts repositories list");
    let names: Vec<&str> = field(repos, "name").into_iter().map(short).collect();
    assert!(names.contains(&repo.as_str()), "{repo} not in {repos}");
    let described = a.get("artifacts repositories describe");
    assert_eq!(
        described["name"].as_str().map(short),
        Some(repo.as_str()),
        "{described}"
    );
}

fn check_iam_and_services(a: &Answers, resources: &Value) {
    let accounts = a.get("iam service-accounts list");
    let emails = field(accounts, "email");
    for key in ["nodeServiceAccount", "buildServiceAccount"] {
        let email = resource(resources, key);
        assert!(
            emails.contains(&email.as_str()),
            "{key} {email} not in {accounts}"
        );
    }
    let node = a.get("iam service-accounts describe");
    assert_eq!(
        node["email"],
        resource(resources, "nodeServiceAccount").as_str(),
        "{node}"
    );

    let services = a.get("services list --enabled");
    let enabled: Vec<&str> = services
        .as_array()
        .expect("services")
        .iter()
        .filter(|s| s["state"] == "ENABLED")
        .filter_map(|s| s["config"]["name"].as_str())
        .collect();
    for api in kineticd::domain::resource_names::APIS {
        assert!(enabled.contains(&api), "{api} not enabled: {services}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcloud_lists_and_describes_what_up_created() {
    let Some((_sim, _app, cluster, g)) = up_on_a_sim().await else {
        return;
    };
    let a = Answers::ask(&g, commands(&cluster)).await;
    check_container(&a, &cluster);
    check_compute(&a, &cluster["resources"]);
    check_storage_and_registry(&a, &cluster["resources"]);
    check_iam_and_services(&a, &cluster["resources"]);

    // An operation gcloud listed, described by its name.
    let op = a.get("container operations list")[0]["name"]
        .as_str()
        .expect("an operation name")
        .to_owned();
    let args = format!("container operations describe {op} --location {ZONE}");
    let described = g.json_line(&args).await;
    assert_eq!(described["name"], op.as_str(), "{described}");

    // gcloud's own resize of the pool (`node-pools update --enable-autoscaling`, which
    // sends clusters.update with desiredNodePoolAutoscaling) against the simulator's
    // autoscaling, the one kineticd's pool resize sets through nodePools.setAutoscaling.
    let pool = cluster["nodePools"][0]["poolId"].as_str().expect("a pool");
    let update = format!(
        "container node-pools update {pool} --cluster {CLUSTER} --location {ZONE} \
         --enable-autoscaling --min-nodes 1 --max-nodes 5"
    );
    g.run_line(&update).await;
    let args =
        format!("container node-pools describe {pool} --cluster {CLUSTER} --location {ZONE}");
    let described = g.json_line(&args).await;
    let a = &described["autoscaling"];
    assert_eq!(a["enabled"], true, "{described}");
    assert_eq!(a["minNodeCount"], 1, "{described}");
    assert_eq!(a["maxNodeCount"], 5, "{described}");
}

/// `gcloud container clusters get-credentials` and kineticd's `.../credentials` write
/// the same kubeconfig for a cluster `up` made: the same names, current context, CA and
/// exec user; kineticd adds the namespace of the caller's profile. One difference is the
/// simulator's: gcloud writes `https://` before the
/// endpoint GKE answers, which the simulator gives as a whole `http://` URL that
/// kineticd keeps (a real GKE endpoint is an address, the same in both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_credentials_writes_kineticds_kubeconfig() {
    let Some((_sim, app, _, g)) = up_on_a_sim().await else {
        return;
    };
    let file = g.config.join("kubeconfig");
    let args = [
        "container",
        "clusters",
        "get-credentials",
        CLUSTER,
        "--zone",
        ZONE,
    ];
    let mut cmd = g.command(&args);
    stdout_of(cmd.env("KUBECONFIG", &file), "gcloud get-credentials").await;
    let text = std::fs::read_to_string(&file).expect("gcloud wrote the kubeconfig");
    let mut gcloud: Value = serde_saphyr::from_str(&text).expect("gcloud's kubeconfig is YAML");

    let path = format!("/v1/projects/{PROJECT}/zones/{ZONE}/clusters/{CLUSTER}/credentials");
    let r = app.get(OWNER, &path).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut ours: Value =
        serde_saphyr::from_str(r.body.as_str().expect("YAML text")).expect("kineticd's is YAML");
    // kineticd's one addition: the namespace of the caller's profile of the cluster (the
    // one `up` saved, namespace `default`).
    let context = ours["contexts"][0]["context"]
        .as_object_mut()
        .expect("a context");
    assert_eq!(context.remove("namespace"), Some(Value::from("default")));

    let server = &mut gcloud["clusters"][0]["cluster"]["server"];
    let unprefixed = server.as_str().and_then(|s| s.strip_prefix("https://"));
    *server = Value::from(unprefixed.expect("gcloud's server is https://ENDPOINT"));
    // gcloud names the plugin by its full path when it finds it only in the SDK's bin.
    let command = &mut gcloud["users"][0]["user"]["exec"]["command"];
    *command = Value::from(short(command.as_str().expect("an exec command")));
    assert_eq!(ours, gcloud, "kineticd's:\n{ours:#}\ngcloud's:\n{text}");
    assert_eq!(
        ours["current-context"],
        format!("gke_{PROJECT}_{ZONE}_{CLUSTER}").as_str()
    );
}

/// gcloud makes a reservation in the simulator (`reservations.insert`, then waits on its
/// zonal operation), describes it (`reservations.get`) and lists it (aggregated, and
/// in one zone): the simulator's reservations speak Google's wire format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcloud_creates_describes_and_lists_a_reservation() {
    let Some((_sim, g)) = Gcloud::on_a_sim().await else {
        return;
    };
    let create = format!(
        "compute reservations create gc-res --zone {ZONE} --vm-count 3 \
         --machine-type g2-standard-4 --accelerator count=1,type=nvidia-l4 \
         --require-specific-reservation"
    );
    g.run_line(&create).await;
    let args = format!("compute reservations describe gc-res --zone {ZONE}");
    let r = g.json_line(&args).await;
    assert_eq!(r["name"], "gc-res", "{r}");
    assert_eq!(r["status"], "READY", "{r}");
    assert_eq!(r["specificReservationRequired"], true, "{r}");
    let sku = &r["specificReservation"];
    assert_eq!(
        (sku["count"].as_str(), sku["inUseCount"].as_str()),
        (Some("3"), Some("0")),
        "{r}"
    );
    assert_eq!(
        sku["instanceProperties"]["machineType"], "g2-standard-4",
        "{r}"
    );
    assert_eq!(
        sku["instanceProperties"]["guestAccelerators"][0]["acceleratorType"], "nvidia-l4",
        "{r}"
    );
    assert_eq!(short(r["zone"].as_str().unwrap_or_default()), ZONE, "{r}");
    // Shared with another project (SPECIFIC_PROJECTS, projectMap).
    let create = format!(
        "compute reservations create gc-shared --zone {ZONE} --vm-count 1 \
         --machine-type g2-standard-4 --share-setting=projects --share-with=gcloud-consumer"
    );
    g.run_line(&create).await;
    let args = format!("compute reservations describe gc-shared --zone {ZONE}");
    let shared = g.json_line(&args).await;
    assert_eq!(
        shared["shareSettings"]["shareType"], "SPECIFIC_PROJECTS",
        "{shared}"
    );
    assert_eq!(
        shared["shareSettings"]["projectMap"]["gcloud-consumer"]["projectId"], "gcloud-consumer",
        "{shared}"
    );
    for list in [
        "compute reservations list".to_owned(),
        format!("compute reservations list --zones {ZONE}"),
    ] {
        let l = g.json_line(&list).await;
        assert_eq!(
            field(&l, "name"),
            vec!["gc-res", "gc-shared"],
            "{list}: {l}"
        );
    }
}

/// gcloud makes custom roles in a project (`projects.roles.create`), describes them
/// (`projects.roles.get`: the role kineticd reads to learn whether a custom role lets
/// its holder bind a project to a team) and deletes one (`projects.roles.delete`): the
/// simulator's custom roles speak IAM's wire format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gcloud_creates_describes_and_deletes_a_custom_role() {
    let Some((_sim, g)) = Gcloud::on_a_sim().await else {
        return;
    };
    let permissions = "resourcemanager.projects.setIamPolicy,resourcemanager.projects.getIamPolicy";
    // `--quiet`: without it gcloud first asks `permissions.queryTestablePermissions`
    // for warnings, which the simulator does not serve.
    let create = |role: &str, extra: &str| {
        format!("iam roles create {role} --project {PROJECT} --quiet {extra}")
    };
    let args = create(
        "binder",
        &format!("--permissions {permissions} --stage GA --title Binder"),
    );
    g.run_line(&args).await;
    let args = format!("iam roles describe binder --project {PROJECT}");
    let r = g.json_line(&args).await;
    assert_eq!(r["name"], format!("projects/{PROJECT}/roles/binder"), "{r}");
    assert_eq!(r["title"], "Binder", "{r}");
    assert_eq!(r["stage"], "GA", "{r}");
    assert_eq!(
        r["includedPermissions"],
        json!([
            "resourcemanager.projects.getIamPolicy",
            "resourcemanager.projects.setIamPolicy"
        ]),
        "{r}"
    );
    // Without a stage, a role is ALPHA (Google omits the field; gcloud shows it).
    let reader = create(
        "reader",
        "--permissions resourcemanager.projects.getIamPolicy",
    );
    g.run_line(&reader).await;
    let args = format!("iam roles delete reader --project {PROJECT}");
    let gone = g.json_line(&args).await;
    assert_eq!(gone["deleted"], true, "{gone}");
    assert_ne!(gone["etag"], r["etag"], "{gone}");
    // A deleted role's ID stays taken.
    let out = g
        .command(&reader.split_whitespace().collect::<Vec<_>>())
        .output()
        .await
        .expect("run gcloud");
    assert!(!out.status.success(), "a deleted role's ID was reused");
}
