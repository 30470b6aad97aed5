//! Faults at `pool add` and `pool remove`.

use super::*;

/// The operation failed at `pool`'s step with the cloud's `reason`; the record is ERROR.
async fn assert_pool_failed(env: &Env, op: &Value, pool: &str, reason: &str) {
    assert_failed_at(op, &[format!("pool:{pool}")], reason);
    assert_eq!(pool_state(env, pool).await.as_deref(), Some("ERROR"));
}

/// The operation succeeded after the pool's step retried its `method` call, made
/// again once.
async fn assert_pool_retried(env: &Env, done: &Value, method: &str, pool: &str) {
    assert_succeeded(done);
    assert_made_again_once(env, "container", method, true).await;
    assert_eq!(
        retried(done),
        [format!("pool:{pool}")],
        "{}",
        done["metadata"]["progress"]
    );
}

/// `pool remove` of `pool` succeeds, reports it deleted, and leaves no record.
async fn remove_pool_ok(env: &Env, pool: &str) {
    let removed = remove_pool(env, pool).await;
    assert_succeeded(&removed);
    assert_eq!(
        removed["response"]["outcomes"][format!("pool:{pool}")],
        "deleted"
    );
    assert_eq!(pool_state(env, pool).await, None);
}

/// A retryable fault at nodePools.create: the pool step is retried and the pool made once.
async fn pool_add_retry_case(kind: &'static str) {
    let (env, n, p1) = with_gpu_cluster().await;
    env.arm("container", "nodePools.create", kind, 1).await;
    let (p2, done) = add_pool(&env).await;
    assert_pool_retried(&env, &done, "nodePools.create", &p2).await;
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        created_once(&n, &[&p1, &p2])
    );
    assert_eq!(pool_state(&env, &p2).await.as_deref(), Some("RUNNING"));
    close(env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_add_survives_a_retryable_fault() {
    each(
        ["GKE_BUSY", "HTTP_503"].map(|k| (format!("nodePools.create {k}"), pool_add_retry_case(k))),
    )
    .await;
}

/// nodePools.create rejected for good (the token stays expired after the client's
/// refresh): the pool record is ERROR and nothing exists in GKE; `up` again repairs the
/// recorded pool, creating it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_add_rejected_then_up_again_creates_the_recorded_pool() {
    let _slot = SLOTS.acquire().await.unwrap();
    let (env, n, p1) = with_gpu_cluster().await;
    let reason = arm_fault(&env, "container", "nodePools.create", GKE_401).await;
    let (p2, failed) = add_pool(&env).await;
    assert_pool_failed(&env, &failed, &p2, reason).await;
    assert_eq!(cluster_state(&env).await, "RUNNING");

    let again = up(&env).await;
    assert_succeeded(&again);
    assert_eq!(
        again["response"]["outcomes"][format!("pool:{p2}")],
        "created",
        "{}",
        again["response"]
    );
    assert_eq!(
        again["response"]["outcomes"][format!("pool:{p1}")],
        "adopted",
        "{}",
        again["response"]
    );
    assert_eq!(pool_state(&env, &p2).await.as_deref(), Some("RUNNING"));
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        created_once(&n, &[&p1, &p2])
    );

    let gone = down(&env).await;
    assert_succeeded(&gone);
    assert_eq!(
        ok_per_resource(&env, &DELETES).await,
        deleted_once(&n, &[&p1, &p2])
    );
    close(env).await;
}

/// GKE accepts the pool and its operation fails (quota, stockout): the operation fails
/// with GKE's reason, the record is ERROR, and GKE keeps the pool in ERROR. What the
/// product supports from there: `pool remove` deletes it, and a new `pool add` works.
async fn pool_add_refused_case(kind: &'static str, reason: &'static str) {
    let (env, n, p1) = with_gpu_cluster().await;
    env.arm("container", "nodePools.create", kind, 1).await;
    let (p2, failed) = add_pool(&env).await;
    assert_pool_failed(&env, &failed, &p2, reason).await;

    remove_pool_ok(&env, &p2).await;
    let (p3, added) = add_pool(&env).await;
    assert_succeeded(&added);
    assert_eq!(pool_state(&env, &p3).await.as_deref(), Some("RUNNING"));

    // p2 was asked for once (accepted, then failed), p3 made once.
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        created_once(&n, &[&p1, &p2, &p3])
    );
    let deleted = ok_per_resource(&env, &DELETES).await;
    assert_eq!(
        deleted,
        BTreeMap::from([(format!("nodePools.delete {p2}"), 1)])
    );
    close(env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_add_refused_by_gke_then_remove_and_add_again() {
    each([
        (
            "nodePools.create QUOTA_EXCEEDED".to_owned(),
            pool_add_refused_case("QUOTA_EXCEEDED", "QUOTA_INSUFFICIENT"),
        ),
        (
            "nodePools.create STOCKOUT".to_owned(),
            pool_add_refused_case("STOCKOUT", "ZONE_RESOURCE_EXHAUSTED"),
        ),
    ])
    .await;
}

// ---------------------------------------------------------------------------------------
// pool remove

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_remove_survives_a_retryable_fault() {
    async fn case(kind: &'static str) {
        let env = env().await;
        let p1 = gpu_cluster(&env).await;
        env.arm("container", "nodePools.delete", kind, 1).await;
        let done = remove_pool(&env, &p1).await;
        assert_pool_retried(&env, &done, "nodePools.delete", &p1).await;
        assert_eq!(pool_state(&env, &p1).await, None);
        assert_eq!(
            ok_per_resource(&env, &DELETES).await,
            BTreeMap::from([(format!("nodePools.delete {p1}"), 1)])
        );
        close(env).await;
    }
    each(["GKE_BUSY", "HTTP_503"].map(|k| (format!("nodePools.delete {k}"), case(k)))).await;
}

/// nodePools.delete refused: the operation fails at the pool's step with the cloud's
/// reason and the record is ERROR; removing it again deletes it once; a later `up` does
/// not bring it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_remove_fails_on_a_terminal_fault_and_remove_again_completes_it() {
    let _slot = SLOTS.acquire().await.unwrap();
    let (env, n, p1) = with_gpu_cluster().await;
    let reason = arm_fault(&env, "container", "nodePools.delete", QUOTA).await;
    let failed = remove_pool(&env, &p1).await;
    assert_pool_failed(&env, &failed, &p1, reason).await;

    remove_pool_ok(&env, &p1).await;
    assert_eq!(
        ok_per_resource(&env, &DELETES).await,
        BTreeMap::from([(format!("nodePools.delete {p1}"), 1)])
    );

    let later = up(&env).await;
    assert_succeeded(&later);
    assert!(
        steps(&later)
            .iter()
            .all(|s| s["id"] != format!("pool:{p1}")),
        "{}",
        later["metadata"]["progress"]
    );
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        created_once(&n, &[&p1])
    );
    close(env).await;
}

// ---------------------------------------------------------------------------------------
// down: a fault at each step
