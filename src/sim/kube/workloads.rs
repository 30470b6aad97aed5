//! The Deployment and ReplicaSet controllers: a Deployment owns one ReplicaSet per pod
//! template (`{deployment}-{template hash}`, labelled `pod-template-hash`), older ones
//! are scaled to zero; a ReplicaSet keeps `replicas` pods (`{replicaset}-{5 chars}`)
//! made from its template and admitted as the API server admits any pod; objects whose
//! owner is gone are garbage-collected.
//!
//! Invariant: each pass only creates what is missing and deletes what is surplus or
//! orphaned, so a settled cluster stays unchanged (no resourceVersion moves), and a
//! pod's template is admitted exactly once, when the pod is created.

use serde_json::{Value, json};

use super::controller_pods::{
    CONTROLLER, Controller, create_pod, owned_pods, owner_uid, pod_from_template, random_suffix,
    reconcile_each, running, safe_encode, uid,
};
use super::objects::{ApiStore, ObjKey};

/// The `pod-template-hash` of a template (10 characters, stable).
pub fn template_hash(template: &Value) -> String {
    safe_encode(crate::domain::hash::fnv1a(template.to_string().bytes()), 10)
}

fn replicas(obj: &Value) -> i64 {
    obj["spec"]["replicas"].as_i64().unwrap_or(1)
}

/// The ReplicaSet a Deployment wants now.
fn desired_replicaset(d: &Value, hash: &str) -> Value {
    let name = format!("{}-{hash}", d["metadata"]["name"].as_str().unwrap_or(""));
    let mut template = d["spec"]["template"].clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(hash);
    let mut selector = d["spec"]["selector"].clone();
    selector["matchLabels"]["pod-template-hash"] = json!(hash);
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": Controller::Deployment.owned_metadata(d, &name, &template),
        "spec": {"replicas": replicas(d), "selector": selector, "template": template},
    })
}

/// Give every Deployment its current ReplicaSet, scale the others to zero.
fn deployments(api: &mut ApiStore) -> bool {
    reconcile_each(api, "apps", "deployments", |api, key, d| {
        let mut changed = false;
        let hash = template_hash(&d["spec"]["template"]);
        let want = desired_replicaset(d, &hash);
        let rs_name = want["metadata"]["name"].as_str().unwrap_or("").to_owned();
        let owned: Vec<(ObjKey, Value)> = api
            .list("apps", "replicasets", Some(&key.namespace))
            .filter(|(_, rs)| owner_uid(rs) == Some(uid(d)))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (k, rs) in &owned {
            let target = if k.name == rs_name { replicas(d) } else { 0 };
            if replicas(rs) != target {
                let mut rs = rs.clone();
                let from = replicas(&rs);
                rs["spec"]["replicas"] = json!(target);
                api.put(k.clone(), rs);
                let verb = if target > from { "up" } else { "down" };
                let msg = format!(
                    "Scaled {verb} replica set {} from {from} to {target}",
                    k.name
                );
                Controller::Deployment.event(api, d, "ScalingReplicaSet", &msg);
                changed = true;
            }
        }
        if !owned.iter().any(|(k, _)| k.name == rs_name) {
            let k = ObjKey::new("apps", "replicasets", &key.namespace, &rs_name);
            api.create(k, &want, CONTROLLER, "Update", None);
            let msg = format!("Scaled up replica set {rs_name} from 0 to {}", replicas(d));
            Controller::Deployment.event(api, d, "ScalingReplicaSet", &msg);
            changed = true;
        }
        changed
    })
}

/// Keep each ReplicaSet's pod count at its replicas.
fn replicasets(api: &mut ApiStore) -> bool {
    reconcile_each(api, "apps", "replicasets", |api, key, rs| {
        let mut changed = false;
        let pods = owned_pods(api, &key.namespace, uid(rs));
        let want = usize::try_from(replicas(rs).max(0)).unwrap_or(0);
        for _ in pods.len()..want {
            let name = format!("{}-{}", key.name, random_suffix());
            let pod = pod_from_template(Controller::ReplicaSet, rs, &name);
            create_pod(api, &key.namespace, &pod);
            let message = format!("Created pod: {name}");
            Controller::ReplicaSet.event(api, rs, "SuccessfulCreate", &message);
            changed = true;
        }
        for pk in pods.iter().skip(want).rev() {
            api.remove(pk);
            let message = format!("Deleted pod: {}", pk.name);
            Controller::ReplicaSet.event(api, rs, "SuccessfulDelete", &message);
            changed = true;
        }
        let running = running(api, &owned_pods(api, &key.namespace, uid(rs)));
        let status = json!({
            "replicas": want,
            "fullyLabeledReplicas": want,
            "readyReplicas": running,
            "availableReplicas": running,
            "observedGeneration": rs["metadata"]["generation"],
        });
        changed |= api.set_status(key, status);
        changed
    })
}

/// Delete ReplicaSets and pods whose controlling owner no longer exists.
fn collect_garbage(api: &mut ApiStore) -> bool {
    let live: std::collections::BTreeSet<String> =
        api.objects.values().map(|o| uid(o).to_owned()).collect();
    let orphans: Vec<ObjKey> = api
        .objects
        .iter()
        .filter(|(k, _)| {
            (k.group == "apps" && k.plural == "replicasets")
                || (k.group.is_empty() && k.plural == "pods")
        })
        .filter(|(_, o)| owner_uid(o).is_some_and(|u| !live.contains(u)))
        .map(|(k, _)| k.clone())
        .collect();
    for k in &orphans {
        api.remove(k);
    }
    !orphans.is_empty()
}

/// Run the controllers once. Returns whether anything changed.
pub fn run(api: &mut ApiStore) -> bool {
    let mut changed = collect_garbage(api);
    changed |= deployments(api);
    changed |= replicasets(api);
    changed |= super::pod_sets::run(api);
    changed
}

/// Running pods of the Deployment's current ReplicaSet.
pub fn running_pods(api: &ApiStore, d: &Value) -> i64 {
    let ns = d["metadata"]["namespace"].as_str().unwrap_or("");
    let name = format!(
        "{}-{}",
        d["metadata"]["name"].as_str().unwrap_or(""),
        template_hash(&d["spec"]["template"])
    );
    let Some(rs) = api.get(&ObjKey::new("apps", "replicasets", ns, &name)) else {
        return 0;
    };
    let n = running(api, &owned_pods(api, ns, uid(rs)));
    i64::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(api: &mut ApiStore, replicas: i64, image: &str) -> ObjKey {
        let key = ObjKey::new("apps", "deployments", "default", "web");
        let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image,
                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}});
        match api.get(&key).cloned() {
            None => {
                api.create(key.clone(), &body, "t", "Update", None);
            }
            Some(mut d) => {
                d["spec"] = body["spec"].clone();
                api.put(key.clone(), d);
            }
        }
        key
    }

    #[test]
    fn deployment_to_replicaset_to_admitted_pods_and_back() {
        let mut api = ApiStore::default();
        let key = deployment(&mut api, 2, "a");
        while run(&mut api) {}
        let pods: Vec<Value> = api.list("", "pods", None).map(|(_, p)| p.clone()).collect();
        assert_eq!(pods.len(), 2);
        assert!(
            pods.iter()
                .all(|p| p["spec"]["tolerations"][0]["key"] == "nvidia.com/gpu"),
            "admitted"
        );
        let rs: Vec<String> = api
            .list("apps", "replicasets", None)
            .map(|(k, _)| k.name.clone())
            .collect();
        assert_eq!(rs.len(), 1);
        assert!(
            pods.iter()
                .all(|p| p["metadata"]["name"].as_str().unwrap().starts_with(&rs[0]))
        );
        let rv = api.resource_version;
        assert!(!run(&mut api), "settled");
        assert_eq!(api.resource_version, rv);

        deployment(&mut api, 1, "b");
        while run(&mut api) {}
        assert_eq!(
            api.list("", "pods", None).count(),
            1,
            "old template scaled to zero"
        );
        assert_eq!(api.list("apps", "replicasets", None).count(), 2);

        api.remove(&key);
        while run(&mut api) {}
        assert_eq!(api.list("", "pods", None).count(), 0, "garbage-collected");
        assert_eq!(api.list("apps", "replicasets", None).count(), 0);
    }
}
