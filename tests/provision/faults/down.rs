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
    at(
        &["builds-bucket"],
        "storage",
        "buckets.delete",
        &["jobs-bucket"],
        "HTTP_429",
        QUOTA,
    ),
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
    client(at(
        &["node-sa-roles"],
        "cloudresourcemanager",
        "projects.setIamPolicy",
        &["build-sa-roles"],
        "HTTP_503",
        QUOTA,
    )),
    client(at(
        &["build-sa-roles"],
        "cloudresourcemanager",
        "projects.setIamPolicy",
        &["node-sa-roles"],
        "HTTP_429",
        QUOTA,
    )),
    at(
        &["node-sa", "build-sa"],
        "iam",
        "serviceAccounts.delete",
        &[],
        "HTTP_503",
        QUOTA,
    ),
];

/// A retryable fault at the step's call: `down` still succeeds, the call was made
/// again, and each resource was deleted once.
async fn down_retry_case(a: At) {
    let env = env().await;
    let n = names();
    let pool = gpu_cluster(&env).await;
    for s in a.prepare {
        unmake(&env, &n, s).await;
    }
    env.arm(a.service, a.method, a.retry, 1).await;
    let done = down(&env).await;
    assert_succeeded(&done);
    assert_made_again_once(&env, a.service, a.method, a.steps.len() == 1).await;
    let targets = resolve(a.steps, &pool);
    let again = retried(&done);
    if a.client_retry {
        assert_eq!(
            again,
            Vec::<String>::new(),
            "{}",
            done["metadata"]["progress"]
        );
    } else {
        assert!(
            again.len() == 1 && targets.contains(&again[0]),
            "retried {again:?}, expected one of {targets:?}"
        );
    }
    assert_eq!(
        ok_per_resource(&env, &DELETES).await,
        deleted_once(&n, &[&pool])
    );
    assert_eq!(cluster_state(&env).await, "DELETED");
    close(env).await;
}

/// A terminal fault at the step's call: `down` fails there with the cloud's reason and
/// the cluster is ERROR; `down` again succeeds having deleted each resource once; `up`
/// of the same name works afterwards.
async fn down_terminal_case(a: At) {
    let env = env().await;
    let n = names();
    let pool = gpu_cluster(&env).await;
    for s in a.prepare {
        unmake(&env, &n, s).await;
    }
    let (kind, count, reason) = a.terminal;
    env.arm(a.service, a.method, kind, count).await;
    let failed = down(&env).await;
    let at = assert_failed_at(&failed, &resolve(a.steps, &pool), reason);
    assert_eq!(
        failed["error"]["details"][0]["metadata"]["service"],
        a.service
    );
    assert_eq!(cluster_state(&env).await, "ERROR");

    let again = down(&env).await;
    assert_succeeded(&again);
    assert_eq!(step(&again, &at)["attempts"], 1);
    assert_eq!(cluster_state(&env).await, "DELETED");
    assert_eq!(
        ok_per_resource(&env, &DELETES).await,
        deleted_once(&n, &[&pool])
    );

    let later = up(&env).await;
    assert_succeeded(&later);
    assert_eq!(cluster_state(&env).await, "RUNNING");
    close(env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_survives_a_retryable_fault_at_each_policy_step() {
    let cases = DOWN_AT.iter().filter(|a| a.client_retry);
    each(cases.map(|a| (a.name(a.retry), down_retry_case(*a)))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_survives_a_retryable_fault_at_each_step() {
    let cases = DOWN_AT.iter().filter(|a| !a.client_retry);
    each(cases.map(|a| (a.name(a.retry), down_retry_case(*a)))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_fails_on_a_terminal_fault_at_each_step_and_down_again_completes_it() {
    each(
        DOWN_AT
            .iter()
            .map(|a| (a.name(a.terminal.0), down_terminal_case(*a))),
    )
    .await;
}

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
