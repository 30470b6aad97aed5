//! Flex-start and queued-provisioning pools in the simulator, through the production
//! Kubernetes client: a flex-start pool grows for a pending GPU pod like any pool; a
//! queued pool does not — it grows only when a ProvisioningRequest built from the
//! operation's response asks, the request's status then says Provisioned, and the
//! workload check knows that only pods tolerating the queued taint fit there.

use k8s_openapi::api::core::v1::{Pod, PodTemplate};
use kineticd::cloud::kube::KubeCluster;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{
    Env, OWNER, cluster_path, explicit_clock_up, kube, kube_key, pool_of, provisioned,
};

/// The node a pod runs on (`None` while it is not Running).
async fn node_of(k: &KubeCluster, name: &str) -> Option<String> {
    let p = k
        .pods(Some("default"))
        .await
        .expect("pods")
        .into_iter()
        .find(|p| p.name == name)
        .expect("pod exists");
    p.node.filter(|_| p.phase == "Running")
}

/// Creates `pod` in `default` of cluster `kq`, lets 300 virtual seconds pass, and
/// checks that the pod is still pending and that `pool` has `nodes` nodes.
async fn left_pending(env: &Env, k: &KubeCluster, pod: &Pod, pool: &str, nodes: u32) {
    let pods: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    pods.create(&PostParams::default(), pod)
        .await
        .expect("create pod");
    env.advance(300.0).await;
    let name = pod.metadata.name.as_deref().expect("a pod name");
    assert_eq!(node_of(k, name).await, None, "{name}");
    assert_eq!(
        env.sim.world().kube.pool_node_count(&kube_key("kq"), pool),
        Some(nodes),
        "{name}"
    );
}

fn gpu_pod(name: &str, pool: &str, gpus: u32, extra: Value) -> Pod {
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "nodeSelector": {"cloud.google.com/gke-nodepool": pool},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": gpus.to_string()}}}],
        },
    });
    if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    serde_json::from_value(v).expect("pod")
}

#[tokio::test]
async fn a_flex_start_pool_grows_for_a_pending_gpu_pod() {
    let env = explicit_clock_up("ks").await;
    let flex = provisioned("l4", "FLEX_START", json!({}));
    let add = env.add_pool("ks", flex).await;
    assert_eq!(env.run_out(&add).await["metadata"]["state"], "SUCCEEDED");
    let pool = pool_of(&add);
    let k = kube(&env, "ks");
    let api: Api<Pod> = Api::namespaced(k.client().await.expect("client"), "default");
    api.create(
        &PostParams::default(),
        &gpu_pod("tune", &pool, 1, json!({})),
    )
    .await
    .expect("create pod");
    assert_eq!(
        node_of(&k, "tune").await,
        None,
        "pending until a node comes"
    );
    env.advance(61.0).await;
    let node = node_of(&k, "tune").await.expect("running");
    assert!(node.starts_with(&format!("gke-{pool}-")), "{node}");
    let nodes = k.nodes().await.expect("nodes");
    let n = nodes.iter().find(|n| n.name == node).expect("node");
    assert_eq!(n.labels["cloud.google.com/gke-flex-start"], "true");
}

#[tokio::test]
async fn a_queued_pool_grows_only_when_a_provisioning_request_asks() {
    let env = explicit_clock_up("kq").await;
    let queued = provisioned("l4", "QUEUED", json!({}));
    let add = env.add_pool("kq", queued).await;
    let done = env.run_out(&add).await;
    assert_eq!(done["metadata"]["state"], "SUCCEEDED", "{done}");
    let pool = pool_of(&add);
    let r = &done["response"];
    let k = kube(&env, "kq");
    let client = k.client().await.expect("client");

    // A pending pod alone: no node, however long it waits.
    let annotations = r["podAnnotations"].clone();
    let job_pod = |name: &str| gpu_pod(name, &pool, 1, json!({"tolerations": r["tolerations"]}));
    left_pending(&env, &k, &job_pod("waiting"), &pool, 0).await;

    // The workload check knows the queued pool's taint: only a pod that tolerates it
    // (as a ProvisioningRequest's pods do) fits there.
    let check = format!("{}:checkWorkload", cluster_path("kq"));
    let verdict = |body: &Value| {
        body["pools"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["poolId"] == pool.as_str()))
            .cloned()
            .unwrap_or_else(|| panic!("no verdict for {pool}: {body}"))
    };
    let plain = serde_json::to_value(gpu_pod("plain", &pool, 1, json!({}))).expect("pod");
    let checked = env.app.post(OWNER, &check, plain).await;
    assert_eq!(checked.status, StatusCode::OK, "{}", checked.body);
    let v = verdict(&checked.body);
    assert_eq!(v["fits"], "NEVER", "{}", checked.body);
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("MISSING_TOLERATION") && reason.contains("cloud.google.com/gke-queued"),
        "{reason}"
    );
    let tolerated = serde_json::to_value(job_pod("tolerated")).expect("pod");
    let checked = env.app.post(OWNER, &check, tolerated).await;
    assert_ne!(verdict(&checked.body)["fits"], "NEVER", "{}", checked.body);

    // The response's PodTemplate and ProvisioningRequest, created as a job would.
    let templates: Api<PodTemplate> = Api::namespaced(client.clone(), "default");
    let t: PodTemplate = serde_json::from_value(r["podTemplate"].clone()).expect("template");
    templates
        .create(&PostParams::default(), &t)
        .await
        .expect("create PodTemplate");
    let gvk = GroupVersionKind::gvk("autoscaling.x-k8s.io", "v1", "ProvisioningRequest");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "provisioningrequests");
    let prs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let pr: DynamicObject =
        serde_json::from_value(r["provisioningRequest"].clone()).expect("request");
    let name = pr.metadata.name.clone().expect("name");
    prs.create(&PostParams::default(), &pr)
        .await
        .expect("create ProvisioningRequest");

    // GKE's answer: the pool's node, and the request's status.
    let got = prs.get(&name).await.expect("get ProvisioningRequest");
    let conditions = got.data["status"]["conditions"].clone();
    let status_of = |kind: &str| {
        conditions
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == kind))
            .map(|c| c["status"].clone())
    };
    assert_eq!(status_of("Accepted"), Some(json!("True")), "{conditions}");
    assert_eq!(
        status_of("Provisioned"),
        Some(json!("True")),
        "{conditions}"
    );
    assert_eq!(
        got.data["status"]["provisioningClassDetails"]["NodePoolName"],
        pool.as_str()
    );
    assert_eq!(
        env.sim.world().kube.pool_node_count(&kube_key("kq"), &pool),
        Some(1)
    );
    let node = node_of(&k, "waiting").await.expect("the pod runs now");
    assert!(node.starts_with(&format!("gke-{pool}-")), "{node}");
    let nodes = k.nodes().await.expect("nodes");
    let n = nodes.iter().find(|n| n.name == node).expect("node");
    assert_eq!(n.labels["cloud.google.com/gke-queued"], "true");
    assert!(annotations.is_object());

    // Provisioned once: reading it again changes nothing, and a pod without the
    // queued toleration never lands on the queued node.
    let untolerated = gpu_pod("untolerated", &pool, 1, json!({}));
    left_pending(&env, &k, &untolerated, &pool, 1).await;
}
