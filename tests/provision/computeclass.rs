//! Failover pairs that prefer spot: `pool add` with `failover: true` creates both pools
//! tied to a GKE ComputeClass (label and taint on each) and applies the class through
//! the production Kubernetes client; the operation's response says what a workload
//! needs; old GKE versions are refused before anything is queued; removing either pool
//! removes both and the class; and through the simulator's autoscaler, pods that select
//! the class run on spot, fail over to on-demand after a reclaim, and return to spot.

use k8s_openapi::api::core::v1::Pod;
use kineticd::cloud::kube::{KubeCluster, PodInfo};
use kube::Api;
use kube::api::PostParams;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::*;

const CLASS_KEY: &str = "cloud.google.com/compute-class";

/// The pair's (spot, on-demand) pool ids from the pool list.
async fn pair(env: &Env, cluster: &str) -> (String, String) {
    let pools = env.pools(cluster).await;
    let pools = pools["nodePools"].as_array().cloned().unwrap_or_default();
    let id = |spot: bool| {
        pools
            .iter()
            .find(|p| p["spot"] == spot)
            .and_then(|p| p["poolId"].as_str())
            .expect("pool of the pair")
            .to_owned()
    };
    (id(true), id(false))
}

/// The ComputeClass `name` as the simulated API server stores it.
fn stored_class(env: &Env, cluster: &str, name: &str) -> Option<Value> {
    let key =
        kineticd::sim::kube::objects::ObjKey::new("cloud.google.com", "computeclasses", "", name);
    let w = env.sim.world();
    w.kube
        .clusters
        .get(&kube_key(cluster))?
        .api
        .get(&key)
        .cloned()
}

#[tokio::test]
async fn a_pair_is_created_tied_to_its_compute_class_and_the_response_says_how_to_use_it() {
    let env = env_up("kc").await;
    let op = env.add_pool("kc", l4_failover_pair()).await;
    let plan = &op["metadata"]["plan"]["actions"];
    let done = env.ok(&op).await;
    let (spot, od) = pair(&env, "kc").await;
    let class = format!("kinetic-{spot}");

    // The plan showed the class (the last action, after both pools).
    let last = plan.as_array().and_then(|a| a.last()).expect("actions");
    assert_eq!(last["id"], "compute-class");
    assert_eq!(last["type"], "kubernetes.object");
    assert_eq!(last["details"]["computeClass"]["metadata"]["name"], class);

    // The ComputeClass, exactly, as applied through the cluster's API server.
    let expected_spec = json!({
        "priorities": [{"nodepools": [spot]}, {"nodepools": [od]}],
        "activeMigration": {"optimizeRulePriority": true},
        "nodePoolAutoCreation": {"enabled": false},
        "whenUnsatisfiable": "DoNotScaleUp",
    });
    let obj = stored_class(&env, "kc", &class).expect("the class exists");
    assert_eq!(obj["apiVersion"], "cloud.google.com/v1");
    assert_eq!(obj["kind"], "ComputeClass");
    assert_eq!(obj["spec"], expected_spec);
    assert_eq!(obj["metadata"]["labels"], json!({"kinetic": "true"}));
    let applies: Vec<Value> = env
        .journal("kube", "kube.apply")
        .await
        .into_iter()
        .filter(|e| {
            e["path"]
                .as_str()
                .is_some_and(|p| p.contains("/computeclasses/"))
        })
        .collect();
    assert_eq!(applies.len(), 1, "{applies:?}");
    assert!(
        applies[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/apis/cloud.google.com/v1/computeclasses/{class}"))
    );

    // Both pools: GKE's label and taint for the class, seed 003's labels, their sizes.
    let calls = env.ok_calls("container", "nodePools.create").await;
    let taint = json!([{"key": CLASS_KEY, "value": class, "effect": "NO_SCHEDULE"}]);
    for (pool, role, spot_vm) in [(&spot, "spot", true), (&od, "on-demand", false)] {
        let body = created_pool(&calls, pool);
        assert_eq!(body["config"]["labels"][CLASS_KEY], class, "{pool}");
        assert_eq!(body["config"]["labels"]["gpu-pool-type"], role, "{pool}");
        assert_eq!(body["config"]["taints"], taint, "{pool}");
        assert_eq!(
            body["config"]["spot"].as_bool().unwrap_or(false),
            spot_vm,
            "{pool}"
        );
        assert_eq!(body["initialNodeCount"], 0, "{pool}");
        assert_eq!(
            (
                &body["autoscaling"]["minNodeCount"],
                &body["autoscaling"]["maxNodeCount"]
            ),
            (&json!(0), &json!(10)),
            "{pool}"
        );
        let rec = env
            .app
            .get(OWNER, &format!("{}/nodePools/{pool}", cluster_path("kc")))
            .await;
        assert_eq!(rec.body["taints"], taint, "{pool} record");
    }

    // The response: the selector, tolerations and a snippet that parses to both.
    let r = &done["response"];
    assert_eq!(r["computeClass"], class);
    assert_eq!(r["nodeSelector"], json!({CLASS_KEY: class}));
    assert_eq!(
        r["tolerations"],
        json!([
            {"key": CLASS_KEY, "operator": "Equal", "value": class, "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        ])
    );
    let snippet: Value =
        serde_saphyr::from_str(r["snippet"].as_str().expect("snippet")).expect("YAML");
    assert_eq!(snippet["nodeSelector"], r["nodeSelector"]);
    assert_eq!(snippet["tolerations"], r["tolerations"]);
    assert_eq!(r["outcomes"]["compute-class"], "applied");
}

#[tokio::test]
async fn a_gke_version_without_compute_classes_is_refused_before_anything_is_queued() {
    let env = env_up_on_gke("1.30.3-gke.1400000", "ko").await;
    let body = l4_failover_pair();
    for q in ["", "?validateOnly=true"] {
        let meta = gke_too_old(&env, "ko", q, body.clone(), "1.30.3-gke.1400000").await;
        assert_eq!(meta["minimumVersion"], "1.30.3-gke.1451000");
    }
    assert_eq!(
        env.operations_of("ADD_NODE_POOL").await["operations"],
        json!([])
    );
    assert_eq!(env.pools("ko").await["nodePools"], json!([]));
    // A single pool needs no compute class.
    env.ok(&env.add_pool("ko", json!({"accelerator": "l4"})).await)
        .await;
}

async fn remove(env: &Env, cluster: &str, pool: &str) -> Value {
    let path = format!("{}/nodePools/{pool}", cluster_path(cluster));
    let r = env.app.delete(OWNER, &path).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    env.ok(&r.body).await
}

#[tokio::test]
async fn removing_either_pool_removes_both_and_the_class_even_when_it_is_gone() {
    let env = env_up("kr").await;
    let body = l4_failover_pair();
    env.ok(&env.add_pool("kr", body.clone()).await).await;
    let (spot, od) = pair(&env, "kr").await;
    let class = format!("kinetic-{spot}");
    assert!(stored_class(&env, "kr", &class).is_some());

    // The on-demand pool: both pools go, then the class.
    let done = remove(&env, "kr", &od).await;
    assert_eq!(done["response"]["outcomes"]["compute-class"], "deleted");
    assert_eq!(env.pools("kr").await["nodePools"], json!([]));
    assert!(
        stored_class(&env, "kr", &class).is_none(),
        "the class is gone"
    );
    let deletes = env.journal("kube", "kube.delete").await;
    assert!(
        deletes.iter().any(|e| e["path"]
            .as_str()
            .is_some_and(|p| p.ends_with(&format!("/computeclasses/{class}")))),
        "{deletes:?}"
    );
    assert_eq!(env.ok_calls("container", "nodePools.delete").await.len(), 2);

    // A second pair whose class someone already deleted: removing its spot pool succeeds.
    env.ok(&env.add_pool("kr", body).await).await;
    let (spot, _) = pair(&env, "kr").await;
    let class = format!("kinetic-{spot}");
    {
        let key = kineticd::sim::kube::objects::ObjKey::new(
            "cloud.google.com",
            "computeclasses",
            "",
            &class,
        );
        let mut w = env.sim.world();
        let c = w.kube.clusters.get_mut(&kube_key("kr")).expect("cluster");
        assert!(c.api.get(&key).is_some());
        c.api.remove(&key);
    }
    let done = remove(&env, "kr", &spot).await;
    assert_eq!(done["response"]["outcomes"]["compute-class"], "absent");
    assert_eq!(env.pools("kr").await["nodePools"], json!([]));
}

async fn pod(k: &KubeCluster, name: &str) -> PodInfo {
    k.pods(Some("default"))
        .await
        .expect("pods")
        .into_iter()
        .find(|p| p.name == name)
        .expect("pod exists")
}

/// The pool the pod runs in (`None` while Pending).
async fn pool_of(k: &KubeCluster, name: &str, pools: [&str; 2]) -> Option<String> {
    let p = pod(k, name).await;
    let node = p.node.filter(|_| p.phase == "Running")?;
    pools
        .into_iter()
        .find(|pool| node.starts_with(&format!("gke-{pool}-")))
        .map(str::to_owned)
}

#[tokio::test]
async fn pods_of_the_class_run_on_spot_fail_over_to_on_demand_and_come_back() {
    let env = explicit_clock_up("ke").await;
    let add = env.add_pool("ke", l4_failover_pair()).await;
    let done = env.run_out(&add).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let (spot, od) = pair(&env, "ke").await;
    let r = &done["response"];
    let k = kube(&env, "ke");
    let p: Pod = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train"},
        "spec": {
            "nodeSelector": r["nodeSelector"],
            "tolerations": r["tolerations"],
            "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }))
    .expect("pod");
    let api: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    api.create(&PostParams::default(), &p)
        .await
        .expect("create pod");
    let pools = [spot.as_str(), od.as_str()];
    assert_eq!(
        pool_of(&k, "train", pools).await,
        None,
        "pending until a node comes"
    );

    // Spot first.
    env.advance(61.0).await;
    assert_eq!(
        pool_of(&k, "train", pools).await.as_deref(),
        Some(spot.as_str())
    );

    // A reclaim: the spot pool is backed off, the on-demand pool scales up.
    let url = format!(
        "{}/sim/v1/kube/{}/pools/{spot}:reclaim",
        env.sim.url(),
        kube_key("ke")
    );
    let resp = env.app.http.post(url).send().await.expect("reclaim");
    assert_eq!(resp.status(), 200);
    assert_eq!(pool_of(&k, "train", pools).await, None);
    env.advance(61.0).await;
    assert_eq!(
        pool_of(&k, "train", pools).await.as_deref(),
        Some(od.as_str())
    );

    // The backoff ends: active migration grows spot, then drains on-demand.
    env.advance(600.0).await;
    assert_eq!(
        pool_of(&k, "train", pools).await.as_deref(),
        Some(od.as_str()),
        "until spot has a node"
    );
    env.advance(61.0).await;
    assert_eq!(
        pool_of(&k, "train", pools).await.as_deref(),
        Some(spot.as_str())
    );
    let w = env.sim.world();
    assert_eq!(w.kube.pool_node_count(&kube_key("ke"), &od), Some(0));
    assert_eq!(w.kube.pool_node_count(&kube_key("ke"), &spot), Some(1));
}
