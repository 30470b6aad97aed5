//! The StatefulSet and Job controllers: a StatefulSet keeps `replicas` pods named
//! `{name}-0 .. {name}-{n-1}` (created in order, each once the one before runs, removed
//! from the highest ordinal down); a Job keeps `parallelism` pods (default 1) named
//! `{job}-{5 chars}` while it is not complete. Pods come from the template and are
//! admitted as the API server admits any pod (see [`super::controller_pods`]).
//!
//! Invariant: each pass creates only what is missing and deletes only what is surplus,
//! and a status is written only when it changes, so a settled cluster stays unchanged.
//! The simulator's pods never finish, so a Job stays active (never Complete).

use serde_json::json;

use super::controller_pods::{
    Controller, create_pod, owned_pods, pod_from_template, random_suffix, reconcile_each, running,
    uid,
};
use super::objects::{ApiStore, ObjKey};

/// Keep each StatefulSet's ordinal pods: one more only once every lower one runs.
fn statefulsets(api: &mut ApiStore) -> bool {
    reconcile_each(api, "apps", "statefulsets", |api, key, sts| {
        let mut changed = false;
        let want = sts["spec"]["replicas"].as_i64().unwrap_or(1).max(0) as usize;
        let pods = owned_pods(api, &key.namespace, uid(sts));
        let ordinal = |k: &ObjKey| {
            k.name
                .rsplit_once('-')
                .and_then(|(_, n)| n.parse::<usize>().ok())
                .unwrap_or(usize::MAX)
        };
        let mut surplus: Vec<&ObjKey> = pods.iter().filter(|k| ordinal(k) >= want).collect();
        surplus.sort_by_key(|k| std::cmp::Reverse(ordinal(k)));
        for pk in surplus {
            api.remove(pk);
            let message = format!(
                "delete Pod {} in StatefulSet {} successful",
                pk.name, key.name
            );
            Controller::StatefulSet.event(api, sts, "SuccessfulDelete", &message);
            changed = true;
        }
        let have: Vec<usize> = pods.iter().map(ordinal).filter(|o| *o < want).collect();
        let next = (0..want).find(|o| !have.contains(o));
        let lower_running = running(api, &owned_pods(api, &key.namespace, uid(sts))) == have.len();
        if let Some(o) = next.filter(|_| lower_running) {
            let name = format!("{}-{o}", key.name);
            let mut pod = pod_from_template(Controller::StatefulSet, sts, &name);
            pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = json!(o.to_string());
            pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = json!(name);
            pod["spec"]["hostname"] = json!(name);
            create_pod(api, &key.namespace, &pod);
            let message = format!("create Pod {name} in StatefulSet {} successful", key.name);
            Controller::StatefulSet.event(api, sts, "SuccessfulCreate", &message);
            changed = true;
        }
        let pods = owned_pods(api, &key.namespace, uid(sts));
        let ready = running(api, &pods);
        let status = json!({
            "replicas": pods.len(),
            "readyReplicas": ready,
            "currentReplicas": pods.len(),
            "availableReplicas": ready,
            "observedGeneration": sts["metadata"]["generation"],
        });
        changed |= api.set_status(key, status);
        changed
    })
}

/// Keep each Job's `parallelism` pods.
fn jobs(api: &mut ApiStore) -> bool {
    reconcile_each(api, "batch", "jobs", |api, key, job| {
        let mut changed = false;
        let want = job["spec"]["parallelism"].as_i64().unwrap_or(1).max(0) as usize;
        let pods = owned_pods(api, &key.namespace, uid(job));
        for _ in pods.len()..want {
            let name = format!("{}-{}", key.name, random_suffix());
            let mut pod = pod_from_template(Controller::Job, job, &name);
            pod["metadata"]["labels"]["batch.kubernetes.io/job-name"] = json!(key.name);
            create_pod(api, &key.namespace, &pod);
            let message = format!("Created pod: {name}");
            Controller::Job.event(api, job, "SuccessfulCreate", &message);
            changed = true;
        }
        let pods = owned_pods(api, &key.namespace, uid(job));
        let mut status = json!({"active": pods.len(), "ready": running(api, &pods)});
        if let Some(t) = job["status"].get("startTime") {
            status["startTime"] = t.clone();
        } else {
            status["startTime"] = json!(super::objects::now_rfc3339());
        }
        changed |= api.set_status(key, status);
        changed
    })
}

/// Run both controllers once. Returns whether anything changed.
pub fn run(api: &mut ApiStore) -> bool {
    let changed = statefulsets(api);
    jobs(api) || changed
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "w"}},
               "spec": {"containers": [{"name": "m", "image": "x",
                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    }

    /// Creates the StatefulSet or Job (`plural`) `name` in `default` with `spec` and the
    /// pod [`template`]; returns its key.
    fn create_owner(api: &mut ApiStore, plural: &str, name: &str, mut spec: Value) -> ObjKey {
        let (group, kind) = match plural {
            "statefulsets" => ("apps", "StatefulSet"),
            _ => ("batch", "Job"),
        };
        spec["template"] = template();
        let key = ObjKey::new(group, plural, "default", name);
        let owner = json!({"apiVersion": format!("{group}/v1"), "kind": kind,
            "metadata": {"name": name, "namespace": "default"}, "spec": spec});
        api.create(key.clone(), &owner, "test", "Update", None);
        key
    }

    fn pods(api: &ApiStore) -> Vec<String> {
        api.list("", "pods", Some("default"))
            .map(|(k, _)| k.name.clone())
            .collect()
    }

    fn set_running(api: &mut ApiStore, name: &str) {
        let k = ObjKey::new("", "pods", "default", name);
        assert!(api.set_status(&k, json!({"phase": "Running"})));
    }

    #[test]
    fn a_statefulset_makes_its_ordinals_in_order_and_removes_from_the_top() {
        let mut api = ApiStore::default();
        let key = create_owner(&mut api, "statefulsets", "db", json!({"replicas": 2}));
        assert!(run(&mut api));
        assert_eq!(pods(&api), ["db-0"], "db-1 waits for db-0 to run");
        let p = api
            .get(&ObjKey::new("", "pods", "default", "db-0"))
            .unwrap();
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert!(
            p["spec"]["tolerations"]
                .to_string()
                .contains("nvidia.com/gpu"),
            "admitted: {p}"
        );
        assert!(!run(&mut api), "settled: nothing more until db-0 runs");
        set_running(&mut api, "db-0");
        run(&mut api);
        assert_eq!(pods(&api), ["db-0", "db-1"]);
        assert_eq!(api.get(&key).unwrap()["status"]["readyReplicas"], 1);
        let mut scaled = api.get(&key).unwrap().clone();
        scaled["spec"]["replicas"] = json!(1);
        api.put(key, scaled);
        run(&mut api);
        assert_eq!(pods(&api), ["db-0"], "the highest ordinal goes first");
    }

    #[test]
    fn a_job_keeps_its_parallelism_of_pods() {
        let mut api = ApiStore::default();
        let key = create_owner(&mut api, "jobs", "train", json!({"parallelism": 2}));
        run(&mut api);
        let names = pods(&api);
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("train-")));
        let status = &api.get(&key).unwrap()["status"];
        assert_eq!(status["active"], 2);
        assert!(status["startTime"].is_string());
        assert!(!run(&mut api), "settled");
    }
}
