//! The project-level phases of the `up` plan: APIs, buckets, network, service accounts
//! with their roles, and the repository, all ensured on every `up`.
//!
//! Invariant: each phase returns its actions in plan order and depends only on actions
//! of earlier phases (or its own), so the phases concatenated form a DAG.

use super::super::details::{
    BindingDetails, Bindings, BucketDetails, BucketSpec, MemberRole, MemberRoles, MembersRoles,
    NoDetails, RepositoryDetails, RouterDetails, ServicesDetails,
};
use super::super::{Account, Action, BucketKind, ClusterBucket, Resource, StepId};
use super::{APIS, BUILD_SA, NODE_SA, Up, project_roles};

/// Roles of both accounts on the jobs and builds buckets.
const BUCKET_ROLES: [&str; 2] = [
    "roles/storage.objectAdmin",
    "roles/storage.legacyBucketReader",
];

impl Up<'_> {
    pub(super) fn project(&self) -> String {
        format!("projects/{}", self.n.project)
    }

    pub(super) fn member(&self, account: Account) -> String {
        let email = match account {
            Account::Node => self.n.node_sa_email(),
            Account::Build => self.n.build_sa_email(),
        };
        format!("serviceAccount:{email}")
    }

    pub(super) fn bucket(&self, kind: BucketKind) -> Action {
        let n = self.n;
        let (name, spec) = match kind {
            BucketKind::State => (&n.state_bucket, state_bucket_spec()),
            BucketKind::Jobs => (&n.jobs_bucket, cluster_bucket_spec(&n.jobs_bucket_location)),
            BucketKind::Builds => (
                &n.builds_bucket,
                cluster_bucket_spec(&n.builds_bucket_location),
            ),
        };
        self.ensure(
            StepId::Bucket(kind),
            Resource::Bucket(BucketDetails::Ensure(spec)),
            format!("projects/_/buckets/{name}"),
            &[StepId::Apis],
        )
    }

    pub(super) fn apis_and_state_bucket(&self) -> Vec<Action> {
        let services = ServicesDetails {
            services: APIS.map(str::to_owned).to_vec(),
        };
        let reason = if self.input.cluster_exists {
            "enabled for the cluster; re-checked and enabled again if not"
        } else {
            "enabled if not yet (left enabled by down)"
        };
        let apis = Action::new(
            StepId::Apis,
            self.infra,
            Resource::Services(services),
            format!("{}/services", self.project()),
            reason,
            &[],
        );
        vec![apis, self.bucket(BucketKind::State)]
    }

    pub(super) fn network(&self) -> Vec<Action> {
        let (n, p) = (self.n, &self.n.project);
        let nat = RouterDetails {
            nat: n.nat.clone(),
            nat_ip_allocate_option: Some("AUTO_ONLY".into()),
            source_subnetwork_ip_ranges_to_nat: Some("ALL_SUBNETWORKS_ALL_IP_RANGES".into()),
        };
        vec![
            self.ensure(
                StepId::Network,
                Resource::Network(NoDetails),
                format!("projects/{p}/global/networks/{}", n.network),
                &[StepId::Apis],
            ),
            self.ensure(
                StepId::Router,
                Resource::Router(nat),
                format!("projects/{p}/regions/{}/routers/{}", n.region, n.router),
                &[StepId::Network],
            ),
        ]
    }

    pub(super) fn service_account_name(&self, account: Account) -> String {
        let p = &self.n.project;
        let id = match account {
            Account::Node => &self.n.node_sa_id,
            Account::Build => &self.n.build_sa_id,
        };
        format!("projects/{p}/serviceAccounts/{id}@{p}.iam.gserviceaccount.com")
    }

    pub(super) fn service_accounts(&self) -> Vec<Action> {
        let account = |a: Account| {
            self.ensure(
                StepId::ServiceAccount(a),
                Resource::ServiceAccount(NoDetails),
                self.service_account_name(a),
                &[StepId::Apis],
            )
        };
        let roles = |a: Account, deps: &[StepId]| {
            let roles = project_roles(a).iter().map(|r| r.to_string()).collect();
            let member = self.member(a);
            self.ensure(
                StepId::ProjectRoles(a),
                Resource::Binding(BindingDetails::MemberRoles(MemberRoles { member, roles })),
                self.project(),
                deps,
            )
        };
        vec![
            account(Account::Node),
            account(Account::Build),
            roles(Account::Node, &[StepId::ServiceAccount(Account::Node)]),
            // After the node account's roles: both rewrite the project's policy, and
            // together they would only collide on its etag.
            roles(
                Account::Build,
                &[
                    StepId::ServiceAccount(Account::Build),
                    StepId::ProjectRoles(Account::Node),
                ],
            ),
        ]
    }

    pub(super) fn cluster_buckets(&self) -> Vec<Action> {
        let members = [Account::Node, Account::Build]
            .map(|a| self.member(a))
            .to_vec();
        let roles = |b: ClusterBucket| {
            let kind = BucketKind::from(b);
            let details = MembersRoles {
                members: members.clone(),
                roles: BUCKET_ROLES.map(str::to_owned).to_vec(),
            };
            let bucket = match b {
                ClusterBucket::Jobs => &self.n.jobs_bucket,
                ClusterBucket::Builds => &self.n.builds_bucket,
            };
            self.ensure(
                StepId::BucketRoles(b),
                Resource::Binding(BindingDetails::MembersRoles(details)),
                format!("projects/_/buckets/{bucket}"),
                &[StepId::Bucket(kind), NODE_SA, BUILD_SA],
            )
        };
        vec![
            self.bucket(BucketKind::Jobs),
            self.bucket(BucketKind::Builds),
            roles(ClusterBucket::Jobs),
            roles(ClusterBucket::Builds),
        ]
    }

    pub(super) fn repository(&self) -> Vec<Action> {
        let n = self.n;
        let name = format!(
            "projects/{}/locations/{}/repositories/{}",
            n.project, n.repository_location, n.repository
        );
        let details = RepositoryDetails {
            docker_host: n.docker_host(),
            format: "DOCKER".into(),
        };
        let bindings = Bindings {
            bindings: vec![
                MemberRole {
                    member: self.member(Account::Node),
                    role: "roles/artifactregistry.reader".into(),
                },
                MemberRole {
                    member: self.member(Account::Build),
                    role: "roles/artifactregistry.writer".into(),
                },
            ],
        };
        vec![
            self.ensure(
                StepId::Repository,
                Resource::Repository(Some(details)),
                name.clone(),
                &[StepId::Apis],
            ),
            self.ensure(
                StepId::RepositoryRoles,
                Resource::Binding(BindingDetails::Bindings(bindings)),
                name,
                &[StepId::Repository, NODE_SA, BUILD_SA],
            ),
        ]
    }
}

fn state_bucket_spec() -> BucketSpec {
    BucketSpec {
        lifecycle_delete_age_days: None,
        location: "US".into(),
        uniform_bucket_level_access: true,
        versioning: Some(true),
    }
}

fn cluster_bucket_spec(location: &str) -> BucketSpec {
    BucketSpec {
        lifecycle_delete_age_days: Some(30),
        location: location.to_owned(),
        uniform_bucket_level_access: true,
        versioning: None,
    }
}
