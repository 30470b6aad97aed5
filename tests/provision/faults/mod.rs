//! Faults at each step of `up`, `pool add`, `pool remove` and `down`, then a retry or a
//! rerun that completes with no duplicate resource; and every step run twice
//! (ARCHITECTURE.md "Testing", "Guarantees" 3 and 5).
//!
//! Each case has its own app, database and simulator; cases run as tasks, at most four
//! environments at a time across this module (2 cores). Simulator faults match a method,
//! not a resource, so where several steps share a method (three buckets, two service
//! accounts, two sets of project roles, two bucket policies) the other steps' resources
//! are made (or, for `down`, removed) beforehand with the production clients: those steps
//! adopt them (find them gone, or find nothing to change) and only the step under test
//! makes the faulted call. "No duplicate resource" is counted per resource: the successful
//! create (delete) calls in the journal, including the ones a test made itself, name every
//! expected resource exactly once.
//!
//! The Kubernetes steps share one method (`kube.apply`) and run side by side, so they are
//! covered together in `ensure.rs`; `profile` is a database write (no cloud call).
//!
//! `up.rs`, `pools.rs`, `down.rs`: a fault at each step; `twice.rs`: every step run twice.

pub(crate) mod down;
mod pools;
mod twice;
pub(crate) mod up;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use kineticd::domain::resource_names::ClusterNames;
use kineticd::domain::{ClusterName, ProjectId, ZoneName};
use kineticd::ops::queue::{self, Enqueue};
use kineticd::ops::workflows::cluster::wire::{self, BucketKind};
use kineticd::plan::up::{BUILD_ROLES, NODE_ROLES};
use kineticd::store;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::support::*;

/// The cluster every case works on.
pub(crate) const CLUSTER: &str = "kc";

/// Environments alive at once across this module.
static SLOTS: Semaphore = Semaphore::const_new(4);

/// What `up` grants both service accounts on the jobs and builds buckets.
const BUCKET_ROLES: [&str; 2] = [
    "roles/storage.objectAdmin",
    "roles/storage.legacyBucketReader",
];

/// Every method that deletes a resource.
const DELETES: [(&str, &str); 7] = [
    ("storage", "buckets.delete"),
    ("compute", "networks.delete"),
    ("compute", "routers.delete"),
    ("iam", "serviceAccounts.delete"),
    ("artifactregistry", "repositories.delete"),
    ("container", "clusters.delete"),
    ("container", "nodePools.delete"),
];

/// Every policy write.
const POLICY_WRITES: [(&str, &str); 4] = [
    ("cloudresourcemanager", "projects.setIamPolicy"),
    ("storage", "buckets.setIamPolicy"),
    ("artifactregistry", "repositories.setIamPolicy"),
    ("iam", "serviceAccounts.setIamPolicy"),
];

// ---------------------------------------------------------------------------------------
// Running cases

/// Run every case on a task of its own (at most [`SLOTS`] at a time); fail at the end
/// naming every case that failed, with its message.
pub(crate) async fn each<Fut>(cases: impl IntoIterator<Item = (String, Fut)>)
where
    Fut: Future<Output = ()> + Send + 'static,
{
    let tasks: Vec<_> = cases
        .into_iter()
        .map(|(name, fut)| {
            let task = tokio::spawn(async move {
                let _slot = SLOTS.acquire().await.expect("slots");
                let started = Instant::now();
                fut.await;
                started.elapsed()
            });
            (name, task)
        })
        .collect();
    let total = tasks.len();
    let mut failed = Vec::new();
    for (name, task) in tasks {
        match task.await {
            Ok(took) => eprintln!("case ok: {name} ({took:.1?})"),
            Err(e) => failed.push(format!("- {name}: {}", panic_text(e))),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {total} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "panicked".into()),
        Err(e) => e.to_string(),
    }
}

/// The three tests of a fault table: a retryable fault at each policy step (the clients
/// retry those), at each other step (the step runner retries), and a terminal fault at
/// each step.
macro_rules! fault_table_tests {
    ($table:expr, $retry_case:ident, $terminal_case:ident;
     $policy_test:ident, $step_test:ident, $terminal_test:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $policy_test() {
            retry_cases(&$table, true, $retry_case).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $step_test() {
            retry_cases(&$table, false, $retry_case).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $terminal_test() {
            terminal_cases(&$table, $terminal_case).await;
        }
    };
}
use fault_table_tests;

/// Run the retry case of every step in `table` whose retry is (`client_retry`) or is not
/// the client's own.
async fn retry_cases<Fut>(table: &[At], client_retry: bool, case: fn(At) -> Fut)
where
    Fut: Future<Output = ()> + Send + 'static,
{
    let cases = table.iter().filter(|a| a.client_retry == client_retry);
    each(cases.map(|a| (a.name(a.retry), case(*a)))).await;
}

/// Run the terminal case of every step in `table`.
async fn terminal_cases<Fut>(table: &[At], case: fn(At) -> Fut)
where
    Fut: Future<Output = ()> + Send + 'static,
{
    each(table.iter().map(|a| (a.name(a.terminal.0), case(*a)))).await;
}

/// Stop the workers and close the database pool (the module opens many environments).
pub(crate) async fn close(env: Env) {
    let Env {
        app,
        sim: _sim,
        _workers: workers,
    } = env;
    workers.shutdown(Duration::from_secs(5)).await;
    app.db.close().await;
}

pub(crate) fn names() -> ClusterNames {
    ClusterNames::new(
        &ProjectId::parse(PROJECT).unwrap(),
        &ZoneName::parse(ZONE).unwrap(),
        &ClusterName::parse(CLUSTER).unwrap(),
    )
}

pub(crate) fn gpu() -> Value {
    json!({"accelerator": "gpu-l4"})
}

// ---------------------------------------------------------------------------------------
// Requests and records

/// Wait for the end of `op` (at speed 0 every operation here ends within a second or
/// two); past the deadline, fail naming the steps that did not finish.
async fn finish(env: &Env, op: &Value) -> Value {
    let name = op["name"].as_str().expect("operation name");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let r = env.app.op_action(OWNER, name, "wait?timeout=5s").await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        if r.body["done"] == true {
            return r.body;
        }
        if Instant::now() > deadline {
            let stuck: Vec<String> = steps(&r.body)
                .iter()
                .filter(|s| s["state"] != "DONE")
                .map(|s| {
                    format!(
                        "{} {} attempts={} {}",
                        s["id"].as_str().unwrap_or(""),
                        s["state"].as_str().unwrap_or(""),
                        s["attempts"],
                        s["message"].as_str().unwrap_or("")
                    )
                })
                .collect();
            panic!(
                "{} {name} still {} after 30 s; unfinished steps:\n  {}",
                r.body["metadata"]["type"],
                r.body["metadata"]["state"],
                stuck.join("\n  ")
            );
        }
    }
}

/// PUT the cluster and wait for the end.
async fn up(env: &Env) -> Value {
    let op = env.up(CLUSTER, gpu()).await;
    let done = finish(env, &op).await;
    env.syncs_settled().await;
    done
}

/// DELETE the cluster and wait for the end.
async fn down(env: &Env) -> Value {
    let r = env.app.delete(OWNER, &cluster_path(CLUSTER)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    finish(env, &r.body).await
}

/// POST a gpu-l4 pool; its id and the finished operation.
async fn add_pool(env: &Env) -> (String, Value) {
    let path = format!("{}/nodePools", cluster_path(CLUSTER));
    let r = env.app.post(OWNER, &path, gpu()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let target = r.body["metadata"]["target"].as_str().expect("target");
    let pool = target.rsplit('/').next().unwrap().to_owned();
    assert!(target.ends_with(&format!("/nodePools/{pool}")), "{target}");
    (pool, finish(env, &r.body).await)
}

/// DELETE a pool and wait for the end.
async fn remove_pool(env: &Env, pool: &str) -> Value {
    let path = format!("{}/nodePools/{pool}", cluster_path(CLUSTER));
    let r = env.app.delete(OWNER, &path).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    finish(env, &r.body).await
}

/// The cluster record (the newest, DELETED included).
pub(crate) async fn cluster_record(env: &Env) -> store::clusters::ClusterRecord {
    store::clusters::by_name(
        &env.app.db,
        store::clusters::Pick::LiveOrLastDeleted,
        [PROJECT, ZONE, CLUSTER],
    )
    .await
    .unwrap()
    .expect("cluster record")
}

pub(crate) async fn cluster_state(env: &Env) -> String {
    cluster_record(env).await.state.as_str().to_owned()
}

/// The pool record's state, `None` when there is no record.
pub(crate) async fn pool_state(env: &Env, pool: &str) -> Option<String> {
    let c = cluster_record(env).await;
    store::node_pools::get(&env.app.db, c.id, pool)
        .await
        .unwrap()
        .map(|p| p.state.as_str().to_owned())
}

/// The id of the pool an `up` of a new cluster creates (from its plan).
pub(crate) fn pool_of(op: &Value) -> String {
    op["metadata"]["plan"]["actions"]
        .as_array()
        .expect("plan actions")
        .iter()
        .filter_map(|a| a["id"].as_str()?.strip_prefix("pool:"))
        .next()
        .unwrap_or_else(|| panic!("no pool in the plan: {}", op["metadata"]["plan"]))
        .to_owned()
}

pub(crate) fn steps(op: &Value) -> &[Value] {
    op["metadata"]["progress"]["steps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn step<'a>(op: &'a Value, id: &str) -> &'a Value {
    steps(op)
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {}", op["metadata"]["progress"]))
}

/// Step ids that needed more than one attempt.
fn retried(op: &Value) -> Vec<String> {
    steps(op)
        .iter()
        .filter(|s| s["attempts"].as_u64().unwrap_or(0) > 1)
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[track_caller]
fn assert_succeeded(op: &Value) {
    assert_eq!(op["done"], true, "{op}");
    assert!(op["error"].is_null(), "failed: {}", op["error"]);
    assert_eq!(op["metadata"]["state"], "SUCCEEDED", "{op}");
    for s in steps(op) {
        assert_eq!(s["state"], "DONE", "{s}");
    }
}

/// No step needed a second attempt (the client redid its read-modify-write itself).
#[track_caller]
fn assert_none_retried(op: &Value) {
    assert_eq!(
        retried(op),
        Vec::<String>::new(),
        "{}",
        op["metadata"]["progress"]
    );
}

/// The operation of case `a` failed at its step with the cloud's reason, naming the
/// service, and left the cluster ERROR; returns the step.
async fn assert_case_failed(env: &Env, op: &Value, a: &At, pool: &str) -> String {
    let at = assert_failed_at(op, &resolve(a.steps, pool), a.terminal.2);
    assert_eq!(op["error"]["details"][0]["metadata"]["service"], a.service);
    assert_eq!(cluster_state(env).await, "ERROR");
    at
}

/// The cluster and its pool `pool` are RUNNING.
async fn assert_running(env: &Env, pool: &str) {
    assert_eq!(cluster_state(env).await, "RUNNING");
    assert_eq!(pool_state(env, pool).await.as_deref(), Some("RUNNING"));
}

/// The cluster is DELETED, each of its resources (and `pool`'s) deleted exactly once.
async fn assert_deleted_once(env: &Env, n: &ClusterNames, pool: &str) {
    assert_eq!(cluster_state(env).await, "DELETED");
    assert_eq!(
        ok_per_resource(env, &DELETES).await,
        deleted_once(n, &[pool])
    );
}

/// The operation failed at one of `candidates` with `reason`: a catalogued reason, or
/// the cloud's own, which the answer keeps in `cloudReason` under a catalogued reason of
/// kineticd's; returns the step.
#[track_caller]
pub(crate) fn assert_failed_at(op: &Value, candidates: &[String], reason: &str) -> String {
    assert_eq!(op["done"], true, "{op}");
    assert_eq!(op["metadata"]["state"], "FAILED", "{op}");
    let detail = &op["error"]["details"][0];
    let at = detail["metadata"]["step"].as_str().unwrap_or("").to_owned();
    assert!(
        candidates.contains(&at),
        "failed at {at:?}, expected one of {candidates:?}: {}",
        op["error"]
    );
    if kineticd::api::reasons::find(reason).is_some() {
        assert_eq!(detail["reason"], reason, "{}", op["error"]);
    } else {
        assert_eq!(detail["metadata"]["cloudReason"], reason, "{}", op["error"]);
        let ours = detail["reason"].as_str().unwrap_or("");
        assert!(
            kineticd::api::reasons::find(ours).is_some(),
            "{ours} is not catalogued: {}",
            op["error"]
        );
    }
    assert_eq!(step(op, &at)["state"], "FAILED", "{}", step(op, &at));
    let message = op["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(&format!("step {at} ")), "{message}");
    at
}

/// Replace the placeholder `pool` by the pool's step id.
pub(crate) fn resolve(ids: &[&str], pool: &str) -> Vec<String> {
    ids.iter()
        .map(|s| match *s {
            "pool" => format!("pool:{pool}"),
            s => s.to_owned(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The journal, per resource

fn ok(e: &Value) -> bool {
    e["status"]
        .as_u64()
        .is_some_and(|s| (200..300).contains(&s))
}

/// The faulted call of `method` (the one answered with neither 2xx nor 404) was followed
/// by exactly one successful call to the same path; when the method is `isolated` to the
/// step under test, by no other successful call at all (only that step called again).
async fn assert_made_again_once(env: &Env, service: &str, method: &str, isolated: bool) {
    let calls = env.journal(service, method).await;
    let faulted = calls
        .iter()
        .position(|e| !ok(e) && e["status"] != 404)
        .unwrap_or_else(|| panic!("the fault never fired: {calls:?}"));
    let path = &calls[faulted]["path"];
    let after: Vec<&Value> = calls[faulted + 1..].iter().filter(|e| ok(e)).collect();
    let again = after.iter().filter(|e| &e["path"] == path).count();
    assert_eq!(
        again, 1,
        "{method} {path} made again {again} times: {calls:?}"
    );
    if isolated {
        assert_eq!(after.len(), 1, "another step called {method}: {calls:?}");
    }
}

/// The resource a create or delete call names.
fn resource(e: &Value) -> String {
    let b = &e["body"];
    let named = match e["method"].as_str().unwrap_or("") {
        "buckets.insert" | "networks.insert" | "routers.insert" => b["name"].as_str(),
        "serviceAccounts.create" => b["accountId"].as_str(),
        "clusters.create" => b["cluster"]["name"].as_str(),
        "nodePools.create" => b["nodePool"]["name"].as_str(),
        "repositories.create" => e["query"]
            .as_str()
            .and_then(|q| q.split('&').find_map(|kv| kv.strip_prefix("repositoryId="))),
        _ => e["path"].as_str().and_then(|p| p.rsplit('/').next()),
    };
    let name = named.unwrap_or_else(|| panic!("no resource named in {e}"));
    format!(
        "{} {}",
        e["method"].as_str().unwrap(),
        name.replace("%40", "@")
    )
}

/// Successful calls of `methods`, counted per resource.
async fn ok_per_resource(env: &Env, methods: &[(&str, &str)]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (service, method) in methods {
        for e in env.ok_calls(service, method).await {
            *out.entry(resource(&e)).or_default() += 1;
        }
    }
    out
}

/// Successful calls of each method (for before/after comparisons).
async fn ok_counts(env: &Env, methods: &[(&str, &str)]) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (service, method) in methods {
        out.insert(
            format!("{service} {method}"),
            env.ok_calls(service, method).await.len(),
        );
    }
    out
}

/// Every call of a delete method, in order.
async fn delete_calls(env: &Env) -> Vec<Value> {
    let mut all: Vec<Value> = Vec::new();
    for e in env.journal("", "").await {
        if DELETES
            .iter()
            .any(|(s, m)| e["service"] == *s && e["method"] == *m)
        {
            all.push(e);
        }
    }
    all
}

/// Each resource of a gpu-l4 cluster created once, and each of `pools`.
fn created_once(n: &ClusterNames, pools: &[&str]) -> BTreeMap<String, usize> {
    let mut keys = vec![
        format!("buckets.insert {}", n.state_bucket),
        format!("buckets.insert {}", n.jobs_bucket),
        format!("buckets.insert {}", n.builds_bucket),
        format!("networks.insert {}", n.network),
        format!("routers.insert {}", n.router),
        format!("serviceAccounts.create {}", n.node_sa_id),
        format!("serviceAccounts.create {}", n.build_sa_id),
        format!("repositories.create {}", n.repository),
        format!("clusters.create {}", n.cluster),
    ];
    keys.extend(pools.iter().map(|p| format!("nodePools.create {p}")));
    keys.into_iter().map(|k| (k, 1)).collect()
}

/// Each resource `down` removes deleted once (the APIs and the state bucket stay).
fn deleted_once(n: &ClusterNames, pools: &[&str]) -> BTreeMap<String, usize> {
    let mut keys = vec![
        format!("buckets.delete {}", n.jobs_bucket),
        format!("buckets.delete {}", n.builds_bucket),
        format!("networks.delete {}", n.network),
        format!("routers.delete {}", n.router),
        format!("serviceAccounts.delete {}", n.node_sa_email()),
        format!("serviceAccounts.delete {}", n.build_sa_email()),
        format!("repositories.delete {}", n.repository),
        format!("clusters.delete {}", n.cluster),
    ];
    keys.extend(pools.iter().map(|p| format!("nodePools.delete {p}")));
    keys.into_iter().map(|k| (k, 1)).collect()
}

// ---------------------------------------------------------------------------------------
// Making and removing the other steps' resources out of band

fn members(n: &ClusterNames) -> [String; 2] {
    [
        format!("serviceAccount:{}", n.node_sa_email()),
        format!("serviceAccount:{}", n.build_sa_email()),
    ]
}

fn project_grants<'a>(step: &str, members: &'a [String; 2]) -> Vec<(&'static str, &'a str)> {
    let (roles, member): (&[&'static str], &str) = match step {
        "node-sa-roles" => (&NODE_ROLES, &members[0]),
        "build-sa-roles" => (&BUILD_ROLES, &members[1]),
        other => panic!("not a project role step: {other}"),
    };
    roles.iter().map(|r| (*r, member)).collect()
}

fn bucket_of<'a>(n: &'a ClusterNames, step: &str) -> (&'a str, BucketKind) {
    match step {
        "state-bucket" => (&n.state_bucket, BucketKind::State),
        "jobs-bucket" | "jobs-bucket-iam" => (&n.jobs_bucket, BucketKind::Jobs),
        "builds-bucket" | "builds-bucket-iam" => (&n.builds_bucket, BucketKind::Builds),
        other => panic!("not a bucket step: {other}"),
    }
}

/// Make the resource of `up` step `step` exactly as `up` would, so `up` adopts it (or
/// finds nothing to change) and makes no call of its own.
pub(crate) async fn make(env: &Env, n: &ClusterNames, step: &str) {
    let gcp = &env.app.state.cloud.gcp;
    let cancel = CancellationToken::new();
    let m = members(n);
    let r = match step {
        "state-bucket" | "jobs-bucket" | "builds-bucket" => {
            let (_, kind) = bucket_of(n, step);
            gcp.storage
                .insert_bucket(&n.project, &wire::bucket(n, kind))
                .await
                .map(drop)
        }
        "node-sa" | "build-sa" => {
            let builds = step == "build-sa";
            let id = if builds {
                &n.build_sa_id
            } else {
                &n.node_sa_id
            };
            let account = if builds {
                kineticd::plan::Account::Build
            } else {
                kineticd::plan::Account::Node
            };
            let (display, description) = wire::service_account_text(n, account);
            gcp.iam
                .create_service_account(&n.project, id, &display, &description)
                .await
                .map(drop)
        }
        "node-sa-roles" | "build-sa-roles" => gcp
            .resource_manager
            .add_bindings(&n.project, &project_grants(step, &m), &cancel)
            .await
            .map(drop),
        "jobs-bucket-iam" | "builds-bucket-iam" => {
            let grants: Vec<(&str, &str)> = BUCKET_ROLES
                .iter()
                .flat_map(|r| m.iter().map(move |x| (*r, x.as_str())))
                .collect();
            gcp.storage
                .add_bucket_bindings(bucket_of(n, step).0, &grants, &cancel)
                .await
                .map(drop)
        }
        other => panic!("no way to make {other}"),
    };
    r.unwrap_or_else(|e| panic!("making {step}: {e}"));
}

/// Remove the resource of `down` step `step`, so `down` finds it gone (or finds nothing
/// to revoke) and makes no call of its own.
pub(crate) async fn unmake(env: &Env, n: &ClusterNames, step: &str) {
    let gcp = &env.app.state.cloud.gcp;
    let cancel = CancellationToken::new();
    let r = match step {
        "jobs-bucket" | "builds-bucket" => gcp.storage.delete_bucket(bucket_of(n, step).0).await,
        "node-sa-roles" | "build-sa-roles" => gcp
            .resource_manager
            .remove_bindings(&n.project, &project_grants(step, &members(n)), &cancel)
            .await
            .map(drop),
        other => panic!("no way to remove {other}"),
    };
    r.unwrap_or_else(|e| panic!("removing {step}: {e}"));
}

// ---------------------------------------------------------------------------------------
// up: a fault at each step

/// A fault at one step's mutating call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At {
    /// The step the fault hits (`pool`: the pool's step). Several: the fault hits the
    /// first of them to call (the method cannot be isolated to one of them).
    pub(crate) steps: &'static [&'static str],
    pub(crate) service: &'static str,
    pub(crate) method: &'static str,
    /// Other steps' resources made (`up`) or removed (`down`) first, in this order, so
    /// that only the step under test makes the call.
    pub(crate) prepare: &'static [&'static str],
    /// The call is a policy read-modify-write the client itself redoes on a retryable
    /// error: the step succeeds at its first attempt.
    client_retry: bool,
    /// The retryable fault (fires once).
    retry: &'static str,
    /// The terminal fault, how many times it fires (a 401 is refreshed and retried once
    /// by the client), and the reason the failed operation must carry.
    pub(crate) terminal: (&'static str, u32, &'static str),
    /// The faulted call is accepted (2xx) and its long-running operation fails: the
    /// resource was asked for once more than it was created.
    accepted: bool,
}

impl At {
    pub(crate) fn name(&self, kind: &str) -> String {
        format!(
            "{} {}/{} {kind}",
            self.steps.join("|"),
            self.service,
            self.method
        )
    }
}

/// Rejected before anything changes: a 403 quotaExceeded answer.
pub(crate) const QUOTA: (&str, u32, &str) = ("QUOTA_EXCEEDED", 1, "quotaExceeded");
/// Compute reports quota in the insert's operation: QUOTA_EXCEEDED.
const COMPUTE_QUOTA: (&str, u32, &str) = ("QUOTA_EXCEEDED", 1, "QUOTA_EXCEEDED");
/// GKE reports quota and stockout in the operation and leaves the cluster or pool in
/// ERROR (see the tests below); a token that stays expired after the client's refresh
/// is rejected before anything changes.
pub(crate) const GKE_401: (&str, u32, &str) = ("HTTP_401", 2, "ACCESS_TOKEN_EXPIRED");

pub(crate) const fn at(
    steps: &'static [&'static str],
    service: &'static str,
    method: &'static str,
    prepare: &'static [&'static str],
    retry: &'static str,
    terminal: (&'static str, u32, &'static str),
) -> At {
    At {
        steps,
        service,
        method,
        prepare,
        client_retry: false,
        retry,
        terminal,
        accepted: false,
    }
}

const fn client(mut a: At) -> At {
    a.client_retry = true;
    a
}

const fn accepted(mut a: At) -> At {
    a.accepted = true;
    a
}

/// The project IAM binding of a service account's roles (`node-sa-roles`,
/// `build-sa-roles`): a policy read-modify-write of the project, which the client redoes
/// itself on a retryable error; refused for quota like the other calls.
const fn project_roles(
    step: &'static [&'static str],
    prepare: &'static [&'static str],
    retry: &'static str,
) -> At {
    client(at(
        step,
        "cloudresourcemanager",
        "projects.setIamPolicy",
        prepare,
        retry,
        QUOTA,
    ))
}

/// A fresh environment for a test that runs a single case, counted against [`SLOTS`]
/// while the permit lives.
async fn slot_env() -> (tokio::sync::SemaphorePermit<'static>, Env) {
    let slot = SLOTS.acquire().await.expect("slots");
    (slot, env().await)
}

/// A fresh environment with a gpu cluster made: it, the cluster's names, and its pool.
async fn with_gpu_cluster() -> (Env, ClusterNames, String) {
    let env = env().await;
    let pool = gpu_cluster(&env).await;
    (env, names(), pool)
}

/// Arm the terminal fault `(kind, count, reason)` on `service`/`method`; returns the
/// reason the operation is then to fail with.
pub(crate) async fn arm_fault(
    env: &Env,
    service: &str,
    method: &str,
    fault: (&str, u32, &'static str),
) -> &'static str {
    let (kind, count, reason) = fault;
    env.arm(service, method, kind, count).await;
    reason
}

async fn gpu_cluster(env: &Env) -> String {
    let done = up(env).await;
    assert_succeeded(&done);
    pool_of(&done)
}

fn outcomes(op: &Value) -> BTreeMap<String, String> {
    let out: BTreeMap<String, String> = op["response"]["outcomes"]
        .as_object()
        .unwrap_or_else(|| panic!("no outcomes: {}", op["response"]))
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
        .collect();
    let ids: Vec<&str> = steps(op)
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        out.keys().map(String::as_str).collect::<Vec<_>>().len(),
        ids.len(),
        "an outcome per step: {out:?} vs {ids:?}"
    );
    out
}
