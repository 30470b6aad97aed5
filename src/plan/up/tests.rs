//! The `up` plan: resources, dependencies, second-up behaviour, critical path.

use super::*;
use crate::domain::accelerators::{Choice, parse};
use crate::domain::pools::shape;
use crate::plan::PlanError;

fn names() -> ClusterNames {
    crate::plan::test_names("my-project")
}

fn ids(p: &Plan) -> Vec<String> {
    p.actions.iter().map(|a| a.id.to_string()).collect()
}

fn new_cluster_plan(acc: &str, driver: Option<&str>) -> Plan {
    let n = names();
    let prices = PriceTable::default();
    let r = match parse(acc).unwrap() {
        Choice::Accelerator(r) => r,
        Choice::Cpu => panic!(),
    };
    let s = shape(&r, 0, false, None, None).unwrap();
    plan(&UpInput {
        names: &n,
        cluster_exists: false,
        existing_pools: &[],
        existing_need_driver: false,
        first_pool: Some(NewPool {
            id: "gpu-l4-1a2b",
            shape: &s,
            driver_version: driver,
        }),
        accelerator_requested: true,
        force_destroy: true,
        prices: &prices,
        live: None,
    })
}

#[test]
fn a_new_gpu_cluster_plans_every_resource_of_the_reference() {
    let p = new_cluster_plan("l4", None);
    p.validate().unwrap();
    for must in [
        "apis",
        "state-bucket",
        "network",
        "router",
        "node-sa",
        "build-sa",
        "node-sa-roles",
        "build-sa-roles",
        "jobs-bucket",
        "builds-bucket",
        "jobs-bucket-iam",
        "builds-bucket-iam",
        "repository",
        "repository-iam",
        "cluster",
        "pool:gpu-l4-1a2b",
        "workload-identity",
        "ksa",
        "lws",
        "nvidia-driver",
        "profile",
    ] {
        assert!(ids(&p).contains(&must.to_owned()), "{must} missing");
    }
    let by = |id: &str| p.actions.iter().find(|a| a.id == id).unwrap();
    assert_eq!(
        by("network").name,
        "projects/my-project/global/networks/kn-kc"
    );
    assert_eq!(
        by("router").name,
        "projects/my-project/regions/us-central1/routers/kn-kc-router"
    );
    assert_eq!(
        by("jobs-bucket").name,
        "projects/_/buckets/my-project-kn-kc-jobs"
    );
    assert_eq!(
        by("repository").name,
        "projects/my-project/locations/us/repositories/kn-kc"
    );
    assert_eq!(
        by("cluster").name,
        "projects/my-project/locations/us-central1-a/clusters/kc"
    );
    assert_eq!(by("cluster").action, ActionKind::Create);
    assert!(by("cluster").depends_on.contains(&StepId::Network));
    assert_eq!(
        by("nvidia-driver").depends_on,
        vec![StepId::pool("gpu-l4-1a2b")]
    );
    assert!(p.warnings.is_empty());
    let cost = p.estimated_hourly_cost.clone().unwrap();
    assert_eq!((cost.at_min, cost.at_max), (0.0, 7.1));
}

#[test]
fn managed_drivers_and_tpus_need_no_installer() {
    let driver = "nvidia-driver".to_owned();
    assert!(!ids(&new_cluster_plan("l4", Some("LATEST"))).contains(&driver));
    assert!(!ids(&new_cluster_plan("v5e-16", None)).contains(&driver));
}

#[test]
fn a_second_up_keeps_the_cluster_and_its_pools_and_ignores_the_accelerator() {
    let n = names();
    let prices = PriceTable::default();
    let pools = vec!["gpu-l4-1a2b".to_string()];
    let p = plan(&UpInput {
        names: &n,
        cluster_exists: true,
        existing_pools: &pools,
        existing_need_driver: false,
        first_pool: None,
        accelerator_requested: true,
        force_destroy: true,
        prices: &prices,
        live: None,
    });
    p.validate().unwrap();
    let by = |id: &str| p.actions.iter().find(|a| a.id == id).unwrap();
    assert_eq!(by("cluster").action, ActionKind::Keep);
    assert_eq!(by("pool:gpu-l4-1a2b").action, ActionKind::Keep);
    assert!(
        p.actions.iter().all(|a| a.action != ActionKind::Create),
        "nothing new: {:?}",
        p.actions
    );
    assert_eq!(p.warnings.len(), 1);
    assert!(p.warnings[0].contains("ignored"));
}

fn second_up(live: Option<&LiveState>) -> Plan {
    let n = names();
    let prices = PriceTable::default();
    let pools = vec!["gpu-l4-1a2b".to_string()];
    plan(&UpInput {
        names: &n,
        cluster_exists: true,
        existing_pools: &pools,
        existing_need_driver: true,
        first_pool: None,
        accelerator_requested: false,
        force_destroy: true,
        prices: &prices,
        live,
    })
}

#[test]
fn a_second_up_keeps_the_apis_and_kubernetes_objects_unless_live_facts_say_they_are_missing() {
    let kind = |p: &Plan, id: &str| p.actions.iter().find(|a| a.id == id).unwrap().action;
    let all_there = second_up(Some(&LiveState::default()));
    for id in ["apis", "ksa", "lws", "nvidia-driver"] {
        assert_eq!(kind(&all_there, id), ActionKind::Keep, "{id}");
    }
    assert_eq!(
        all_there,
        second_up(None),
        "nothing known missing: the same plan"
    );
    let missing = LiveState {
        missing: ["apis", "lws", "nvidia-driver"]
            .map(String::from)
            .into_iter()
            .collect(),
    };
    let p = second_up(Some(&missing));
    p.validate().unwrap();
    let by = |id: &str| p.actions.iter().find(|a| a.id == id).unwrap();
    assert_eq!(by("apis").action, ActionKind::Create);
    assert_eq!(by("apis").reason, APIS_OFF_REASON);
    assert_eq!(by("lws").action, ActionKind::Create);
    assert_eq!(by("nvidia-driver").reason, MISSING_REASON);
    assert_eq!(by("ksa").action, ActionKind::Keep);
}

#[test]
fn a_cpu_cluster_has_no_accelerator_pool() {
    let n = names();
    let prices = PriceTable::default();
    let p = plan(&UpInput {
        names: &n,
        cluster_exists: false,
        existing_pools: &[],
        existing_need_driver: false,
        first_pool: None,
        accelerator_requested: true,
        force_destroy: false,
        prices: &prices,
        live: None,
    });
    p.validate().unwrap();
    assert!(
        !ids(&p)
            .iter()
            .any(|i| i.starts_with("pool:") || i == "nvidia-driver")
    );
    assert!(p.estimated_hourly_cost.is_none());
}

#[test]
fn critical_path_is_the_longest_dependent_chain() {
    let p = new_cluster_plan("l4", None);
    let secs = |a: &Action| match a.resource.type_name() {
        "container.cluster" => 300.0,
        "container.nodePool" => 90.0,
        "compute.network" => 20.0,
        "compute.router" => 10.0,
        "serviceusage.service" => 15.0,
        _ => 1.0,
    };
    // apis 15 -> network 20 -> cluster 300 -> pool 90 -> driver 1 -> profile 1; the
    // router (10) is built while GKE creates the cluster.
    assert_eq!(p.critical_path(secs).unwrap(), 427.0);
}

#[test]
fn broken_graphs_are_refused() {
    let mut p = new_cluster_plan("l4", None);
    p.actions[0].depends_on = vec![StepId::Profile];
    assert!(matches!(p.validate(), Err(PlanError::Cycle(_))));
    let mut p = new_cluster_plan("l4", None);
    p.actions[1].depends_on.push(StepId::pool("nope"));
    assert!(matches!(
        p.validate(),
        Err(PlanError::MissingDependency { .. })
    ));
    let mut p = new_cluster_plan("l4", None);
    let dup = p.actions[0].clone();
    p.actions.push(dup);
    assert!(matches!(p.validate(), Err(PlanError::Duplicate(_))));
}

#[test]
fn actions_serialize_in_the_order_plans_always_had() {
    let p = new_cluster_plan("l4", None);
    for a in &p.actions {
        let text = serde_json::to_string(a).unwrap();
        let value = serde_json::to_value(a).unwrap();
        // Details were written with `json!` (keys sorted): the typed details keep that order.
        let details = serde_json::to_string(&value["details"]).unwrap();
        let head = format!(
            "{{\"id\":\"{}\",\"action\":{},\"type\":\"{}\",\"name\":",
            a.id,
            serde_json::to_string(&a.action).unwrap(),
            a.resource.type_name()
        );
        assert!(text.starts_with(&head), "{text}");
        assert!(text.contains(&format!(",\"details\":{details}")), "{text}");
        let back: Action = serde_json::from_value(value).unwrap();
        assert_eq!(&back, a);
    }
}
