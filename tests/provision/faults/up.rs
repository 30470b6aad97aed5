//! A fault at each step of `up`.

use super::*;

/// Every step of `up` (gpu-l4) that makes a cloud call, with the call it makes.
pub(crate) const UP_AT: [At; 17] = [
    at(
        &["apis"],
        "serviceusage",
        "services.batchEnable",
        &[],
        "HTTP_503",
        QUOTA,
    ),
    at(
        &["state-bucket"],
        "storage",
        "buckets.insert",
        &["jobs-bucket", "builds-bucket"],
        "HTTP_503",
        QUOTA,
    ),
    // Google refused to serve it (429): the client sends it again itself.
    client(at(
        &["jobs-bucket"],
        "storage",
        "buckets.insert",
        &["state-bucket", "builds-bucket"],
        "HTTP_429",
        QUOTA,
    )),
    at(
        &["builds-bucket"],
        "storage",
        "buckets.insert",
        &["state-bucket", "jobs-bucket"],
        "HTTP_500",
        QUOTA,
    ),
    accepted(at(
        &["network"],
        "compute",
        "networks.insert",
        &[],
        "HTTP_503",
        COMPUTE_QUOTA,
    )),
    // Google refused to serve it (429): the client sends it again itself.
    client(accepted(at(
        &["router"],
        "compute",
        "routers.insert",
        &[],
        "HTTP_429",
        COMPUTE_QUOTA,
    ))),
    at(
        &["node-sa"],
        "iam",
        "serviceAccounts.create",
        &["build-sa"],
        "HTTP_503",
        QUOTA,
    ),
    at(
        &["build-sa"],
        "iam",
        "serviceAccounts.create",
        &["node-sa"],
        "HTTP_500",
        QUOTA,
    ),
    project_roles(
        &["node-sa-roles"],
        &["build-sa", "build-sa-roles"],
        "HTTP_503",
    ),
    project_roles(
        &["build-sa-roles"],
        &["node-sa", "node-sa-roles"],
        "HTTP_429",
    ),
    client(at(
        &["jobs-bucket-iam"],
        "storage",
        "buckets.setIamPolicy",
        &["builds-bucket", "node-sa", "build-sa", "builds-bucket-iam"],
        "HTTP_503",
        QUOTA,
    )),
    client(at(
        &["builds-bucket-iam"],
        "storage",
        "buckets.setIamPolicy",
        &["jobs-bucket", "node-sa", "build-sa", "jobs-bucket-iam"],
        "HTTP_500",
        QUOTA,
    )),
    at(
        &["repository"],
        "artifactregistry",
        "repositories.create",
        &[],
        "HTTP_503",
        QUOTA,
    ),
    client(at(
        &["repository-iam"],
        "artifactregistry",
        "repositories.setIamPolicy",
        &[],
        "HTTP_503",
        QUOTA,
    )),
    at(
        &["cluster"],
        "container",
        "clusters.create",
        &[],
        "GKE_BUSY",
        GKE_401,
    ),
    client(at(
        &["workload-identity"],
        "iam",
        "serviceAccounts.setIamPolicy",
        &[],
        "HTTP_503",
        QUOTA,
    )),
    POOL_CREATE_AT,
];

/// The pool's creation (in `up` and in a pool add).
pub(crate) const POOL_CREATE_AT: At = at(
    &["pool"],
    "container",
    "nodePools.create",
    &[],
    "GKE_BUSY",
    GKE_401,
);

/// An environment for case `a`, the resources of its `prepare` steps made beforehand;
/// the cluster's names.
async fn prepared(a: &At) -> (Env, ClusterNames) {
    let env = env().await;
    let n = names();
    for s in a.prepare {
        make(&env, &n, s).await;
    }
    (env, n)
}

/// A retryable fault at the step's call: the operation still succeeds, the call was
/// made again, and nothing was created twice.
async fn up_retry_case(a: At) {
    let (env, n) = prepared(&a).await;
    env.arm(a.service, a.method, a.retry, 1).await;
    let op = env.up(CLUSTER, gpu()).await;
    let pool = pool_of(&op);
    let done = finish(&env, &op).await;
    assert_succeeded(&done);
    let targets = resolve(a.steps, &pool);

    assert_made_again_once(&env, a.service, a.method, a.steps.len() == 1).await;
    if a.client_retry {
        assert_none_retried(&done);
    } else {
        assert_eq!(retried(&done), targets, "{}", done["metadata"]["progress"]);
        let s = step(&done, &targets[0]);
        assert!(s["attempts"].as_u64().unwrap() >= 2, "{s}");
    }
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        created_once(&n, &[&pool]),
        "duplicate or missing creates"
    );
    assert_running(&env, &pool).await;
    close(env).await;
}

/// A terminal fault at the step's call: the operation fails there with the cloud's
/// reason and the cluster is ERROR; `up` again succeeds having created each resource
/// once; `down` then removes each once.
async fn up_terminal_case(a: At) {
    let (env, n) = prepared(&a).await;
    arm_fault(&env, a.service, a.method, a.terminal).await;
    let op = env.up(CLUSTER, gpu()).await;
    let pool = pool_of(&op);
    let failed = finish(&env, &op).await;
    let at = assert_case_failed(&env, &failed, &a, &pool).await;
    assert_eq!(pool_state(&env, &pool).await.as_deref(), Some("ERROR"));

    let mut expected = created_once(&n, &[&pool]);
    if a.accepted {
        // The call was accepted and its operation failed: nothing was made by it.
        let first = env.ok_calls(a.service, a.method).await;
        assert_eq!(first.len(), 1, "{first:?}");
        *expected.get_mut(&resource(&first[0])).unwrap() += 1;
    }
    let again = up(&env).await;
    assert_succeeded(&again);
    assert_eq!(step(&again, &at)["attempts"], 1, "{}", step(&again, &at));
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        expected,
        "duplicate or missing creates"
    );
    assert_running(&env, &pool).await;

    let gone = down(&env).await;
    assert_succeeded(&gone);
    assert_deleted_once(&env, &n, &pool).await;
    close(env).await;
}

// Retries come from two places: the step runner (a retryable step error, see
// `a_step_retried_while_others_run_does_not_stall_the_operation`, which once found a
// deadlock there) and the clients themselves (policy read-modify-writes).

fault_table_tests!(UP_AT, up_retry_case, up_terminal_case;
    up_survives_a_retryable_fault_at_each_policy_step,
    up_survives_a_retryable_fault_at_each_step,
    up_fails_on_a_terminal_fault_at_each_step_and_up_again_completes_it);

/// GKE accepts the cluster and its creation fails (quota): the operation fails at
/// `cluster` with GKE's QUOTA_EXCEEDED and GKE keeps the cluster in ERROR. `up` again
/// deletes that cluster (it is ours, and unusable) and creates it again from the
/// records; `down` and `up` afterwards work as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_refused_by_gke_at_the_cluster_then_up_again_recreates_it() {
    let (_slot, env) = slot_env().await;
    let n = names();
    env.arm("container", "clusters.create", "QUOTA_EXCEEDED", 1)
        .await;
    let op = env.up(CLUSTER, gpu()).await;
    let p1 = pool_of(&op);
    let failed = finish(&env, &op).await;
    assert_failed_at(&failed, &["cluster".to_owned()], "QUOTA_INSUFFICIENT");
    let meta = &failed["error"]["details"][0]["metadata"];
    assert_eq!(meta["cloudReason"], "QUOTA_EXCEEDED", "{failed}");
    assert_eq!(meta["deprecatedReason"], "QUOTA_EXCEEDED", "{failed}");
    assert_eq!(cluster_state(&env).await, "ERROR");

    let again = up(&env).await;
    assert_succeeded(&again);
    assert_eq!(outcomes(&again)["cluster"], "recreated");
    assert_eq!(outcomes(&again)[&format!("pool:{p1}")], "created");
    assert_eq!(env.ok_calls("container", "clusters.create").await.len(), 2);
    assert_eq!(env.ok_calls("container", "clusters.delete").await.len(), 1);
    assert_eq!(cluster_state(&env).await, "RUNNING");

    let gone = down(&env).await;
    assert_succeeded(&gone);
    assert_eq!(cluster_state(&env).await, "DELETED");
    let later = up(&env).await;
    assert_succeeded(&later);
    assert_eq!(cluster_state(&env).await, "RUNNING");
    assert_eq!(env.ok_calls("container", "clusters.create").await.len(), 3);
    let _ = n;
    close(env).await;
}

/// The smallest reproduction of the runner deadlock: four steps that run side by side
/// each fail once with a 503 and are retried while the others finish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_retried_while_others_run_does_not_stall_the_operation() {
    let env = env().await;
    for (service, method) in [
        ("storage", "buckets.insert"),
        ("iam", "serviceAccounts.create"),
        ("artifactregistry", "repositories.create"),
        ("compute", "networks.insert"),
    ] {
        env.arm(service, method, "HTTP_503", 1).await;
    }
    let op = env.up(CLUSTER, gpu()).await;
    let done = finish(&env, &op).await;
    assert_succeeded(&done);
    assert!(
        retried(&done).len() >= 4,
        "{}",
        done["metadata"]["progress"]
    );
    close(env).await;
}

// ---------------------------------------------------------------------------------------
// pool add
