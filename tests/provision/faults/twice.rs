//! Every step run twice: the identical operation enqueued again changes nothing.

use super::*;

/// Enqueue `op` again as it was accepted (type, input, plan, steps all PENDING) and run
/// it to its end.
async fn run_again(env: &Env, op: &Value) -> Value {
    let id: Uuid = op["name"]
        .as_str()
        .and_then(|n| n.strip_prefix("operations/"))
        .and_then(|id| id.parse().ok())
        .expect("operation id");
    let row = store::operations::get(&env.app.db, id)
        .await
        .unwrap()
        .expect("operation row");
    let mut steps = row.steps.clone();
    for s in steps.as_array_mut().expect("steps") {
        let s = s.as_object_mut().unwrap();
        s.insert("state".into(), json!("PENDING"));
        s.insert("attempts".into(), json!(0));
        for k in ["result", "message", "startTime", "endTime"] {
            s.remove(k);
        }
    }
    let steps: Vec<kineticd::ops::steps::StepRecord> = serde_json::from_value(steps).unwrap();
    let plan: kineticd::plan::Plan =
        serde_json::from_value(row.plan.clone().expect("plan")).unwrap();
    let planned: Vec<String> = kineticd::ops::workflows::cluster::steps(&plan)
        .into_iter()
        .map(|s| s.id)
        .collect();
    let stored: Vec<String> = steps.iter().map(|s| s.id.clone()).collect();
    assert_eq!(stored, planned, "the stored steps are the plan's actions");
    let r = queue::enqueue(
        &env.app.db,
        &Enqueue {
            op_type: row.op_type.parse().expect("a known operation type"),
            target: row.target.clone(),
            serial_key: row.serial_key.clone(),
            team_id: row.team_id.clone().expect("team"),
            cluster_id: row.cluster_id,
            created_by: row.created_by.clone(),
            input: row.input.clone(),
            plan: row.plan.clone(),
            steps,
            idempotency: None,
        },
    )
    .await
    .unwrap();
    assert!(r.created);
    let done = finish(env, &json!({"name": format!("operations/{}", r.op.id)})).await;
    assert_eq!(done["metadata"]["type"], op["metadata"]["type"]);
    done
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_of_up_run_twice_changes_nothing() {
    let (_slot, env) = slot_env().await;
    let first = up(&env).await;
    assert_succeeded(&first);
    let pool = pool_of(&first);
    let created = outcomes(&first);
    for id in [
        "state-bucket",
        "network",
        "cluster",
        &format!("pool:{pool}"),
    ] {
        assert_eq!(created[id], "created", "{created:?}");
    }
    let creates = ok_per_resource(&env, &CREATES).await;
    let writes = ok_counts(&env, &POLICY_WRITES).await;

    let again = run_again(&env, &first).await;
    assert_succeeded(&again);
    for (id, outcome) in outcomes(&again) {
        let want = match id.as_str() {
            "apis" => "enabled",
            "ksa" | "lws" | "nvidia-driver" => "applied",
            "profile" => "saved",
            s if s.ends_with("-roles") || s.ends_with("-iam") || s == "workload-identity" => {
                "granted"
            }
            _ => "adopted",
        };
        assert_eq!(outcome, want, "step {id}");
    }
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        creates,
        "nothing created again"
    );
    assert_eq!(
        ok_counts(&env, &POLICY_WRITES).await,
        writes,
        "no policy written again"
    );
    assert_running(&env, &pool).await;
    close(env).await;
}

/// After `down`, the same DOWN_CLUSTER again: every resource step finds its resource
/// gone, nothing is deleted or written again.
async fn down_twice(env: &Env) -> Value {
    let pool = gpu_cluster(env).await;
    let first = down(env).await;
    assert_succeeded(&first);
    assert_eq!(outcomes(&first)[&format!("pool:{pool}")], "deleted");
    let deletes = ok_per_resource(env, &DELETES).await;
    let writes = ok_counts(env, &POLICY_WRITES).await;
    let calls_before = delete_calls(env).await.len();

    let again = run_again(env, &first).await;
    assert_succeeded(&again);
    assert_eq!(
        ok_per_resource(env, &DELETES).await,
        deletes,
        "nothing deleted again"
    );
    // The service accounts and the repository are deleted without a read first: those
    // calls are made again and answered 404; every other step reads and finds nothing.
    let calls = delete_calls(env).await;
    let mut again_calls: Vec<String> = calls[calls_before..]
        .iter()
        .map(|e| {
            assert_eq!(e["status"], 404, "{e}");
            e["method"].as_str().unwrap().to_owned()
        })
        .collect();
    again_calls.sort();
    assert_eq!(
        again_calls,
        [
            "repositories.delete",
            "serviceAccounts.delete",
            "serviceAccounts.delete"
        ]
    );
    assert_eq!(
        ok_counts(env, &POLICY_WRITES).await,
        writes,
        "no policy written again"
    );
    assert_eq!(cluster_state(env).await, "DELETED");
    again
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_of_down_run_twice_changes_nothing() {
    let (_slot, env) = slot_env().await;
    let again = down_twice(&env).await;
    for (id, outcome) in outcomes(&again) {
        if !id.ends_with("-roles") {
            assert_eq!(outcome, "absent", "step {id}");
        }
    }
    close(env).await;
}

/// The role steps of a repeated `down` revoke nothing (no policy is written, see
/// [`down_twice`]) yet report "revoked".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn down_run_twice_reports_the_revoked_roles_absent() {
    let (_slot, env) = slot_env().await;
    let again = down_twice(&env).await;
    let o = outcomes(&again);
    assert_eq!(o["node-sa-roles"], "absent", "{o:?}");
    assert_eq!(o["build-sa-roles"], "absent", "{o:?}");
    close(env).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_of_pool_add_and_remove_run_twice_changes_nothing() {
    let _slot = SLOTS.acquire().await.unwrap();
    let (env, n, p1) = with_gpu_cluster().await;

    let (p2, added) = add_pool(&env).await;
    assert_succeeded(&added);
    assert_eq!(outcomes(&added)[&format!("pool:{p2}")], "created");
    let again = run_again(&env, &added).await;
    assert_succeeded(&again);
    assert_eq!(
        outcomes(&again),
        BTreeMap::from([
            (format!("pool:{p2}"), "adopted".to_owned()),
            ("nvidia-driver".to_owned(), "applied".to_owned()),
        ])
    );
    assert_eq!(
        ok_per_resource(&env, &CREATES).await,
        created_once(&n, &[&p1, &p2])
    );
    assert_eq!(pool_state(&env, &p2).await.as_deref(), Some("RUNNING"));

    let removed = remove_pool(&env, &p2).await;
    assert_succeeded(&removed);
    let calls = env.journal("container", "nodePools.delete").await.len();
    let again = run_again(&env, &removed).await;
    assert_succeeded(&again);
    assert_eq!(
        outcomes(&again),
        BTreeMap::from([(format!("pool:{p2}"), "absent".to_owned())])
    );
    assert_eq!(
        env.journal("container", "nodePools.delete").await.len(),
        calls,
        "no delete call at all"
    );
    assert_eq!(
        ok_per_resource(&env, &DELETES).await,
        BTreeMap::from([(format!("nodePools.delete {p2}"), 1)])
    );
    assert_eq!(pool_state(&env, &p2).await, None);
    assert_eq!(pool_state(&env, &p1).await.as_deref(), Some("RUNNING"));
    close(env).await;
}
