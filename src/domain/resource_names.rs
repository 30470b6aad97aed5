//! Every cloud and Kubernetes name kineticd creates for a cluster (Kinetic's scheme).
//!
//! Invariant: each name satisfies its service's rule (service-account ids 6-30 chars,
//! bucket names <= 63, GKE names <= 40) for every valid project and cluster name; when
//! Kinetic's plain name would be too long, it is shortened deterministically with a hash
//! suffix, so the same cluster always gets the same names.

use super::names::{ClusterName, ProjectId, ZoneName};

fn hash4(s: &str) -> String {
    format!("{:04x}", super::hash::fnv1a(s.bytes()) & 0xffff)
}

/// `{head}{middle}{tail}` cut to `max` characters by shortening `middle` and adding a
/// hash of the full middle, keeping the result's alphabet valid.
fn fit(head: &str, middle: &str, tail: &str, max: usize) -> String {
    let full = format!("{head}{middle}{tail}");
    if full.len() <= max {
        return full;
    }
    let hash = hash4(middle);
    let room = max.saturating_sub(head.len() + tail.len() + hash.len() + 1);
    let cut = middle[..room.min(middle.len())].trim_end_matches('-');
    format!("{head}{cut}-{hash}{tail}")
}

/// Names of everything `up` creates for one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterNames {
    pub project: String,
    pub zone: String,
    pub region: String,
    pub cluster: String,
    pub network: String,
    pub router: String,
    pub nat: String,
    pub node_sa_id: String,
    pub build_sa_id: String,
    pub state_bucket: String,
    pub jobs_bucket: String,
    pub builds_bucket: String,
    pub repository: String,
    /// Artifact Registry location: `us`, `europe`, `asia` or the region.
    pub repository_location: String,
    /// Location of the jobs bucket (the zone's region).
    pub jobs_bucket_location: String,
    /// Location of the builds bucket: the registry's, as Cloud Storage names it (the
    /// multi-region `us`, `eu` or `asia`, or the region).
    pub builds_bucket_location: String,
    pub workload_pool: String,
}

/// APIs `up` enables (left enabled by `down`).
pub const APIS: [&str; 7] = [
    "compute.googleapis.com",
    "cloudbuild.googleapis.com",
    "artifactregistry.googleapis.com",
    "storage.googleapis.com",
    "container.googleapis.com",
    "secretmanager.googleapis.com",
    "iam.googleapis.com",
];

/// The Kubernetes service account jobs run as.
pub const KSA_NAMESPACE: &str = "default";
pub const KSA_NAME: &str = "kinetic";

/// Labels on everything kineticd creates.
pub const LABELS: [(&str, &str); 2] = [("kinetic", "true"), ("goog-packaged-solution", "kinetic")];
/// GKE's own CPU pool, created with every cluster and never recorded.
pub const DEFAULT_POOL: &str = "default-pool";
/// The label that marks a resource as created by kineticd / Kinetic.
pub const OURS: (&str, &str) = LABELS[0];

/// Whether labels mark a resource as kinetic's ([`OURS`]).
pub fn is_ours(labels: &std::collections::BTreeMap<String, String>) -> bool {
    labels.get(OURS.0).map(String::as_str) == Some(OURS.1)
}

/// Artifact Registry location for a region: the multi-region for us/europe/asia.
pub fn repository_location(region: &str) -> String {
    for multi in ["us", "europe", "asia"] {
        if region.starts_with(&format!("{multi}-")) {
            return multi.to_owned();
        }
    }
    region.to_owned()
}

/// Cloud Storage's name for an Artifact Registry location: the registry's multi-region
/// `europe` is the bucket multi-region `eu` (Cloud Storage has `us`, `eu` and `asia`;
/// it refuses `europe`); regions are the same in both.
pub fn bucket_location_for_registry(registry_location: &str) -> String {
    match registry_location {
        "europe" => "eu".to_owned(),
        other => other.to_owned(),
    }
}

impl ClusterNames {
    pub fn new(project: &ProjectId, zone: &ZoneName, cluster: &ClusterName) -> ClusterNames {
        let p = project.as_str();
        let c = cluster.as_str();
        let region = zone.region().to_owned();
        let repository_location = repository_location(&region);
        ClusterNames {
            project: p.to_owned(),
            zone: zone.to_string(),
            cluster: c.to_owned(),
            network: fit("kn-", c, "", 63),
            router: fit("kn-", c, "-router", 63),
            nat: fit("kn-", c, "-nat", 63),
            node_sa_id: fit("kn-", c, "-nodes", 30),
            build_sa_id: fit("kn-", c, "-builds", 30),
            state_bucket: format!("{p}-kinetic-state"),
            jobs_bucket: fit(&format!("{p}-kn-"), c, "-jobs", 63),
            builds_bucket: fit(&format!("{p}-kn-"), c, "-builds", 63),
            repository: fit("kn-", c, "", 63),
            jobs_bucket_location: region.clone(),
            builds_bucket_location: bucket_location_for_registry(&repository_location),
            repository_location,
            region,
            workload_pool: format!("{p}.svc.id.goog"),
        }
    }

    pub fn node_sa_email(&self) -> String {
        format!(
            "{}@{}.iam.gserviceaccount.com",
            self.node_sa_id, self.project
        )
    }

    pub fn build_sa_email(&self) -> String {
        format!(
            "{}@{}.iam.gserviceaccount.com",
            self.build_sa_id, self.project
        )
    }

    /// `projects/{p}/locations/{zone}/clusters/{c}`.
    pub fn gke_cluster(&self) -> String {
        format!(
            "projects/{}/locations/{}/clusters/{}",
            self.project, self.zone, self.cluster
        )
    }

    /// `{loc}-docker.pkg.dev/{project}/{repo}`.
    pub fn docker_host(&self) -> String {
        format!(
            "{}-docker.pkg.dev/{}/{}",
            self.repository_location, self.project, self.repository
        )
    }

    /// The member granted roles/iam.workloadIdentityUser on the node SA.
    pub fn ksa_member(&self) -> String {
        format!(
            "serviceAccount:{}[{KSA_NAMESPACE}/{KSA_NAME}]",
            self.workload_pool
        )
    }
}

/// A node pool id: `{prefix}-{4 hex}` (`gpu-l4-1a2b`), at most 40 characters.
pub fn pool_id(prefix: &str, random: u16) -> String {
    with_suffix(prefix, &format!("{random:04x}"))
}

fn with_suffix(prefix: &str, suffix: &str) -> String {
    let keep = 40 - suffix.len() - 1;
    format!(
        "{}-{suffix}",
        &prefix[..prefix.len().min(keep)].trim_end_matches('-')
    )
}

/// Suffixes standing for ids assigned when a request is applied (a preview without a
/// request id): not hex, so never the id of a real pool.
const ASSIGNED_AT_APPLY: [&str; 2] = ["xxxx", "yyyy"];

/// The stand-in id of the `index`-th new pool of a preview without a request id
/// (`gpu-l4-xxxx`; the second pool of a pair `-yyyy`).
pub fn pool_id_placeholder(prefix: &str, index: usize) -> String {
    with_suffix(
        prefix,
        ASSIGNED_AT_APPLY[index.min(ASSIGNED_AT_APPLY.len() - 1)],
    )
}

/// Whether `id` is a stand-in of [`pool_id_placeholder`].
pub fn is_pool_id_placeholder(id: &str) -> bool {
    ASSIGNED_AT_APPLY
        .iter()
        .any(|s| id.strip_suffix(s).is_some_and(|p| p.ends_with('-')))
}

/// The 4 hex of the `index`-th new pool of the request identified by `seed` (its caller,
/// request id and cluster), `attempt` > 0 after a clash with an existing id: the same
/// request on the same cluster always derives the same ids, so its preview names the
/// pools its apply creates.
pub fn derived_suffix(seed: &str, index: usize, attempt: u32) -> u16 {
    let h = super::hash::fnv1a(format!("{seed}\n{index}\n{attempt}").bytes());
    (h & 0xffff) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &str, z: &str, c: &str) -> ClusterNames {
        ClusterNames::new(
            &ProjectId::parse(p).unwrap(),
            &ZoneName::parse(z).unwrap(),
            &ClusterName::parse(c).unwrap(),
        )
    }

    #[test]
    fn kinetic_names() {
        let n = names("my-project", "us-central1-a", "kinetic-cluster");
        assert_eq!(n.network, "kn-kinetic-cluster");
        assert_eq!(n.router, "kn-kinetic-cluster-router");
        assert_eq!(n.nat, "kn-kinetic-cluster-nat");
        assert_eq!(n.node_sa_id, "kn-kinetic-cluster-nodes");
        assert_eq!(
            n.node_sa_email(),
            "kn-kinetic-cluster-nodes@my-project.iam.gserviceaccount.com"
        );
        assert_eq!(n.build_sa_id, "kn-kinetic-cluster-builds");
        assert_eq!(n.state_bucket, "my-project-kinetic-state");
        assert_eq!(n.jobs_bucket, "my-project-kn-kinetic-cluster-jobs");
        assert_eq!(n.builds_bucket, "my-project-kn-kinetic-cluster-builds");
        assert_eq!(n.repository, "kn-kinetic-cluster");
        assert_eq!(n.repository_location, "us");
        assert_eq!(n.jobs_bucket_location, "us-central1");
        assert_eq!(n.builds_bucket_location, "us");
        assert_eq!(n.region, "us-central1");
        assert_eq!(n.workload_pool, "my-project.svc.id.goog");
        assert_eq!(
            n.ksa_member(),
            "serviceAccount:my-project.svc.id.goog[default/kinetic]"
        );
        assert_eq!(
            n.docker_host(),
            "us-docker.pkg.dev/my-project/kn-kinetic-cluster"
        );
    }

    #[test]
    fn repository_locations() {
        for (zone, location, bucket) in [
            ("europe-west4-b", "europe", "eu"),
            ("asia-east1-a", "asia", "asia"),
            ("us-east4-c", "us", "us"),
            ("me-west1-a", "me-west1", "me-west1"),
            (
                "australia-southeast1-a",
                "australia-southeast1",
                "australia-southeast1",
            ),
        ] {
            let n = names("my-project", zone, "c");
            assert_eq!(n.repository_location, location, "{zone}");
            // Found by the long soak: `EUROPE` is no Cloud Storage location.
            assert_eq!(n.builds_bucket_location, bucket, "{zone}");
        }
    }

    #[test]
    fn long_names_fit_their_rules() {
        let long = "a".repeat(38) + "-z";
        let n = names(&"p".repeat(30), "us-central1-a", &long);
        for sa in [&n.node_sa_id, &n.build_sa_id] {
            assert!((6..=30).contains(&sa.len()), "{sa}");
            assert!(sa.starts_with("kn-") && !sa.contains("--"), "{sa}");
        }
        assert!(n.node_sa_id.ends_with("-nodes"));
        assert_ne!(
            n.node_sa_id,
            names("my-project", "us-central1-a", &("b".repeat(38) + "-z")).node_sa_id
        );
        for b in [&n.jobs_bucket, &n.builds_bucket] {
            assert!(b.len() <= 63, "{b}");
        }
        assert_eq!(
            n,
            names(&"p".repeat(30), "us-central1-a", &long),
            "deterministic"
        );
        assert_eq!(pool_id("gpu-l4", 0x1a2b), "gpu-l4-1a2b");
        assert_eq!(pool_id("tpu-v5litepod", 0xf), "tpu-v5litepod-000f");
        assert!(pool_id(&"x".repeat(60), 1).len() <= 40);
    }

    #[test]
    fn pool_ids_derived_from_a_request_are_stable() {
        let a = derived_suffix("u@x\nreq-1\ncluster", 0, 0);
        assert_eq!(a, derived_suffix("u@x\nreq-1\ncluster", 0, 0));
        assert_ne!(a, derived_suffix("u@x\nreq-2\ncluster", 0, 0));
        assert_ne!(a, derived_suffix("u@x\nreq-1\ncluster", 1, 0));
        assert_ne!(a, derived_suffix("u@x\nreq-1\ncluster", 0, 1));
        let p = pool_id_placeholder("gpu-l4", 0);
        assert_eq!(p, "gpu-l4-xxxx");
        assert_eq!(pool_id_placeholder("gpu-l4", 1), "gpu-l4-yyyy");
        assert!(is_pool_id_placeholder(&p));
        assert!(!is_pool_id_placeholder("gpu-l4-1a2b"));
        assert!(pool_id_placeholder(&"x".repeat(60), 0).len() <= 40);
    }
}
