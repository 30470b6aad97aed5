//! A fault at each step of `down`.

use super::*;

/// Every step of `down` that makes a cloud call (`prepare`: steps whose resource is
/// removed beforehand). The two service accounts are deleted without a read first, so
/// their method cannot be isolated to one of them: the fault hits the first to call.
pub(crate) const DOWN_AT: [At; 10] = [
    at(
        &["jobs-bucket"],
        "storage",
        "buckets.delete",
        &["builds-bucket"],
        "HTTP_503",
        QUOTA,
    ),
    // Google refused to serve it (429): the client sends it again itself.
    client(at(
        &["builds-bucket"],
        "storage",
        "buckets.delete",
        &["jobs-bucket"],
        "HTTP_429",
        QUOTA,
    )),
    at(
        &["repository"],
        "artifactregistry",
        "repositories.delete",
        &[],
        "HTTP_503",
        QUOTA,
    ),
    POOL_DELETE_AT,
    at(
        &["cluster"],
        "container",
        "clusters.delete",
        &[],
        "GKE_BUSY",
        QUOTA,
    ),
    at(
        &["router"],
        "compute",
        "routers.delete",
        &[],
        "HTTP_503",
        QUOTA,
    ),
    at(
        &["network"],
        "compute",
        "networks.delete",
        &[],
        "HTTP_500",
        QUOTA,
    ),
    project_roles(&["node-sa-roles"], &["build-sa-roles"], "HTTP_503"),
    project_roles(&["build-sa-roles"], &["node-sa-roles"], "HTTP_429"),
    at(
        &["node-sa", "build-sa"],
        "iam",
        "serviceAccounts.delete",
        &[],
        "HTTP_503",
        QUOTA,
    ),
];

/// A gpu cluster for case `a`, the resources of its `prepare` steps removed; its names
/// and pool.
async fn prepared(a: &At) -> (Env, ClusterNames, String) {
    let (env, n, pool) = with_gpu_cluster().await;
    for s in a.prepare {
        unmake(&env, &n, s).await;
    }
    (env, n, pool)
}

/// A retryable fault at the step's call: `down` still succeeds, the call was made
/// again, and each resource was deleted once.
async fn down_retry_case(a: At) {
    let (env, n, pool) = prepared(&a).await;
    env.arm(a.service, a.method, a.retry, 1).await;
    let done = down(&env).await;
    assert_succeeded(&done);
    assert_made_again_once(&env, a.service, a.method, a.steps.len() == 1).await;
    let targets = resolve(a.steps, &pool);
    if a.client_retry {
        assert_none_retried(&done);
    } else {
        let again = retried(&done);
        assert!(
            again.len() == 1 && targets.contains(&again[0]),
            "retried {again:?}, expected one of {targets:?}"
        );
    }
    assert_deleted_once(&env, &n, &pool).await;
    close(env).await;
}

/// A terminal fault at the step's call: `down` fails there with the cloud's reason and
/// the cluster is ERROR; `down` again succeeds having deleted each resource once; `up`
/// of the same name works afterwards.
async fn down_terminal_case(a: At) {
    let (env, n, pool) = prepared(&a).await;
    arm_fault(&env, a.service, a.method, a.terminal).await;
    let failed = down(&env).await;
    let at = assert_case_failed(&env, &failed, &a, &pool).await;

    let again = down(&env).await;
    assert_succeeded(&again);
    assert_eq!(step(&again, &at)["attempts"], 1);
    assert_deleted_once(&env, &n, &pool).await;

    let later = up(&env).await;
    assert_succeeded(&later);
    assert_eq!(cluster_state(&env).await, "RUNNING");
    close(env).await;
}

fault_table_tests!(DOWN_AT, down_retry_case, down_terminal_case;
    down_survives_a_retryable_fault_at_each_policy_step,
    down_survives_a_retryable_fault_at_each_step,
    down_fails_on_a_terminal_fault_at_each_step_and_down_again_completes_it);

// ---------------------------------------------------------------------------------------
// Every step run twice: the identical operation enqueued again after it succeeded

/// A pool's deletion (in `down` and in a pool remove).
pub(crate) const POOL_DELETE_AT: At = at(
    &["pool"],
    "container",
    "nodePools.delete",
    &[],
    "GKE_BUSY",
    QUOTA,
);
