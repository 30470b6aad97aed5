//! The plan of `up`: every resource of Kinetic's "What `up` creates", with the
//! dependencies that let independent ones run in parallel (APIs first; network, service
//! accounts, buckets and repository side by side; the GKE cluster after its network and
//! node identity; then pools, Kubernetes objects and the profile).
//!
//! Invariant: a second `up` plans no new cluster or pool (they are KEPT) and ignores the
//! accelerator with a warning; every other action is an ensure that repairs drift, shown
//! as KEEP unless the live facts say its resource (an API, a Kubernetes object too) is
//! missing.

use serde_json::json;

use crate::domain::accelerators::Kind;
use crate::domain::naming::{APIS, ClusterNames, KSA_NAME, KSA_NAMESPACE};
use crate::domain::pools::PoolShape;
use crate::domain::pricing::PriceTable;

use super::{Action, ActionKind, Cost, Plan};

/// A pool `up` creates (the first accelerator pool), with its generated id.
pub struct NewPool<'a> {
    pub id: &'a str,
    pub shape: &'a PoolShape,
    /// GKE-managed driver version (`DEFAULT`, `LATEST`) or none (installer DaemonSet).
    pub driver_version: Option<&'a str>,
}

/// Project roles of the node service account.
pub const NODE_ROLES: [&str; 3] = [
    "roles/logging.logWriter",
    "roles/monitoring.metricWriter",
    "roles/container.defaultNodeServiceAccount",
];
/// Project roles of the build service account.
pub const BUILD_ROLES: [&str; 2] = [
    "roles/logging.logWriter",
    "roles/secretmanager.secretAccessor",
];

pub struct UpInput<'a> {
    pub names: &'a ClusterNames,
    /// The cluster record already exists (a second `up`).
    pub cluster_exists: bool,
    /// Pools the existing cluster has (kept).
    pub existing_pools: &'a [String],
    /// Some existing pool is a GPU pool without GKE-managed drivers (installer ensured).
    pub existing_need_driver: bool,
    /// The first pool for a new cluster (`None`: `accelerator: "cpu"`).
    pub first_pool: Option<NewPool<'a>>,
    /// The request named an accelerator (ignored for an existing cluster).
    pub accelerator_requested: bool,
    pub force_destroy: bool,
    pub prices: &'a PriceTable,
    /// What exists in the cloud right now, when known (status drift, previews).
    pub live: Option<&'a LiveState>,
}

/// Live facts the plan takes into account: the action ids whose resource is missing
/// (`apis`: some API of [`APIS`] is not enabled). A KEEP stays KEEP unless its resource
/// is known missing: what could not be checked is not assumed gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveState {
    pub missing: std::collections::BTreeSet<String>,
}

/// Why a KEEP turned into a CREATE.
pub const MISSING_REASON: &str = "recorded but missing in the cloud: re-created";
/// Why the APIs are planned again on an existing cluster.
pub const APIS_OFF_REASON: &str = "some APIs are not enabled in the project: enabled again";

fn action(
    id: &str,
    kind: ActionKind,
    ty: &str,
    name: String,
    reason: &str,
    deps: &[&str],
) -> Action {
    Action {
        id: id.to_owned(),
        action: kind,
        resource_type: ty.to_owned(),
        name,
        reason: reason.to_owned(),
        details: serde_json::Value::Null,
        depends_on: deps.iter().map(|d| d.to_string()).collect(),
    }
}

fn with(mut a: Action, details: serde_json::Value) -> Action {
    a.details = details;
    a
}

pub fn plan(input: &UpInput<'_>) -> Plan {
    let n = input.names;
    let p = &n.project;
    // Infrastructure is ensured on every up: created when missing, adopted when ours.
    let (infra, why) = if input.cluster_exists {
        (
            ActionKind::Keep,
            "exists per the records; re-checked and repaired if missing",
        )
    } else {
        (ActionKind::Create, "new cluster")
    };
    let sa = |id: &str| format!("projects/{p}/serviceAccounts/{id}@{p}.iam.gserviceaccount.com");
    let node = format!("serviceAccount:{}", n.node_sa_email());
    let build = format!("serviceAccount:{}", n.build_sa_email());
    let bucket_roles = [
        "roles/storage.objectAdmin",
        "roles/storage.legacyBucketReader",
    ];
    let bucket = |id: &str, name: &str, location: &str, state: bool| {
        let details = if state {
            json!({"location": location, "versioning": true, "uniformBucketLevelAccess": true})
        } else {
            json!({"location": location, "uniformBucketLevelAccess": true, "lifecycleDeleteAgeDays": 30})
        };
        with(
            action(
                id,
                infra,
                "storage.bucket",
                format!("projects/_/buckets/{name}"),
                why,
                &["apis"],
            ),
            details,
        )
    };
    let mut actions = vec![
        with(
            action(
                "apis",
                infra,
                "serviceusage.service",
                format!("projects/{p}/services"),
                if input.cluster_exists {
                    "enabled for the cluster; re-checked and enabled again if not"
                } else {
                    "enabled if not yet (left enabled by down)"
                },
                &[],
            ),
            json!({"services": APIS}),
        ),
        bucket("state-bucket", &n.state_bucket, "US", true),
        action(
            "network",
            infra,
            "compute.network",
            format!("projects/{p}/global/networks/{}", n.network),
            why,
            &["apis"],
        ),
        with(
            action(
                "router",
                infra,
                "compute.router",
                format!("projects/{p}/regions/{}/routers/{}", n.region, n.router),
                why,
                &["network"],
            ),
            json!({"nat": n.nat, "natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}),
        ),
        action(
            "node-sa",
            infra,
            "iam.serviceAccount",
            sa(&n.node_sa_id),
            why,
            &["apis"],
        ),
        action(
            "build-sa",
            infra,
            "iam.serviceAccount",
            sa(&n.build_sa_id),
            why,
            &["apis"],
        ),
        with(
            action(
                "node-sa-roles",
                infra,
                "iam.binding",
                format!("projects/{p}"),
                why,
                &["node-sa"],
            ),
            json!({"member": node, "roles": NODE_ROLES}),
        ),
        with(
            action(
                "build-sa-roles",
                infra,
                "iam.binding",
                format!("projects/{p}"),
                why,
                // After the node account's roles: both rewrite the project's policy,
                // and together they would only collide on its etag.
                &["build-sa", "node-sa-roles"],
            ),
            json!({"member": build, "roles": BUILD_ROLES}),
        ),
        bucket(
            "jobs-bucket",
            &n.jobs_bucket,
            &n.jobs_bucket_location,
            false,
        ),
        bucket(
            "builds-bucket",
            &n.builds_bucket,
            &n.repository_location,
            false,
        ),
        with(
            action(
                "jobs-bucket-iam",
                infra,
                "iam.binding",
                format!("projects/_/buckets/{}", n.jobs_bucket),
                why,
                &["jobs-bucket", "node-sa", "build-sa"],
            ),
            json!({"members": [node, build], "roles": bucket_roles}),
        ),
        with(
            action(
                "builds-bucket-iam",
                infra,
                "iam.binding",
                format!("projects/_/buckets/{}", n.builds_bucket),
                why,
                &["builds-bucket", "node-sa", "build-sa"],
            ),
            json!({"members": [node, build], "roles": bucket_roles}),
        ),
        with(
            action(
                "repository",
                infra,
                "artifactregistry.repository",
                format!(
                    "projects/{p}/locations/{}/repositories/{}",
                    n.repository_location, n.repository
                ),
                why,
                &["apis"],
            ),
            json!({"format": "DOCKER", "dockerHost": n.docker_host()}),
        ),
        with(
            action(
                "repository-iam",
                infra,
                "iam.binding",
                format!(
                    "projects/{p}/locations/{}/repositories/{}",
                    n.repository_location, n.repository
                ),
                why,
                &["repository", "node-sa", "build-sa"],
            ),
            json!({"bindings": [{"member": node, "role": "roles/artifactregistry.reader"}, {"member": build, "role": "roles/artifactregistry.writer"}]}),
        ),
        with(
            action(
                "cluster",
                if input.cluster_exists {
                    ActionKind::Keep
                } else {
                    ActionKind::Create
                },
                "container.cluster",
                n.gke_cluster(),
                if input.cluster_exists {
                    "exists: kept with its pools"
                } else {
                    "new cluster"
                },
                // The NAT only matters once nodes pull images: the router is built
                // while GKE creates the control plane.
                &["network", "node-sa-roles"],
            ),
            json!({"releaseChannel": "STABLE", "workloadPool": n.workload_pool, "privateNodes": true,
                   "masterIpv4CidrBlock": "172.16.0.0/28", "defaultPool": {"machineType": "e2-standard-4", "nodeCount": 1, "diskSizeGb": 50},
                   "forceDestroy": input.force_destroy}),
        ),
        with(
            action(
                "workload-identity",
                infra,
                "iam.binding",
                sa(&n.node_sa_id),
                why,
                &["cluster", "node-sa"],
            ),
            json!({"member": n.ksa_member(), "role": "roles/iam.workloadIdentityUser"}),
        ),
        with(
            action(
                "ksa",
                infra,
                "kubernetes.object",
                format!("serviceaccounts/{KSA_NAMESPACE}/{KSA_NAME}"),
                why,
                &["cluster"],
            ),
            json!({"annotations": {"iam.gke.io/gcp-service-account": n.node_sa_email()}}),
        ),
        action(
            "lws",
            infra,
            "kubernetes.object",
            "deployments/lws-system/lws-controller-manager".into(),
            why,
            &["cluster"],
        ),
    ];
    let mut warnings = Vec::new();
    let mut cost = None;
    let mut pool_ids: Vec<String> = Vec::new();
    for id in input.existing_pools {
        actions.push(action(
            &format!("pool:{id}"),
            ActionKind::Keep,
            "container.nodePool",
            format!("{}/nodePools/{id}", n.gke_cluster()),
            "existing pool: kept as it is",
            &["cluster"],
        ));
        pool_ids.push(format!("pool:{id}"));
    }
    if input.existing_need_driver {
        let mut driver = super::pools::driver_action(&pool_ids);
        if input.cluster_exists {
            driver.action = ActionKind::Keep;
            driver.reason = format!("{}; {why}", driver.reason);
        }
        actions.push(driver);
        pool_ids.push("nvidia-driver".into());
    }
    if input.cluster_exists {
        if input.accelerator_requested {
            warnings.push("accelerator is ignored: the cluster exists and keeps its pools; add pools with POST .../nodePools".into());
        }
    } else if let Some(pool) = &input.first_pool {
        let s = pool.shape;
        let step = format!("pool:{}", pool.id);
        actions.push(with(
            action(&step, ActionKind::Create, "container.nodePool", format!("{}/nodePools/{}", n.gke_cluster(), pool.id), &super::pools::pool_reason(pool.id, "first accelerator pool"), &["cluster"]),
            json!({"accelerator": s.accelerator.canonical(), "machineType": s.accelerator.machine_type,
                   "minNodes": s.min_nodes, "maxNodes": s.max_nodes, "spot": s.spot, "reservation": s.reservation,
                   "maxRunDuration": s.max_run_duration, "placementTopology": s.placement_topology,
                   "driverVersion": pool.driver_version}),
        ));
        if s.accelerator.kind == Kind::Gpu
            && !matches!(pool.driver_version, Some("DEFAULT" | "LATEST"))
            && !input.existing_need_driver
        {
            actions.push(super::pools::driver_action(std::slice::from_ref(&step)));
            pool_ids.push("nvidia-driver".into());
        }
        pool_ids.push(step);
        if let Some(e) = input
            .prices
            .estimate(&s.accelerator, s.min_nodes, s.max_nodes)
        {
            cost = Some(Cost {
                currency: input.prices.currency.clone(),
                at_min: e.at_min,
                at_max: e.at_max,
            });
        }
    }
    let mut profile_deps: Vec<&str> = vec![
        "router",
        "ksa",
        "lws",
        "workload-identity",
        "state-bucket",
        "jobs-bucket-iam",
        "builds-bucket-iam",
        "repository-iam",
        "build-sa-roles",
    ];
    profile_deps.extend(pool_ids.iter().map(String::as_str));
    actions.push(action(
        "profile",
        ActionKind::Update,
        "kineticd.profile",
        format!("profiles/{}", n.cluster),
        "saved and made active for the caller",
        &profile_deps,
    ));
    if let Some(live) = input.live {
        for a in actions.iter_mut() {
            if a.action == ActionKind::Keep && live.missing.contains(&a.id) {
                a.action = ActionKind::Create;
                a.reason = if a.id == "apis" {
                    APIS_OFF_REASON
                } else {
                    MISSING_REASON
                }
                .to_owned();
            }
        }
    }
    Plan {
        actions,
        warnings,
        estimated_hourly_cost: cost,
    }
}

#[cfg(test)]
#[path = "up_tests.rs"]
mod tests;
