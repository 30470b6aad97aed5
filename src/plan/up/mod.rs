//! The plan of `up`: every resource of Kinetic's "What `up` creates", with the
//! dependencies that let independent ones run in parallel (APIs first; network, service
//! accounts, buckets and repository side by side; the GKE cluster after its network and
//! node identity; then pools, Kubernetes objects and the profile).
//!
//! Invariant: a second `up` plans no new cluster or pool (they are KEPT) and ignores the
//! accelerator with a warning; every other action is an ensure that repairs drift, shown
//! as KEEP unless the live facts say its resource (an API, a Kubernetes object too) is
//! missing.

pub mod access;
pub mod adopt;
mod project;

use std::collections::BTreeMap;

use crate::domain::accelerators::Kind;
use crate::domain::pools::PoolShape;
use crate::domain::pricing::PriceTable;
use crate::domain::resource_names::{APIS, ClusterNames, KSA_NAME, KSA_NAMESPACE};

use super::details::{
    BindingDetails, ClusterDetails, DefaultPool, KubeObjectDetails, MemberRole, NoDetails,
    PoolDetails,
};
use super::{Account, Action, ActionKind, BucketKind, ClusterBucket, Cost, Plan, Resource, StepId};

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

/// Why a resource of an existing cluster is KEPT.
pub const KEPT_REASON: &str = "exists per the records; re-checked and repaired if missing";
/// Why a KEEP turned into a CREATE.
pub const MISSING_REASON: &str = "recorded but missing in the cloud: re-created";
/// Why the APIs are planned again on an existing cluster.
pub const APIS_OFF_REASON: &str = "some APIs are not enabled in the project: enabled again";

pub fn plan(input: &UpInput<'_>) -> Plan {
    let up = Up::of(input);
    let mut actions = up.apis_and_state_bucket();
    actions.extend(up.network());
    actions.extend(up.service_accounts());
    actions.extend(up.cluster_buckets());
    actions.extend(up.repository());
    actions.extend(up.cluster());
    let pools = up.pools();
    actions.extend(pools.actions);
    actions.push(up.profile(&pools.steps));
    if let Some(live) = input.live {
        recreate_missing(&mut actions, live);
    }
    Plan {
        actions,
        warnings: pools.warnings,
        estimated_hourly_cost: pools.cost,
        ..Plan::default()
    }
}

/// What every phase of the `up` plan shares: the input, and how infrastructure is
/// planned (ensured on every up: created when missing, adopted when ours).
struct Up<'a> {
    input: &'a UpInput<'a>,
    n: &'a ClusterNames,
    infra: ActionKind,
    why: &'static str,
}

/// The pool phase's part of the plan.
struct Pools {
    actions: Vec<Action>,
    /// Steps the profile waits for: the pools and the driver installer.
    steps: Vec<StepId>,
    warnings: Vec<String>,
    cost: Option<Cost>,
}

impl<'a> Up<'a> {
    fn of(input: &'a UpInput<'a>) -> Up<'a> {
        let (infra, why) = if input.cluster_exists {
            (ActionKind::Keep, KEPT_REASON)
        } else {
            (ActionKind::Create, "new cluster")
        };
        Up {
            input,
            n: input.names,
            infra,
            why,
        }
    }

    /// An infrastructure action (ensured, with the plan-wide kind and reason).
    fn ensure(&self, id: StepId, resource: Resource, name: String, deps: &[StepId]) -> Action {
        Action::new(id, self.infra, resource, name, self.why, deps)
    }

    /// The GKE cluster, and what `up` puts into it besides pools.
    fn cluster(&self) -> Vec<Action> {
        let n = self.n;
        let (kind, reason) = if self.input.cluster_exists {
            (ActionKind::Keep, "exists: kept with its pools")
        } else {
            (ActionKind::Create, "new cluster")
        };
        let details = ClusterDetails {
            default_pool: DefaultPool {
                disk_size_gb: 50,
                machine_type: "e2-standard-4".into(),
                node_count: 1,
            },
            force_destroy: self.input.force_destroy,
            master_ipv4_cidr_block: "172.16.0.0/28".into(),
            private_nodes: true,
            release_channel: "STABLE".into(),
            workload_pool: n.workload_pool.clone(),
        };
        let identity = MemberRole {
            member: n.ksa_member(),
            role: "roles/iam.workloadIdentityUser".into(),
        };
        let annotations = BTreeMap::from([(
            "iam.gke.io/gcp-service-account".to_owned(),
            n.node_sa_email(),
        )]);
        vec![
            Action::new(
                StepId::Cluster,
                kind,
                Resource::Cluster(Some(details)),
                n.gke_cluster(),
                reason,
                // The NAT only matters once nodes pull images: the router is built
                // while GKE creates the control plane.
                &[StepId::Network, StepId::ProjectRoles(Account::Node)],
            ),
            self.ensure(
                StepId::WorkloadIdentity,
                Resource::Binding(BindingDetails::MemberRole(identity)),
                self.service_account_name(Account::Node),
                &[StepId::Cluster, NODE_SA],
            ),
            self.ensure(
                StepId::Ksa,
                Resource::KubernetesObject(Some(KubeObjectDetails {
                    annotations,
                    compute_class: None,
                })),
                format!("serviceaccounts/{KSA_NAMESPACE}/{KSA_NAME}"),
                &[StepId::Cluster],
            ),
            self.ensure(
                StepId::Lws,
                Resource::KubernetesObject(None),
                "deployments/lws-system/lws-controller-manager".into(),
                &[StepId::Cluster],
            ),
        ]
    }

    /// The existing pools (kept), the driver installer they need, and on a new cluster
    /// its first pool with its cost.
    fn pools(&self) -> Pools {
        let input = self.input;
        let mut out = Pools {
            actions: Vec::new(),
            steps: Vec::new(),
            warnings: Vec::new(),
            cost: None,
        };
        for id in input.existing_pools {
            let step = StepId::pool(id);
            out.actions.push(Action::new(
                step.clone(),
                ActionKind::Keep,
                Resource::NodePool(None),
                super::pools::pool_name(self.n, id),
                "existing pool: kept as it is",
                &[StepId::Cluster],
            ));
            out.steps.push(step);
        }
        if input.existing_need_driver {
            let mut driver = super::pools::driver_action(&out.steps);
            if input.cluster_exists {
                driver.action = ActionKind::Keep;
                driver.reason = format!("{}; {}", driver.reason, self.why);
            }
            out.actions.push(driver);
            out.steps.push(StepId::NvidiaDriver);
        }
        if input.cluster_exists {
            if input.accelerator_requested {
                out.warnings.push("accelerator is ignored: the cluster exists and keeps its pools; add pools with POST .../nodePools".into());
            }
        } else if let Some(pool) = &input.first_pool {
            self.first_pool(pool, &mut out);
        }
        out
    }

    fn first_pool(&self, pool: &NewPool<'_>, out: &mut Pools) {
        let s = pool.shape;
        let step = StepId::pool(pool.id);
        let details = PoolDetails {
            accelerator: s.accelerator.canonical(),
            driver_version: pool.driver_version.map(str::to_owned),
            estimated_hourly_cost: None,
            labels: None,
            machine_type: s.accelerator.machine_type.to_owned(),
            max_nodes: i64::from(s.max_nodes),
            max_run_duration: s.max_run_duration.clone(),
            min_nodes: i64::from(s.min_nodes),
            partition_size: None,
            placement_topology: s.placement_topology.map(str::to_owned),
            provisioning: None,
            reservation: s.reservation.clone(),
            sharing: None,
            resized_from: None,
            spot: s.spot,
            taints: None,
            zones: None,
        };
        let mut action = super::pools::pool_action(
            self.n,
            pool.id,
            ActionKind::Create,
            "first accelerator pool",
        );
        action.resource = Resource::NodePool(Some(Box::new(details)));
        action.depends_on = vec![StepId::Cluster];
        out.actions.push(action);
        if s.accelerator.kind == Kind::Gpu
            && !matches!(pool.driver_version, Some("DEFAULT" | "LATEST"))
            && !self.input.existing_need_driver
        {
            out.actions
                .push(super::pools::driver_action(std::slice::from_ref(&step)));
            out.steps.push(StepId::NvidiaDriver);
        }
        out.steps.push(step);
        let prices = self.input.prices;
        out.cost = prices
            .estimate(&s.accelerator, s.min_nodes, s.max_nodes)
            .map(|e| Cost {
                currency: prices.currency.clone(),
                at_min: e.at_min,
                at_max: e.at_max,
            });
    }

    /// The caller's profile, saved once everything else is in place.
    fn profile(&self, pool_steps: &[StepId]) -> Action {
        let mut deps = vec![
            StepId::Router,
            StepId::Ksa,
            StepId::Lws,
            StepId::WorkloadIdentity,
            StepId::Bucket(BucketKind::State),
            StepId::BucketRoles(ClusterBucket::Jobs),
            StepId::BucketRoles(ClusterBucket::Builds),
            StepId::RepositoryRoles,
            StepId::ProjectRoles(Account::Build),
        ];
        deps.extend(pool_steps.iter().cloned());
        Action::new(
            StepId::Profile,
            ActionKind::Update,
            Resource::Profile(NoDetails),
            format!("profiles/{}", self.n.cluster),
            "saved and made active for the caller",
            &deps,
        )
    }
}

const NODE_SA: StepId = StepId::ServiceAccount(Account::Node);
const BUILD_SA: StepId = StepId::ServiceAccount(Account::Build);

/// Project roles of a service account.
pub fn project_roles(account: Account) -> &'static [&'static str] {
    match account {
        Account::Node => &NODE_ROLES,
        Account::Build => &BUILD_ROLES,
    }
}

/// A KEEP whose resource the live facts say is missing becomes a CREATE.
fn recreate_missing(actions: &mut [Action], live: &LiveState) {
    for a in actions.iter_mut() {
        if a.action == ActionKind::Keep && live.missing.contains(&a.id.to_string()) {
            a.action = ActionKind::Create;
            a.reason = if a.id == StepId::Apis {
                APIS_OFF_REASON
            } else {
                MISSING_REASON
            }
            .to_owned();
        }
    }
}

#[cfg(test)]
mod tests;
