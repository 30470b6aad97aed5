//! The project-level checks: APIs enabled, the node and build service accounts and
//! their project roles, the buckets (and the cluster buckets' lifecycle), the Artifact
//! Registry repository, the network, and the router's Cloud NAT: what `up` ensures
//! before the GKE cluster, by the names `up` gives them.
//!
//! The `apis` check also tells kineticd's adaptive request rate to the project's APIs
//! (below its ceiling while Google answers 429: WARN).
//!
//! Invariant: reads only (`services.get`, `serviceAccounts.get`,
//! `projects.getIamPolicy`, `buckets.get`, `repositories.get`, `networks.get`,
//! `routers.get`), each bounded by the diagnosis deadline; a read that fails or times
//! out makes its check WARN (not checked), never FAIL.

use std::time::Duration;

use tokio::time::Instant;

use crate::cloud::Cloud;
use crate::cloud::gcp::types::storage::Bucket;
use crate::cloud::rate::ApiRate;
use crate::domain::resource_names::{APIS, ClusterNames};
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};
use crate::plan::Account;
use crate::plan::up::project_roles;

use super::{Read, check, ok, read, unread};

/// Days after which `up`'s lifecycle rule deletes objects of the jobs and builds buckets.
const LIFECYCLE_DAYS: i32 = 30;

struct Ctx<'a> {
    cloud: &'a Cloud,
    n: &'a ClusterNames,
    /// `run up again (PUT /v1/...)`.
    up: String,
    deadline: Instant,
    timeout: Duration,
}

/// Every project-level check, concurrently.
pub async fn checks(
    cloud: &Cloud,
    n: &ClusterNames,
    name: &str,
    deadline: Instant,
    timeout: Duration,
) -> Vec<DiagnosisCheck> {
    let c = Ctx {
        cloud,
        n,
        up: format!("run up again (PUT /v1/{name})"),
        deadline,
        timeout,
    };
    let (apis, accounts, buckets, repository, (network, nat)) = tokio::join!(
        apis(&c),
        service_accounts(&c),
        buckets(&c),
        repository(&c),
        network(&c)
    );
    vec![apis, accounts, buckets, repository, network, nat]
}

async fn apis(c: &Ctx<'_>) -> DiagnosisCheck {
    const ID: &str = "apis";
    let su = &c.cloud.gcp.service_usage;
    let reads = futures::future::join_all(APIS.iter().map(|api| {
        read(c.deadline, su.get_service(&c.n.project, api), |e| {
            e.is_not_found()
        })
    }))
    .await;
    let mut off = Vec::new();
    for (api, r) in APIS.iter().zip(&reads) {
        match r {
            Read::Found(s) if s.is_enabled() => {}
            Read::Found(_) | Read::Absent => off.push(*api),
            other => return unread(ID, &format!("service {api}"), other, c.timeout),
        }
    }
    if off.is_empty() {
        let enabled = format!(
            "all {} APIs up enables are ENABLED in project {}",
            APIS.len(),
            c.n.project
        );
        return rates(
            ID,
            enabled,
            &c.cloud.gcp.http.rates().of_project(&c.n.project),
        );
    }
    check(
        ID,
        CheckStatus::Fail,
        format!(
            "{} of {} APIs are not enabled in project {}: {}",
            off.len(),
            APIS.len(),
            c.n.project,
            off.join(", ")
        ),
        format!(
            "gcloud services enable {} --project={}, or {}",
            off.join(" "),
            c.n.project,
            c.up
        ),
    )
}

/// FAIL: `missing`, of the `of` resources (`what`) `up` creates, do not exist.
fn some_missing(id: &str, missing: &[&str], of: usize, what: &str, fix: String) -> DiagnosisCheck {
    let message = format!(
        "{} of {of} {what} are missing: {}",
        missing.len(),
        missing.join(", ")
    );
    check(id, CheckStatus::Fail, message, fix)
}

async fn service_accounts(c: &Ctx<'_>) -> DiagnosisCheck {
    const ID: &str = "service-accounts";
    let g = &c.cloud.gcp;
    let p = c.n.project.as_str();
    let (node_email, build_email) = (c.n.node_sa_email(), c.n.build_sa_email());
    let nf = |e: &crate::cloud::gcp::GcpError| e.is_not_found();
    let (node, build, policy) = tokio::join!(
        read(c.deadline, g.iam.get_service_account(p, &node_email), nf),
        read(c.deadline, g.iam.get_service_account(p, &build_email), nf),
        read(c.deadline, g.resource_manager.get_iam_policy(p), nf),
    );
    let mut missing = Vec::new();
    for (email, r) in [(&node_email, &node), (&build_email, &build)] {
        match r {
            Read::Found(_) => {}
            Read::Absent => missing.push(email.as_str()),
            other => return unread(ID, &format!("service account {email}"), other, c.timeout),
        }
    }
    if !missing.is_empty() {
        let fix = format!(
            "{}: it re-creates the accounts and grants their roles",
            c.up
        );
        return some_missing(ID, &missing, 2, "service accounts", fix);
    }
    let Read::Found(policy) = &policy else {
        return unread(
            ID,
            &format!("the IAM policy of project {p}"),
            &policy,
            c.timeout,
        );
    };
    let mut lacking: Vec<(String, &str)> = Vec::new();
    let mut wanted = 0;
    for (account, email) in [(Account::Node, &node_email), (Account::Build, &build_email)] {
        let member = format!("serviceAccount:{email}");
        for role in project_roles(account) {
            wanted += 1;
            let held = policy
                .bindings
                .iter()
                .any(|b| b.role == *role && b.condition.is_none() && b.members.contains(&member));
            if !held {
                lacking.push((member.clone(), role));
            }
        }
    }
    if lacking.is_empty() {
        return ok(
            ID,
            format!("{node_email} and {build_email} exist and hold their {wanted} project roles"),
        );
    }
    let listed: Vec<String> = lacking
        .iter()
        .map(|(m, r)| format!("{m} lacks {r}"))
        .collect();
    let commands: Vec<String> = lacking
        .iter()
        .map(|(m, r)| format!("gcloud projects add-iam-policy-binding {p} --member={m} --role={r}"))
        .collect();
    check(
        ID,
        CheckStatus::Fail,
        format!(
            "{} of {wanted} project roles are not granted: {}",
            lacking.len(),
            listed.join("; ")
        ),
        format!("{}, or {}", commands.join("; "), c.up),
    )
}

/// Whether `b` deletes objects after some age (and after how many days).
fn delete_age(b: &Bucket) -> Option<i32> {
    b.lifecycle
        .as_ref()?
        .rule
        .iter()
        .filter(|r| r.action.kind == "Delete")
        .find_map(|r| r.condition.age)
}

async fn buckets(c: &Ctx<'_>) -> DiagnosisCheck {
    const ID: &str = "buckets";
    let st = &c.cloud.gcp.storage;
    let n = c.n;
    let nf = |e: &crate::cloud::gcp::GcpError| e.is_not_found();
    let (state, jobs, builds) = tokio::join!(
        read(c.deadline, st.get_bucket(&n.state_bucket), nf),
        read(c.deadline, st.get_bucket(&n.jobs_bucket), nf),
        read(c.deadline, st.get_bucket(&n.builds_bucket), nf),
    );
    let all = [
        (&n.state_bucket, &state, false),
        (&n.jobs_bucket, &jobs, true),
        (&n.builds_bucket, &builds, true),
    ];
    let mut missing = Vec::new();
    let mut no_lifecycle = Vec::new();
    for (name, r, lifecycle) in all {
        match r {
            Read::Found(b) => {
                if lifecycle && delete_age(b).is_none() {
                    no_lifecycle.push(name.as_str());
                }
            }
            Read::Absent => missing.push(name.as_str()),
            other => return unread(ID, &format!("bucket gs://{name}"), other, c.timeout),
        }
    }
    if !missing.is_empty() {
        let fix = format!("{}: it re-creates the buckets", c.up);
        return some_missing(ID, &missing, 3, "buckets", fix);
    }
    if !no_lifecycle.is_empty() {
        let cmds: Vec<String> = no_lifecycle
            .iter()
            .map(|b| {
                format!("gcloud storage buckets update gs://{b} --lifecycle-file=lifecycle.json")
            })
            .collect();
        return check(
            ID,
            CheckStatus::Warn,
            format!(
                "{} has no lifecycle rule deleting objects: job and build files pile up",
                no_lifecycle.join(", ")
            ),
            format!(
                "write lifecycle.json = {{\"rule\":[{{\"action\":{{\"type\":\"Delete\"}},\"condition\":{{\"age\":{LIFECYCLE_DAYS}}}}}]}}, then {}",
                cmds.join("; ")
            ),
        );
    }
    let mut ages: Vec<String> = [&jobs, &builds]
        .iter()
        .filter_map(|r| r.found().and_then(delete_age))
        .map(|d| format!("{d} days"))
        .collect();
    ages.dedup();
    ok(
        ID,
        format!(
            "gs://{}, gs://{} and gs://{} exist; jobs and builds objects are deleted after {}",
            n.state_bucket,
            n.jobs_bucket,
            n.builds_bucket,
            ages.join(" and ")
        ),
    )
}

async fn repository(c: &Ctx<'_>) -> DiagnosisCheck {
    const ID: &str = "repository";
    let n = c.n;
    let r = read(
        c.deadline,
        c.cloud.gcp.artifact_registry.get_repository(
            &n.project,
            &n.repository_location,
            &n.repository,
        ),
        |e| e.is_not_found(),
    )
    .await;
    match &r {
        Read::Found(repo) if repo.format.is_empty() || repo.format == "DOCKER" => {
            ok(ID, format!("Docker repository {} exists", n.docker_host()))
        }
        Read::Found(repo) => check(
            ID,
            CheckStatus::Fail,
            format!(
                "repository {} is a {} repository, not DOCKER: images cannot be pushed",
                repo.name, repo.format
            ),
            format!(
                "delete it (gcloud artifacts repositories delete {} --location={} --project={}), then {}",
                n.repository, n.repository_location, n.project, c.up
            ),
        ),
        Read::Absent => check(
            ID,
            CheckStatus::Fail,
            format!(
                "Artifact Registry repository {} is missing",
                n.docker_host()
            ),
            format!(
                "{}, or gcloud artifacts repositories create {} --repository-format=docker --location={} --project={}",
                c.up, n.repository, n.repository_location, n.project
            ),
        ),
        other => unread(
            ID,
            &format!("repository {}", n.repository),
            other,
            c.timeout,
        ),
    }
}

/// The `network` check (network and router) and the `nat` check.
async fn network(c: &Ctx<'_>) -> (DiagnosisCheck, DiagnosisCheck) {
    let n = c.n;
    let compute = &c.cloud.gcp.compute;
    let nf = |e: &crate::cloud::gcp::GcpError| e.is_not_found();
    let (net, router) = tokio::join!(
        read(c.deadline, compute.get_network(&n.project, &n.network), nf),
        read(
            c.deadline,
            compute.get_router(&n.project, &n.region, &n.router),
            nf
        ),
    );
    let recreate = format!("{}: it re-creates them", c.up);
    let network = match (&net, &router) {
        (Read::Found(_), Read::Found(_)) => ok(
            "network",
            format!(
                "network {} and router {} in {} exist",
                n.network, n.router, n.region
            ),
        ),
        (Read::Absent, _) | (_, Read::Absent) => {
            let mut missing = Vec::new();
            if matches!(net, Read::Absent) {
                missing.push(format!("network {}", n.network));
            }
            if matches!(router, Read::Absent) {
                missing.push(format!("router {}", n.router));
            }
            check(
                "network",
                CheckStatus::Fail,
                format!("missing: {}", missing.join(", ")),
                recreate.clone(),
            )
        }
        (Read::Found(_), other) => {
            unread("network", &format!("router {}", n.router), other, c.timeout)
        }
        (other, _) => unread(
            "network",
            &format!("network {}", n.network),
            other,
            c.timeout,
        ),
    };
    let nat = match &router {
        Read::Found(r) if r.nats.iter().any(|x| x.name == n.nat) => ok(
            "nat",
            format!(
                "router {} carries Cloud NAT {}: private nodes reach the internet",
                n.router, n.nat
            ),
        ),
        Read::Found(r) => check(
            "nat",
            CheckStatus::Fail,
            format!(
                "router {} has no Cloud NAT {} ({} NATs): private nodes cannot pull images or reach the internet",
                n.router,
                n.nat,
                r.nats.len()
            ),
            format!(
                "{}, which re-creates the NAT, or gcloud compute routers nats create {} --router={} --region={} --project={} --auto-allocate-nat-external-ips --nat-all-subnet-ip-ranges",
                c.up, n.nat, n.router, n.region, n.project
            ),
        ),
        Read::Absent => check(
            "nat",
            CheckStatus::Fail,
            format!(
                "router {} is missing, so is its Cloud NAT {}",
                n.router, n.nat
            ),
            recreate,
        ),
        other => unread("nat", &format!("router {}", n.router), other, c.timeout),
    };
    (network, nat)
}

/// The `apis` check of enabled APIs, with kineticd's adaptive request rate to each: OK
/// at the ceiling, WARN while Google's 429s hold one below it.
fn rates(id: &str, enabled: String, rates: &[ApiRate]) -> DiagnosisCheck {
    let slowed: Vec<String> = rates
        .iter()
        .filter(|r| r.rate < r.ceiling)
        .map(|r| format!("{} {:.1}", r.api, r.rate))
        .collect();
    let ceiling = rates
        .first()
        .map_or(String::new(), |r| format!("{}", r.ceiling));
    if slowed.is_empty() {
        let at = if ceiling.is_empty() {
            "no request sent yet".to_owned()
        } else {
            format!("at most {ceiling} requests/s per API, no 429 to slow it")
        };
        return ok(id, format!("{enabled}; kineticd's request rate: {at}"));
    }
    check(
        id,
        CheckStatus::Warn,
        format!(
            "{enabled}; Google answered 429 (rate limit), so kineticd sends less: {} \
             requests/s (ceiling {ceiling}), climbing back as calls succeed",
            slowed.join(", ")
        ),
        "nothing to do if it passes; if it lasts, raise the project's API request quota \
         (Cloud console, IAM & Admin > Quotas) or spread the work over time"
            .into(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(api: &'static str, rate: f64) -> ApiRate {
        ApiRate {
            api,
            rate,
            ceiling: 100.0,
        }
    }

    #[test]
    fn the_apis_check_tells_the_adaptive_rate() {
        let c = rates("apis", "all on".into(), &[]);
        assert_eq!(c.status, CheckStatus::Ok);
        assert!(c.message.ends_with("no request sent yet"), "{}", c.message);
        let c = rates("apis", "all on".into(), &[rate("compute", 100.0)]);
        assert_eq!(c.status, CheckStatus::Ok);
        assert!(
            c.message.contains("at most 100 requests/s per API"),
            "{}",
            c.message
        );
        let c = rates(
            "apis",
            "all on".into(),
            &[rate("compute", 35.3), rate("container", 100.0)],
        );
        assert_eq!(c.status, CheckStatus::Warn);
        assert!(
            c.message.contains("compute 35.3 requests/s (ceiling 100)"),
            "{}",
            c.message
        );
        assert!(!c.message.contains("container"), "{}", c.message);
        assert!(!c.fix.is_empty());
    }
}
