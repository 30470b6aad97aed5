//! The plan of `down`: delete, in dependency order, everything `up` created except the
//! APIs, the state bucket and the profiles. Pools go before the cluster; the router (with
//! its NAT) and the cluster before the network; role bindings before their accounts.
//!
//! Invariant: every action is an "ensure absent": a resource that is already gone (a
//! half-created cluster, a rerun) is a success, so `down` cleans exactly what exists.

use serde_json::json;

use crate::domain::naming::ClusterNames;

use super::resources::cluster_resources;
use super::{Action, ActionKind, Plan};

pub struct DownInput<'a> {
    pub names: &'a ClusterNames,
    pub pools: &'a [String],
    pub force_destroy: bool,
}

fn delete(id: &str, ty: &str, name: Option<String>, reason: &str, deps: &[&str]) -> Action {
    Action {
        id: id.to_owned(),
        action: ActionKind::Delete,
        resource_type: ty.to_owned(),
        name: name.unwrap_or_default(),
        reason: reason.to_owned(),
        details: serde_json::Value::Null,
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
    }
}

pub fn plan(input: &DownInput<'_>) -> Plan {
    let n = input.names;
    let r = cluster_resources(n);
    let p = &n.project;
    let bucket_reason = if input.force_destroy {
        "emptied, then deleted (forceDestroy)"
    } else {
        "deleted; fails while it holds objects (forceDestroy is false)"
    };
    let mut actions = vec![
        with(
            delete(
                "jobs-bucket",
                "storage.bucket",
                r.jobs_bucket,
                bucket_reason,
                &[],
            ),
            json!({"forceDestroy": input.force_destroy}),
        ),
        with(
            delete(
                "builds-bucket",
                "storage.bucket",
                r.builds_bucket,
                bucket_reason,
                &[],
            ),
            json!({"forceDestroy": input.force_destroy}),
        ),
        delete(
            "repository",
            "artifactregistry.repository",
            r.artifact_repository,
            "deleted with its images",
            &[],
        ),
    ];
    let mut pool_ids = Vec::new();
    for id in input.pools {
        let mut a =
            super::pools::pool_action(n, id, ActionKind::Delete, "deleted before the cluster");
        a.depends_on.clear();
        pool_ids.push(a.id.clone());
        actions.push(a);
    }
    let pool_refs: Vec<&str> = pool_ids.iter().map(String::as_str).collect();
    actions.push(delete(
        "cluster",
        "container.cluster",
        r.gke_cluster,
        "deleted after its pools",
        &pool_refs,
    ));
    actions.push(with(
        delete(
            "router",
            "compute.router",
            r.router,
            "deleted with its Cloud NAT",
            &["cluster"],
        ),
        json!({"nat": n.nat}),
    ));
    actions.push(delete(
        "network",
        "compute.network",
        r.network,
        "deleted once nothing uses it",
        &["router", "cluster"],
    ));
    let node = format!("serviceAccount:{}", n.node_sa_email());
    let build = format!("serviceAccount:{}", n.build_sa_email());
    actions.push(with(
        delete(
            "node-sa-roles",
            "iam.binding",
            Some(format!("projects/{p}")),
            "project roles revoked",
            &["cluster"],
        ),
        json!({"member": node, "roles": super::up::NODE_ROLES}),
    ));
    actions.push(with(
        delete(
            "build-sa-roles",
            "iam.binding",
            Some(format!("projects/{p}")),
            "project roles revoked",
            &[],
        ),
        json!({"member": build, "roles": super::up::BUILD_ROLES}),
    ));
    actions.push(delete(
        "node-sa",
        "iam.serviceAccount",
        r.node_service_account,
        "deleted (its bindings go with it)",
        &["node-sa-roles", "cluster"],
    ));
    actions.push(delete(
        "build-sa",
        "iam.serviceAccount",
        r.build_service_account,
        "deleted (its bindings go with it)",
        &["build-sa-roles"],
    ));
    Plan {
        actions,
        warnings: vec![format!(
            "kept: the enabled APIs, the state bucket {} and every profile that points at this cluster (now stale)",
            n.state_bucket
        )],
        estimated_hourly_cost: None,
    }
}

fn with(mut a: Action, details: serde_json::Value) -> Action {
    a.details = details;
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::names::{ClusterName, ProjectId, ZoneName};

    #[test]
    fn down_deletes_in_dependency_order_and_keeps_the_shared_resources() {
        let n = ClusterNames::new(
            &ProjectId::parse("my-project").unwrap(),
            &ZoneName::parse("us-central1-a").unwrap(),
            &ClusterName::parse("kc").unwrap(),
        );
        let pools = vec!["gpu-l4-1a2b".to_owned(), "tpu-v6e-3c4d".to_owned()];
        let p = plan(&DownInput {
            names: &n,
            pools: &pools,
            force_destroy: false,
        });
        p.validate().unwrap();
        let get = |id: &str| p.actions.iter().find(|a| a.id == id).unwrap();
        assert!(p.actions.iter().all(|a| a.action == ActionKind::Delete));
        assert!(
            p.actions
                .iter()
                .all(|a| a.id != "state-bucket" && a.id != "apis")
        );
        assert_eq!(
            get("cluster").depends_on,
            ["pool:gpu-l4-1a2b", "pool:tpu-v6e-3c4d"]
        );
        assert!(get("network").depends_on.contains(&"router".to_owned()));
        assert!(get("network").depends_on.contains(&"cluster".to_owned()));
        assert!(
            get("node-sa")
                .depends_on
                .contains(&"node-sa-roles".to_owned())
        );
        assert_eq!(get("jobs-bucket").details["forceDestroy"], false);
        assert_eq!(
            get("jobs-bucket").name,
            "projects/_/buckets/my-project-kn-kc-jobs"
        );
        // Buckets, repository and pools go first, side by side.
        let unit = p.critical_path(|_| 1.0).unwrap();
        assert_eq!(unit, 4.0, "pool -> cluster -> router -> network");
        assert!(p.warnings[0].contains("my-project-kinetic-state"));
    }
}
