//! Access derived from a team's roster: who a roster entry is in Google IAM and in
//! Kubernetes RBAC ([`Member`]), which IAM roles each team role grants on which of a
//! cluster's resources ([`iam_grants`]), and which RBAC bindings it needs
//! ([`rbac_bindings`]).
//!
//! Invariant: the tables here are the whole of what kineticd grants for a roster entry;
//! a role never grants less than a lower role (every team role's grants include the
//! grants of the roles below it), and the names of managed bindings are derived from the
//! member and the role only, so a role change is a new binding and never an edit of an
//! existing binding's (immutable) `roleRef`.

use std::fmt;

use super::names::{Email, NameError};
use super::roles::Role;

/// The label every RBAC object kineticd manages carries (`managed-by: kineticd`), and
/// the selector the sync lists them with; nothing without it is ever changed.
pub const MANAGED_BY_LABEL: &str = "managed-by";
pub const MANAGED_BY_VALUE: &str = "kineticd";
/// The selector of managed objects.
pub const MANAGED_SELECTOR: &str = "managed-by=kineticd";
/// The annotation naming the roster entry a managed binding is for.
pub const MEMBER_ANNOTATION: &str = "kineticd.dev/member";

/// The ClusterRole kineticd adds so `edit` (and `admin`) also cover LeaderWorkerSets:
/// it carries the aggregation labels of both.
pub const LWS_EDIT_ROLE: &str = "kineticd:leaderworkersets-edit";

/// What kind of principal a roster entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemberKind {
    /// A person (IAM `user:`, RBAC `User`).
    User,
    /// A Google group (IAM `group:`, RBAC `Group`): only as `group:ADDRESS`.
    Group,
    /// A service account (IAM `serviceAccount:`, RBAC `User` named by its email).
    ServiceAccount,
}

/// A roster entry as a principal: stored and shown as its address, with `group:` in
/// front for a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Member {
    pub kind: MemberKind,
    pub email: Email,
}

const GROUP_PREFIX: &str = "group:";

/// Domains whose addresses are Google groups (a group must be named as `group:`).
const GROUP_DOMAINS: [&str; 1] = ["googlegroups.com"];

fn refuse(value: &str, rule: &'static str) -> NameError {
    NameError {
        kind: "member",
        value: value.to_owned(),
        rule,
    }
}

impl Member {
    /// Parse a roster entry: `alice@example.com` (a person, or a service account when it
    /// ends in `.gserviceaccount.com`), or `group:ml@example.com` (a Google group).
    /// Any other `kind:` prefix, and a group address without `group:`, is refused with
    /// the form to use.
    pub fn parse(s: &str) -> Result<Member, NameError> {
        let trimmed = s.trim_matches(|c: char| c.is_ascii_whitespace());
        let lower = trimmed.to_ascii_lowercase();
        if let Some(rest) = lower.strip_prefix(GROUP_PREFIX) {
            let email = Email::parse(rest)?;
            return Ok(Member {
                kind: MemberKind::Group,
                email,
            });
        }
        if let Some((prefix, _)) = lower.split_once(':') {
            let rule = match prefix {
                "user" => "is a person's address: give it without the user: prefix",
                "serviceaccount" => {
                    "is a service account: give its address without the serviceAccount: prefix"
                }
                "domain" => {
                    "names a whole domain, which a team roster cannot hold: add the people, or a group:ADDRESS"
                }
                _ => "must be an address (alice@example.com) or group:ADDRESS for a Google group",
            };
            return Err(refuse(trimmed, rule));
        }
        let email = Email::parse(trimmed)?;
        let domain = email.as_str().rsplit('@').next().unwrap_or_default();
        if GROUP_DOMAINS.contains(&domain) {
            return Err(refuse(
                trimmed,
                "is a Google group address: add it as group:ADDRESS (IAM group: member, RBAC Group subject)",
            ));
        }
        let kind = if domain.ends_with(".gserviceaccount.com") {
            MemberKind::ServiceAccount
        } else {
            MemberKind::User
        };
        Ok(Member { kind, email })
    }

    /// A person's address (`None` for groups and service accounts).
    pub fn person(&self) -> Option<&Email> {
        (self.kind == MemberKind::User).then_some(&self.email)
    }

    /// The IAM member: `user:`, `group:` or `serviceAccount:` and the address.
    pub fn iam_member(&self) -> String {
        let prefix = match self.kind {
            MemberKind::User => "user",
            MemberKind::Group => "group",
            MemberKind::ServiceAccount => "serviceAccount",
        };
        format!("{prefix}:{}", self.email.as_str())
    }

    /// The RBAC subject kind: `Group` for groups, `User` otherwise (GKE authenticates a
    /// service account as a user named by its email).
    pub fn rbac_kind(&self) -> &'static str {
        match self.kind {
            MemberKind::Group => "Group",
            MemberKind::User | MemberKind::ServiceAccount => "User",
        }
    }

    /// A short stable id for object names: `g-`/`u-` and 16 hex digits of the address's
    /// SHA-256 (the address itself may be longer than a name allows).
    pub fn name_id(&self) -> String {
        let id = self.email.log_id();
        match self.kind {
            MemberKind::Group => format!("g{}", &id[1..]),
            MemberKind::User | MemberKind::ServiceAccount => id,
        }
    }
}

impl fmt::Display for Member {
    /// As stored in the roster: the address, `group:` in front for a group.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            MemberKind::Group => write!(f, "{GROUP_PREFIX}{}", self.email.as_str()),
            MemberKind::User | MemberKind::ServiceAccount => f.write_str(self.email.as_str()),
        }
    }
}

/// The resources of a cluster a team role grants IAM roles on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GrantOn {
    /// The project (`container.clusterViewer` for `get-credentials`, Cloud Build).
    Project,
    /// `{project}-kinetic-state`.
    StateBucket,
    /// `{project}-kn-{cluster}-jobs`.
    JobsBucket,
    /// `{project}-kn-{cluster}-builds`: build sources are uploaded here.
    BuildsBucket,
    /// The Artifact Registry repository `kn-{cluster}`: whether an image exists.
    Repository,
    /// The builds service account `kn-{cluster}-builds`: Cloud Build runs as it.
    BuildsServiceAccount,
}

impl GrantOn {
    pub const ALL: [GrantOn; 6] = [
        GrantOn::Project,
        GrantOn::StateBucket,
        GrantOn::JobsBucket,
        GrantOn::BuildsBucket,
        GrantOn::Repository,
        GrantOn::BuildsServiceAccount,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GrantOn::Project => "project",
            GrantOn::StateBucket => "stateBucket",
            GrantOn::JobsBucket => "jobsBucket",
            GrantOn::BuildsBucket => "buildsBucket",
            GrantOn::Repository => "repository",
            GrantOn::BuildsServiceAccount => "buildsServiceAccount",
        }
    }
}

/// One IAM grant of the table: on which resource, which role, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IamGrant {
    pub on: GrantOn,
    pub role: &'static str,
    /// What Kinetic's job path needs it for.
    pub why: &'static str,
}

const fn g(on: GrantOn, role: &'static str, why: &'static str) -> IamGrant {
    IamGrant { on, role, why }
}

/// Every team role: read the cluster and its results.
const READ: [IamGrant; 3] = [
    g(
        GrantOn::Project,
        "roles/container.clusterViewer",
        "gcloud container clusters get-credentials; GKE requires container.clusters.get before any Kubernetes call",
    ),
    g(
        GrantOn::StateBucket,
        "roles/storage.objectViewer",
        "list the project's clusters (kinetic's state)",
    ),
    g(
        GrantOn::JobsBucket,
        "roles/storage.objectViewer",
        "read job results and handles",
    ),
];

/// MEMBER and above: submit jobs (`@kinetic.run`), build images, manage state.
const SUBMIT: [IamGrant; 8] = [
    g(
        GrantOn::Project,
        "roles/cloudbuild.builds.editor",
        "build the job's image with Cloud Build (bundled mode, cache miss)",
    ),
    g(
        GrantOn::Project,
        "roles/serviceusage.serviceUsageConsumer",
        "client libraries bill calls to the project when it is the quota project",
    ),
    g(
        GrantOn::StateBucket,
        "roles/storage.objectAdmin",
        "kinetic's state (seed 000: every person sharing a cluster)",
    ),
    g(
        GrantOn::JobsBucket,
        "roles/storage.objectAdmin",
        "upload payloads, read results, delete a job's prefix",
    ),
    g(
        GrantOn::BuildsBucket,
        "roles/storage.objectCreator",
        "upload build sources",
    ),
    g(
        GrantOn::BuildsBucket,
        "roles/storage.objectViewer",
        "Cloud Build reads the source back through the submitter's build",
    ),
    g(
        GrantOn::Repository,
        "roles/artifactregistry.reader",
        "check whether the job's image already exists (without it every job rebuilds)",
    ),
    g(
        GrantOn::BuildsServiceAccount,
        "roles/iam.serviceAccountUser",
        "Cloud Build runs as kn-{cluster}-builds (actAs)",
    ),
];

/// The IAM grants a roster entry with `role` gets on a cluster's resources: read for a
/// VIEWER; read, write and job submission for MEMBER and above.
pub fn iam_grants(role: Role) -> Vec<IamGrant> {
    let mut out = READ.to_vec();
    if role >= Role::Member {
        out.extend(SUBMIT);
    }
    out
}

/// Every IAM role kineticd may grant on `on` (the roles it manages there).
pub fn managed_roles(on: GrantOn) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = READ
        .iter()
        .chain(SUBMIT.iter())
        .filter(|x| x.on == on)
        .map(|x| x.role)
        .collect();
    out.dedup();
    out
}

/// Where a managed RBAC binding applies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BindingScope {
    /// A ClusterRoleBinding.
    Cluster,
    /// A RoleBinding in this namespace.
    Namespace(String),
}

/// One RBAC binding the roster justifies.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RbacBinding {
    pub scope: BindingScope,
    pub name: String,
    /// The ClusterRole it binds (`view`, `edit`, `admin`).
    pub cluster_role: &'static str,
    pub subject_kind: &'static str,
    pub subject_name: String,
    /// The roster entry, as stored.
    pub member: String,
}

/// The namespace Kinetic runs jobs in unless a profile names another (where its `kinetic`
/// Kubernetes service account is).
pub const JOBS_NAMESPACE: &str = "default";

/// The bindings a roster entry with `role` needs: VIEWER `view` cluster-wide; MEMBER
/// `view` cluster-wide and `edit` in each of `namespaces`; ADMIN and OWNER `admin`
/// cluster-wide.
pub fn rbac_bindings(member: &Member, role: Role, namespaces: &[String]) -> Vec<RbacBinding> {
    let binding = |scope: BindingScope, cluster_role: &'static str| RbacBinding {
        name: format!("kineticd:{cluster_role}:{}", member.name_id()),
        scope,
        cluster_role,
        subject_kind: member.rbac_kind(),
        subject_name: member.email.as_str().to_owned(),
        member: member.to_string(),
    };
    match role {
        Role::Viewer => vec![binding(BindingScope::Cluster, "view")],
        Role::Member => {
            let mut out = vec![binding(BindingScope::Cluster, "view")];
            out.extend(
                namespaces
                    .iter()
                    .map(|ns| binding(BindingScope::Namespace(ns.clone()), "edit")),
            );
            out
        }
        Role::Admin | Role::Owner => vec![binding(BindingScope::Cluster, "admin")],
    }
}

/// A team's roster as principals with their roles; entries that do not parse (stored
/// before groups were validated) are listed in `skipped` with why, never guessed at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Roster {
    pub members: Vec<(Member, Role)>,
    pub skipped: Vec<String>,
}

impl Roster {
    /// The roster from its stored `(entry, role)` rows.
    pub fn parse(rows: &[(String, String)]) -> Roster {
        let mut r = Roster {
            members: Vec::with_capacity(rows.len()),
            skipped: Vec::new(),
        };
        for (entry, role) in rows {
            match (Member::parse(entry), Role::parse(role)) {
                (Ok(m), Some(role)) => r.members.push((m, role)),
                (Err(e), _) => r.skipped.push(format!("roster entry {entry:?}: {e}")),
                (_, None) => r
                    .skipped
                    .push(format!("roster entry {entry:?}: unknown role {role:?}")),
            }
        }
        r
    }
}

/// The namespaces MEMBERs get `edit` in: [`JOBS_NAMESPACE`] and every namespace the
/// team's profiles name for the cluster, distinct and ordered.
pub fn binding_namespaces(profile_namespaces: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: std::collections::BTreeSet<String> = profile_namespaces.into_iter().collect();
    out.insert(JOBS_NAMESPACE.to_owned());
    out.into_iter().collect()
}

/// Every RBAC binding `members` justify in a cluster whose MEMBERs edit `namespaces`:
/// what a sync makes, and what a status or a diagnosis expects to find.
pub fn wanted_bindings(members: &[(Member, Role)], namespaces: &[String]) -> Vec<RbacBinding> {
    members
        .iter()
        .flat_map(|(m, role)| rbac_bindings(m, *role, namespaces))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(s: &str) -> Member {
        Member::parse(s).unwrap()
    }

    #[test]
    fn members_parse_by_kind_and_refuse_other_forms() {
        assert_eq!(
            m("Alice@Example.com").iam_member(),
            "user:alice@example.com"
        );
        let grp = m("group:ML@example.com");
        assert_eq!(grp.kind, MemberKind::Group);
        assert_eq!(grp.to_string(), "group:ml@example.com");
        assert_eq!(grp.iam_member(), "group:ml@example.com");
        assert_eq!(grp.rbac_kind(), "Group");
        assert!(grp.person().is_none());
        let sa = m("ci@proj.iam.gserviceaccount.com");
        assert_eq!(
            sa.iam_member(),
            "serviceAccount:ci@proj.iam.gserviceaccount.com"
        );
        assert_eq!(sa.rbac_kind(), "User");
        for bad in [
            "team@googlegroups.com",
            "user:alice@example.com",
            "domain:example.com",
            "serviceAccount:ci@p.iam.gserviceaccount.com",
            "group:not-an-address",
            "weird:alice@example.com",
        ] {
            let e = Member::parse(bad).unwrap_err();
            assert!(!e.rule.is_empty(), "{bad}");
        }
        assert!(
            Member::parse("team@googlegroups.com")
                .unwrap_err()
                .rule
                .contains("group:ADDRESS")
        );
    }

    #[test]
    fn higher_roles_grant_at_least_what_lower_ones_do() {
        let roles = [Role::Viewer, Role::Member, Role::Admin, Role::Owner];
        for w in roles.windows(2) {
            let low = iam_grants(w[0]);
            let high = iam_grants(w[1]);
            assert!(low.iter().all(|x| high.contains(x)), "{:?}", w);
        }
        let viewer = iam_grants(Role::Viewer);
        assert!(viewer.iter().all(|x| !x.role.contains("Admin")));
        let member = iam_grants(Role::Member);
        assert!(
            member.contains(&SUBMIT[2]),
            "objectAdmin on the state bucket"
        );
        assert_eq!(
            managed_roles(GrantOn::BuildsBucket),
            ["roles/storage.objectCreator", "roles/storage.objectViewer"]
        );
    }

    #[test]
    fn binding_names_follow_the_role_so_a_role_change_is_a_new_binding() {
        let alice = m("alice@example.com");
        let ns = vec!["default".to_owned(), "research".to_owned()];
        let viewer = rbac_bindings(&alice, Role::Viewer, &ns);
        let member = rbac_bindings(&alice, Role::Member, &ns);
        let admin = rbac_bindings(&alice, Role::Owner, &ns);
        assert_eq!(viewer.len(), 1);
        assert_eq!(member.len(), 3);
        assert_eq!(member[2].scope, BindingScope::Namespace("research".into()));
        assert_eq!(member[1].cluster_role, "edit");
        assert_eq!(admin[0].cluster_role, "admin");
        assert_ne!(viewer[0].name, admin[0].name);
        assert_eq!(
            viewer[0].name, member[0].name,
            "view stays bound on promotion"
        );
        assert!(viewer[0].name.len() < 64);
        let grp = rbac_bindings(&m("group:ml@example.com"), Role::Viewer, &ns);
        assert_ne!(grp[0].name, viewer[0].name);
        assert_eq!(grp[0].subject_kind, "Group");
    }

    #[test]
    fn a_roster_parses_skips_what_it_cannot_and_wants_every_members_bindings() {
        let rows = [
            ("alice@example.com", "OWNER"),
            ("bob@example.com", "MEMBER"),
            ("team@googlegroups.com", "VIEWER"),
            ("carol@example.com", "CHIEF"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()));
        let r = Roster::parse(&rows);
        assert_eq!(r.members.len(), 2);
        assert_eq!(r.skipped.len(), 2, "{:?}", r.skipped);
        assert!(r.skipped[1].contains("unknown role \"CHIEF\""));
        let ns = binding_namespaces(["research".to_owned(), "default".to_owned()]);
        assert_eq!(ns, ["default", "research"]);
        assert_eq!(binding_namespaces(Vec::new()), [JOBS_NAMESPACE]);
        let want = wanted_bindings(&r.members, &ns);
        // alice: admin; bob: view plus edit in both namespaces.
        assert_eq!(want.len(), 4);
        assert_eq!(want[0].cluster_role, "admin");
        assert_eq!(want[0].member, "alice@example.com");
        assert!(want[1..].iter().all(|b| b.member == "bob@example.com"));
    }
}
