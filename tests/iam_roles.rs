//! deploy/README.md's IAM table ("Roles on each team project") lists every Google
//! method kineticd calls, with the grant that allows it, the IAM permissions it needs
//! and the steps that call it. A day's workflows run
//! through the production clients against the simulator (an up refused for its zone, up
//! with forceDestroy, status, previews of a second up, of a TPU pool and of a pool bound
//! to a reservation that does not exist, pool add with failover, pool list, a drill, a
//! pool resize, pool remove, down emptying a bucket);
//! every method in the simulator's journal must have a row, and every row must be a
//! method the workflows called (or one of the operation polls the simulator makes
//! unnecessary, checked against its client), so a new call without a role, or a row no
//! workflow needs, fails here.
//!
//! The least-privilege grants are checked against the files an operator applies:
//! deploy/iam/team-project-role.yaml (the one custom role) holds exactly the
//! permissions of the rows it grants, every Kubernetes permission the journal's
//! requests to the team's cluster need, and none of the permissions that would let
//! kineticd act as, or re-grant, an arbitrary service account; the two IAM conditions
//! (deploy/iam/*-condition.yaml) name exactly the roles kineticd grants and the prefix
//! of every service account it creates.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::{TestApp, test_worker_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

const OWNER: &str = "owner@example.com";
const PROJECT: &str = "ml-proj";
const CLUSTER: &str = "/v1/projects/ml-proj/zones/us-central1-a/clusters/kc";
const SECTION: &str = "### Roles on each team project";
/// The custom role as the table names it (created in each team project, or once for the
/// organization: then `organizations/ORG_ID/roles/...`).
const CUSTOM_ROLE: &str = "projects/TEAM_PROJECT/roles/kineticdTeamProject";
/// Permissions the unconditional custom role must never hold: with any of them kineticd
/// could act as, or grant itself, any service account of a team project (its default
/// Compute Engine account has Editor), or grant any role on the project.
/// Permissions kineticd holds only through a conditioned predefined role, and which.
const CONDITIONED: [(&str, &str); 6] = [
    ("iam.serviceAccounts.actAs", "roles/iam.serviceAccountUser"),
    ("iam.serviceAccounts.get", "roles/iam.serviceAccountAdmin"),
    (
        "iam.serviceAccounts.delete",
        "roles/iam.serviceAccountAdmin",
    ),
    (
        "iam.serviceAccounts.getIamPolicy",
        "roles/iam.serviceAccountAdmin",
    ),
    (
        "iam.serviceAccounts.setIamPolicy",
        "roles/iam.serviceAccountAdmin",
    ),
    (
        "resourcemanager.projects.setIamPolicy",
        "roles/resourcemanager.projectIamAdmin",
    ),
];
const NEVER_UNCONDITIONAL: [&str; 7] = [
    "iam.serviceAccounts.actAs",
    "iam.serviceAccounts.setIamPolicy",
    "iam.serviceAccounts.getAccessToken",
    "iam.serviceAccounts.signBlob",
    "iam.serviceAccounts.signJwt",
    "iam.serviceAccounts.implicitDelegation",
    "resourcemanager.projects.setIamPolicy",
];
/// Long-running-operation polls the simulator never needs (its Service Usage and
/// Artifact Registry operations are done when returned) but Google does: they have rows
/// although the journal cannot show them.
const UNSEEN_POLLS: [&str; 2] = [
    "serviceusage.operations.get",
    "artifactregistry.operations.get",
];

fn readme() -> String {
    repo_file("deploy/README.md")
}

fn repo_file(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One row of the table: what grants the method, the permissions it needs, the steps.
struct Row {
    grants: Vec<String>,
    permissions: Vec<String>,
}

/// The code spans of a table cell.
fn spans(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The table's rows: method -> row.
fn table(readme: &str) -> BTreeMap<String, Row> {
    let section = readme
        .split(SECTION)
        .nth(1)
        .unwrap_or_else(|| panic!("deploy/README.md has no {SECTION:?} section"));
    let section = section.split("\n#").next().unwrap_or(section);
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(
            cells.len(),
            4,
            "row {line:?}: method | grant | permissions | steps"
        );
        let method = cells[0].trim_matches('`').to_owned();
        let grants: Vec<String> = spans(cells[1])
            .into_iter()
            .filter(|g| g.starts_with("roles/") || g.starts_with("projects/"))
            .collect();
        assert!(!grants.is_empty(), "row {method}: no grant");
        let permissions = spans(cells[2]);
        assert!(
            !permissions.is_empty() || cells[2].starts_with("none"),
            "row {method}: no permission (or \"none ...\" saying why)"
        );
        assert!(!cells[3].is_empty(), "row {method}: no steps");
        let row = Row {
            grants,
            permissions,
        };
        assert!(
            rows.insert(method.clone(), row).is_none(),
            "row {method} twice"
        );
    }
    assert!(!rows.is_empty(), "no rows under {SECTION:?}");
    rows
}

/// deploy/iam/team-project-role.yaml's `includedPermissions`.
fn custom_role_permissions() -> BTreeSet<String> {
    let role: serde_json::Value =
        serde_saphyr::from_str(&repo_file("deploy/iam/team-project-role.yaml"))
            .expect("deploy/iam/team-project-role.yaml is YAML");
    role["includedPermissions"]
        .as_array()
        .expect("includedPermissions")
        .iter()
        .map(|p| p.as_str().expect("a permission").to_owned())
        .collect()
}

/// The `expression` of a condition file in deploy/iam/.
fn condition(file: &str) -> String {
    let c: serde_json::Value = serde_saphyr::from_str(&repo_file(&format!("deploy/iam/{file}")))
        .unwrap_or_else(|e| panic!("deploy/iam/{file}: {e}"));
    assert!(
        c["title"].as_str().is_some_and(|t| !t.is_empty()),
        "{file}: a title"
    );
    c["expression"]
        .as_str()
        .unwrap_or_else(|| panic!("{file}: an expression"))
        .to_owned()
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
    let read = |file: &str| {
        let path = format!("{}/src/cloud/gcp/{file}.rs", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).expect("client source")
    };
    let source = read(file);
    // A client that expands `aip151_operations!()` makes the AIP-151 calls written with
    // the macro (Artifact Registry's operations.get, in service_usage.rs).
    let shared = if source.contains("aip151_operations!()") {
        read("service_usage")
    } else {
        String::new()
    };
    // A call's name as a literal, or heading the doc comment of a client method that
    // delegates to a shared helper.
    [source, shared]
        .iter()
        .any(|s| s.contains(&format!("\"{method}\"")) || s.contains(&format!("/// {method}:")))
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

/// One request kineticd made: `service.method` and, for the Kubernetes API, its path.
struct Call {
    method: String,
    path: String,
}

/// Every call kineticd made in a day's workflows.
async fn calls_of_a_day() -> Vec<Call> {
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
    let spot = common::spot_pool(&listed);
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
        .map(|(_, e)| Call {
            method: qualified(&e.service, &e.method),
            path: e.path,
        })
        .collect()
}

/// `service.method`; the simulator already prefixes Kubernetes calls (`kube.apply`).
fn qualified(service: &str, method: &str) -> String {
    match method.strip_prefix(service) {
        Some(rest) if rest.starts_with('.') => method.to_owned(),
        _ => format!("{service}.{method}"),
    }
}

/// The Kubernetes API resource (plural, lowercase) and group a request's path names:
/// `/api/v1/namespaces/ns/pods` is ("", "pods"), `/apis/apps/v1/namespaces/ns/deployments/x`
/// is ("apps", "deployments"); `/api/v1/namespaces/x` is ("", "namespaces").
fn kube_resource(path: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let at = parts.iter().position(|p| *p == "api" || *p == "apis")?;
    let (group, rest) = if parts[at] == "api" {
        ("", parts.get(at + 2..)?)
    } else {
        (*parts.get(at + 1)?, parts.get(at + 3..)?)
    };
    let resource = match rest {
        ["namespaces", _, resource, ..] => resource,
        [resource, ..] => resource,
        [] => return None,
    };
    Some((group.to_owned(), (*resource).to_owned()))
}

/// GKE's IAM name of a Kubernetes resource (`container.<name>.<verb>`). Objects of
/// custom resource definitions (ComputeClass, in cloud.google.com) are
/// `thirdPartyObjects`.
fn iam_resource(group: &str, resource: &str) -> String {
    const BUILT_IN: [(&str, &str); 18] = [
        ("namespaces", "namespaces"),
        ("serviceaccounts", "serviceAccounts"),
        ("configmaps", "configMaps"),
        ("secrets", "secrets"),
        ("services", "services"),
        ("pods", "pods"),
        ("nodes", "nodes"),
        ("deployments", "deployments"),
        ("daemonsets", "daemonSets"),
        ("roles", "roles"),
        ("rolebindings", "roleBindings"),
        ("clusterroles", "clusterRoles"),
        ("clusterrolebindings", "clusterRoleBindings"),
        ("customresourcedefinitions", "customResourceDefinitions"),
        (
            "mutatingwebhookconfigurations",
            "mutatingWebhookConfigurations",
        ),
        (
            "validatingwebhookconfigurations",
            "validatingWebhookConfigurations",
        ),
        ("selfsubjectaccessreviews", "selfSubjectAccessReviews"),
        ("events", "events"),
    ];
    let built_in_group = group.is_empty() || group.ends_with(".k8s.io") || group == "apps";
    match BUILT_IN.iter().find(|(plural, _)| *plural == resource) {
        Some((_, iam)) if built_in_group => (*iam).to_owned(),
        _ if !built_in_group => "thirdPartyObjects".to_owned(),
        _ => panic!("{group}/{resource}: add its GKE IAM name to iam_resource"),
    }
}

/// The IAM permissions GKE checks for a Kubernetes request kineticd made. Server-side
/// apply is a PATCH (GKE's `update`) that creates the object when it is absent
/// (`create`); a watch is authorized as `list`.
fn kube_permissions(call: &Call) -> Vec<String> {
    let verbs: &[&str] = match call.method.as_str() {
        "kube.apply" => &["create", "update"],
        "kube.create" => &["create"],
        "kube.update" | "kube.patch" => &["update"],
        "kube.get" => &["get"],
        "kube.list" | "kube.watch" => &["list"],
        "kube.delete" => &["delete"],
        // Discovery, version and OpenAPI documents: open to every authenticated caller.
        _ => &[],
    };
    if verbs.is_empty() {
        return Vec::new();
    }
    let (group, resource) = kube_resource(&call.path)
        .unwrap_or_else(|| panic!("{} {}: no resource in the path", call.method, call.path));
    let iam = iam_resource(&group, &resource);
    verbs
        .iter()
        .map(|v| format!("container.{iam}.{v}"))
        .collect()
}

#[tokio::test]
async fn every_google_method_a_day_calls_has_a_row_and_the_custom_role_allows_it() {
    let rows = table(&readme());
    let calls = calls_of_a_day().await;
    let called: BTreeSet<String> = calls.iter().map(|c| c.method.clone()).collect();
    assert!(called.contains("container.clusters.create"), "{called:?}");
    assert!(
        called.contains("storage.objects.delete"),
        "down emptied the bucket: {called:?}"
    );

    let missing: Vec<&String> = called.iter().filter(|m| !rows.contains_key(*m)).collect();
    assert!(
        missing.is_empty(),
        "kineticd calls {missing:?} but deploy/README.md ({SECTION}) lists no role for it: \
         add a row with the least-privileged grant, its permissions and the steps that call it"
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

    // Every Kubernetes request the journal shows is allowed by the custom role, and the
    // kube.* rows say so.
    let role = custom_role_permissions();
    let mut kube_needed = BTreeSet::new();
    for call in calls.iter().filter(|c| c.method.starts_with("kube.")) {
        for p in kube_permissions(call) {
            assert!(
                role.contains(&p),
                "{} {} needs {p}, which deploy/iam/team-project-role.yaml lacks",
                call.method,
                call.path
            );
            let row = &rows[&call.method];
            assert!(
                row.permissions.contains(&p),
                "{} {} needs {p}: list it in the {} row of deploy/README.md",
                call.method,
                call.path,
                call.method
            );
            kube_needed.insert(p);
        }
    }
    assert!(
        kube_needed.contains("container.customResourceDefinitions.create"),
        "up applied the LeaderWorkerSet manifest: {kube_needed:?}"
    );
}

#[test]
fn the_custom_role_is_exactly_the_permissions_of_the_rows_it_grants() {
    let rows = table(&readme());
    let role = custom_role_permissions();
    let mut listed = BTreeSet::new();
    for (method, row) in &rows {
        for p in &row.permissions {
            match CONDITIONED.iter().find(|(c, _)| c == p) {
                Some((_, grant)) => {
                    assert!(
                        row.grants.iter().any(|g| g == grant),
                        "{method} needs {p}: its row must name {grant} (with its condition)"
                    );
                    assert!(
                        !role.contains(p),
                        "{p} comes only from {grant} with its condition, never the custom role"
                    );
                }
                None => {
                    assert!(
                        row.grants.iter().any(|g| g == CUSTOM_ROLE),
                        "{method} needs {p}, which only the custom role grants: name it"
                    );
                    listed.insert(p.clone());
                }
            }
        }
    }
    // RBAC objects of the LeaderWorkerSet manifest (its ClusterRoles and bindings hold
    // rules kineticd itself does not hold through RBAC): Kubernetes asks for `escalate`
    // and `bind` on them. Listed in the kube.apply row.
    for p in [
        "container.clusterRoles.bind",
        "container.clusterRoles.escalate",
        "container.roles.bind",
        "container.roles.escalate",
    ] {
        assert!(listed.contains(p), "the kube.apply row lists {p}");
    }
    let extra: Vec<&String> = role.difference(&listed).collect();
    let lacking: Vec<&String> = listed.difference(&role).collect();
    assert!(
        extra.is_empty() && lacking.is_empty(),
        "deploy/iam/team-project-role.yaml and the rows granted by {CUSTOM_ROLE} differ: \
         only in the role {extra:?}; only in the rows {lacking:?}"
    );
    for p in NEVER_UNCONDITIONAL {
        assert!(
            !role.contains(p),
            "{p} in the unconditional custom role would let kineticd act as, or grant \
             itself, any service account or role"
        );
    }
    // Acting as the node service account, and the policies, come only through the
    // conditioned grants.
    for (method, grant) in [
        ("container.clusters.create", "roles/iam.serviceAccountUser"),
        ("container.nodePools.create", "roles/iam.serviceAccountUser"),
        (
            "iam.serviceAccounts.setIamPolicy",
            "roles/iam.serviceAccountAdmin",
        ),
        (
            "cloudresourcemanager.projects.setIamPolicy",
            "roles/resourcemanager.projectIamAdmin",
        ),
    ] {
        assert!(
            rows[method].grants.iter().any(|g| g == grant),
            "{method}: granted by {grant} (with its condition)"
        );
    }
    // kineticd reads a team project's policy when the project is claimed and before it
    // changes a binding.
    assert!(role.contains("resourcemanager.projects.getIamPolicy"));
}

/// The text of a condition's `expression` between the first `open` and the next `close`.
fn between<'a>(expression: &'a str, open: &str, close: &str) -> &'a str {
    expression
        .split(open)
        .nth(1)
        .and_then(|s| s.split(close).next())
        .unwrap_or_else(|| panic!("no {open}...{close} in the condition {expression}"))
}

#[test]
fn the_grant_condition_names_exactly_the_roles_kineticd_grants() {
    let expression = condition("grants-condition.yaml");
    let listed = between(&expression, "hasOnly([", "])");
    let listed: BTreeSet<&str> = listed
        .split(',')
        .map(|r| r.trim().trim_matches('"'))
        .collect();
    let members =
        kineticd::domain::access::managed_roles(kineticd::domain::access::GrantOn::Project);
    let granted: BTreeSet<&str> = kineticd::plan::up::NODE_ROLES
        .iter()
        .chain(kineticd::plan::up::BUILD_ROLES.iter())
        .chain(members.iter())
        .copied()
        .collect();
    assert_eq!(
        listed, granted,
        "update the condition in deploy/iam/grants-condition.yaml"
    );
}

#[test]
fn the_service_account_condition_covers_every_account_kineticd_creates_and_no_other() {
    let expression = condition("service-accounts-condition.yaml");
    let prefix = between(&expression, ".startsWith(\"", "\"");
    assert!(
        expression.contains("resource.name.extract(\"serviceAccounts/{account}@\")"),
        "the condition compares the account id (before the @), whatever the project: {expression}"
    );
    use kineticd::domain::resource_names::ClusterNames;
    use kineticd::domain::{ClusterName, ProjectId, ZoneName};
    let project = ProjectId::parse("team-project-1").expect("project");
    let zone = ZoneName::parse("us-central1-a").expect("zone");
    for cluster in ["kc", "a-cluster-name-of-forty-characters-long"] {
        let n = ClusterNames::new(
            &project,
            &zone,
            &ClusterName::parse(cluster).expect("cluster"),
        );
        for id in [&n.node_sa_id, &n.build_sa_id] {
            assert!(
                id.starts_with(prefix),
                "{id} (cluster {cluster}) does not start with {prefix:?}: kineticd could not act as it"
            );
        }
    }
    // The project's own accounts: the Compute Engine and App Engine defaults and
    // kineticd's own.
    for default in ["123456789012-compute", "team-project-1", "kineticd"] {
        assert!(!default.starts_with(prefix), "{default} matches {prefix:?}");
    }
}

/// The members' table ("What team members get") is the grant table of
/// `src/domain/access.rs`, row for row: a VIEWER's rows ("every role") and a MEMBER's
/// ("MEMBER+"), each resource by the name the table uses.
#[test]
fn the_members_table_is_the_grants_sync_access_makes() {
    use kineticd::domain::Role;
    use kineticd::domain::access::{GrantOn, iam_grants};
    let readme = readme();
    let section = readme
        .split("### What team members get (SYNC_ACCESS)")
        .nth(1)
        .expect("deploy/README.md has no members' table");
    let section = section.split("\n#").next().unwrap_or(section);
    let resource = |on: GrantOn| match on {
        GrantOn::Project => "project",
        GrantOn::StateBucket => "`TEAM_PROJECT-kinetic-state`",
        GrantOn::JobsBucket => "`TEAM_PROJECT-kn-CLUSTER-jobs`",
        GrantOn::BuildsBucket => "`TEAM_PROJECT-kn-CLUSTER-builds`",
        GrantOn::Repository => "repository `kn-CLUSTER`",
        GrantOn::BuildsServiceAccount => "`kn-CLUSTER-builds@TEAM_PROJECT.iam.gserviceaccount.com`",
    };
    let mut documented = BTreeSet::new();
    for line in section.lines().filter(|l| l.starts_with("| ")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() != 4 || !cells[2].starts_with('`') {
            continue;
        }
        for role in cells[2].split(", ") {
            documented.insert((
                cells[0].to_owned(),
                cells[1].to_owned(),
                role.trim_matches('`').to_owned(),
            ));
        }
    }
    let viewer = iam_grants(Role::Viewer);
    let mut derived = BTreeSet::new();
    for g in &viewer {
        derived.insert((
            "every role".to_owned(),
            resource(g.on).to_owned(),
            g.role.to_owned(),
        ));
    }
    for g in iam_grants(Role::Member)
        .iter()
        .filter(|g| !viewer.contains(g))
    {
        derived.insert((
            "MEMBER+".to_owned(),
            resource(g.on).to_owned(),
            g.role.to_owned(),
        ));
    }
    assert_eq!(
        documented, derived,
        "deploy/README.md's members' table differs from src/domain/access.rs"
    );
    assert_eq!(
        iam_grants(Role::Owner),
        iam_grants(Role::Member),
        "ADMIN and OWNER get a MEMBER's IAM"
    );
}
