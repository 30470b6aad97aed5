//! The plan of `down`: delete, in dependency order, everything `up` created except the
//! APIs, the state bucket and the profiles. Pools go before the cluster; the router (with
//! its NAT) and the cluster before the network; role bindings before their accounts.
//!
//! Invariant: every action is an "ensure absent": a resource that is already gone (a
//! half-created cluster, a rerun) is a success, so `down` cleans exactly what exists.

use crate::domain::resource_names::ClusterNames;

use super::details::{
    BindingDetails, BucketDelete, BucketDetails, MemberRoles, NoDetails, RouterDetails,
};
use super::resources::cluster_resources;
use super::up::project_roles;
use super::{Account, Action, ActionKind, BucketKind, Plan, Resource, StepId};

pub struct DownInput<'a> {
    pub names: &'a ClusterNames,
    pub pools: &'a [String],
    pub force_destroy: bool,
}

fn delete(
    id: StepId,
    resource: Resource,
    name: Option<String>,
    reason: &str,
    deps: &[StepId],
) -> Action {
    Action::new(
        id,
        ActionKind::Delete,
        resource,
        name.unwrap_or_default(),
        reason,
        deps,
    )
}

pub fn plan(input: &DownInput<'_>) -> Plan {
    let n = input.names;
    let mut actions = buckets_and_repository(n, input.force_destroy);
    let pools: Vec<Action> = input
        .pools
        .iter()
        .map(|id| {
            super::pools::pool_action(n, id, ActionKind::Delete, "deleted before the cluster")
        })
        .collect();
    let pool_steps: Vec<StepId> = pools.iter().map(|a| a.id.clone()).collect();
    actions.extend(pools);
    actions.extend(cluster_and_network(n, &pool_steps));
    actions.extend(service_accounts(n));
    Plan {
        actions,
        warnings: vec![format!(
            "kept: the enabled APIs, the state bucket {} and every profile that points at this cluster (now stale)",
            n.state_bucket
        )],
        estimated_hourly_cost: None,
        ..Plan::default()
    }
}

/// The cluster's buckets and repository: nothing else depends on them.
fn buckets_and_repository(n: &ClusterNames, force_destroy: bool) -> Vec<Action> {
    let r = cluster_resources(n);
    let reason = if force_destroy {
        "emptied, then deleted (forceDestroy)"
    } else {
        "deleted; fails while it holds objects (forceDestroy is false)"
    };
    let bucket = |kind: BucketKind, name: Option<String>| {
        let details = BucketDetails::Delete(BucketDelete { force_destroy });
        delete(
            StepId::Bucket(kind),
            Resource::Bucket(details),
            name,
            reason,
            &[],
        )
    };
    vec![
        bucket(BucketKind::Jobs, r.jobs_bucket),
        bucket(BucketKind::Builds, r.builds_bucket),
        delete(
            StepId::Repository,
            Resource::Repository(None),
            r.artifact_repository,
            "deleted with its images",
            &[],
        ),
    ]
}

/// The GKE cluster after its pools, then the router (with its NAT) and the network.
fn cluster_and_network(n: &ClusterNames, pool_steps: &[StepId]) -> Vec<Action> {
    let r = cluster_resources(n);
    let nat = RouterDetails {
        nat: n.nat.clone(),
        nat_ip_allocate_option: None,
        source_subnetwork_ip_ranges_to_nat: None,
    };
    vec![
        delete(
            StepId::Cluster,
            Resource::Cluster(None),
            r.gke_cluster,
            "deleted after its pools",
            pool_steps,
        ),
        delete(
            StepId::Router,
            Resource::Router(nat),
            r.router,
            "deleted with its Cloud NAT",
            &[StepId::Cluster],
        ),
        delete(
            StepId::Network,
            Resource::Network(NoDetails),
            r.network,
            "deleted once nothing uses it",
            &[StepId::Router, StepId::Cluster],
        ),
    ]
}

/// Role bindings, then the accounts that held them.
fn service_accounts(n: &ClusterNames) -> Vec<Action> {
    let r = cluster_resources(n);
    let roles = |a: Account, email: String, deps: &[StepId]| {
        let details = MemberRoles {
            member: format!("serviceAccount:{email}"),
            roles: project_roles(a).iter().map(|r| r.to_string()).collect(),
        };
        delete(
            StepId::ProjectRoles(a),
            Resource::Binding(BindingDetails::MemberRoles(details)),
            Some(format!("projects/{}", n.project)),
            "project roles revoked",
            deps,
        )
    };
    let account = |a: Account, name: Option<String>, deps: &[StepId]| {
        delete(
            StepId::ServiceAccount(a),
            Resource::ServiceAccount(NoDetails),
            name,
            "deleted (its bindings go with it)",
            deps,
        )
    };
    vec![
        roles(Account::Node, n.node_sa_email(), &[StepId::Cluster]),
        roles(Account::Build, n.build_sa_email(), &[]),
        account(
            Account::Node,
            r.node_service_account,
            &[StepId::ProjectRoles(Account::Node), StepId::Cluster],
        ),
        account(
            Account::Build,
            r.build_service_account,
            &[StepId::ProjectRoles(Account::Build)],
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn down_deletes_in_dependency_order_and_keeps_the_shared_resources() {
        let n = crate::plan::test_names("my-project");
        let pools = vec!["gpu-l4-1a2b".to_owned(), "tpu-v6e-3c4d".to_owned()];
        let p = plan(&DownInput {
            names: &n,
            pools: &pools,
            force_destroy: false,
        });
        p.validate().unwrap();
        let get = |id: &str| p.actions.iter().find(|a| a.id == id).unwrap();
        let ids = |a: &Action| {
            a.depends_on
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
        };
        assert!(p.actions.iter().all(|a| a.action == ActionKind::Delete));
        assert!(
            p.actions
                .iter()
                .all(|a| a.id != "state-bucket" && a.id != "apis")
        );
        assert_eq!(
            ids(get("cluster")),
            ["pool:gpu-l4-1a2b", "pool:tpu-v6e-3c4d"]
        );
        assert!(ids(get("network")).contains(&"router".to_owned()));
        assert!(ids(get("network")).contains(&"cluster".to_owned()));
        assert!(ids(get("node-sa")).contains(&"node-sa-roles".to_owned()));
        assert!(!get("jobs-bucket").resource.force_destroy());
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
