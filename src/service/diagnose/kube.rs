//! The in-cluster checks: the LeaderWorkerSet CRD and its controller, the job KSA and
//! its Workload Identity binding, the NVIDIA driver installer on GPU nodes (or GKE's
//! managed drivers), nodes NotReady or under pressure, pods Pending and why, and the
//! last hour's Warning events.
//!
//! Invariant: Kubernetes GETs and LISTs only (plus the node service account's
//! `getIamPolicy`), each bounded by the diagnosis deadline; a check whose reads failed
//! or timed out is WARN (not checked), never OK or FAIL.

use std::collections::BTreeMap;

use crate::cloud::Cloud;
use crate::cloud::kube::health::NodeHealth;
use crate::cloud::kube::manifests::NVIDIA_DRIVER_DAEMONSET;
use crate::cloud::kube::wait::{crd_check, daemonset_check, deployment_check};
use crate::cloud::kube::{KubeError, PoolAccelerator, needs_nvidia_driver_installer};
use crate::domain::naming::{KSA_NAME, KSA_NAMESPACE};
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};
use chrono::Utc;

use super::{Read, Shared, check, count, ok, read, unread};

const LWS_CRD: &str = "leaderworkersets.leaderworkerset.x-k8s.io";
const LWS_NAMESPACE: &str = "lws-system";
const LWS_DEPLOYMENT: &str = "lws-controller-manager";
const WI_ANNOTATION: &str = "iam.gke.io/gcp-service-account";
const WI_ROLE: &str = "roles/iam.workloadIdentityUser";
/// How far back Warning events count.
const EVENT_WINDOW_MINUTES: i64 = 60;
/// Objects named in a message at most.
const LIST_AT_MOST: usize = 5;

fn nf(e: &KubeError) -> bool {
    e.is_not_found()
}

/// `a, b, c and 4 more`.
fn listed(items: &[String]) -> String {
    let mut s = items
        .iter()
        .take(LIST_AT_MOST)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > LIST_AT_MOST {
        s.push_str(&format!(" and {} more", items.len() - LIST_AT_MOST));
    }
    s
}

pub async fn lws(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "lws";
    let k = match s.kube_or_why(ID) {
        Ok(k) => k,
        Err(c) => return vec![c],
    };
    let deadline = s.deadline;
    let (crd, dep) = tokio::join!(
        read(deadline, k.get_crd(LWS_CRD), nf),
        read(
            deadline,
            k.get_deployment(LWS_NAMESPACE, LWS_DEPLOYMENT),
            nf
        ),
    );
    let crd = match crd {
        Read::Found(c) => c,
        other => return vec![unread(ID, "the LWS CRD", &other, s.timeout)],
    };
    let dep = match dep {
        Read::Found(d) => d,
        other => {
            return vec![unread(
                ID,
                "the LWS controller deployment",
                &other,
                s.timeout,
            )];
        }
    };
    let (Some(crd), Some(dep)) = (crd, dep) else {
        return vec![check(
            ID,
            CheckStatus::Fail,
            format!(
                "LeaderWorkerSet is not installed (CRD {LWS_CRD} or deployment {LWS_NAMESPACE}/{LWS_DEPLOYMENT} missing)"
            ),
            format!("{}: it applies the pinned LWS manifest", s.up()),
        )];
    };
    let (c, d) = (crd_check(&crd), deployment_check(&dep));
    let message = format!(
        "CRD {LWS_CRD} {}; deployment {LWS_NAMESPACE}/{LWS_DEPLOYMENT} {}",
        c.message, d.message
    );
    if c.done && d.done {
        return vec![ok(ID, message)];
    }
    vec![check(
        ID,
        CheckStatus::Fail,
        message,
        format!(
            "kubectl -n {LWS_NAMESPACE} describe deployment {LWS_DEPLOYMENT} and kubectl -n {LWS_NAMESPACE} get pods show why; {} re-applies the manifest",
            s.up()
        ),
    )]
}

pub async fn workload_identity(cloud: &Cloud, s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "workload-identity";
    let k = match s.kube_or_why(ID) {
        Ok(k) => k,
        Err(c) => return vec![c],
    };
    let deadline = s.deadline;
    let email = s.n.node_sa_email();
    let member = s.n.ksa_member();
    let (ksa, policy) = tokio::join!(
        read(deadline, k.get_service_account(KSA_NAMESPACE, KSA_NAME), nf),
        read(
            deadline,
            cloud
                .gcp
                .iam
                .get_service_account_iam_policy(&s.n.project, &email),
            |e| e.is_not_found()
        ),
    );
    let ksa = match ksa {
        Read::Found(Some(a)) => a,
        Read::Found(None) => {
            return vec![check(
                ID,
                CheckStatus::Fail,
                format!("the job service account {KSA_NAMESPACE}/{KSA_NAME} is missing"),
                format!("{}: it re-creates it with its annotation", s.up()),
            )];
        }
        other => return vec![unread(ID, "the job service account", &other, s.timeout)],
    };
    let annotated = ksa
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(WI_ANNOTATION))
        .cloned();
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    if annotated.as_deref() != Some(email.as_str()) {
        problems.push(format!(
            "{KSA_NAMESPACE}/{KSA_NAME} is annotated {WI_ANNOTATION}={}, not {email}",
            annotated.as_deref().unwrap_or("(none)")
        ));
        fixes.push(format!(
            "kubectl -n {KSA_NAMESPACE} annotate serviceaccount {KSA_NAME} {WI_ANNOTATION}={email} --overwrite"
        ));
    }
    match &policy {
        Read::Found(p) => {
            let bound = p
                .bindings
                .iter()
                .any(|b| b.role == WI_ROLE && b.members.contains(&member));
            if !bound {
                problems.push(format!("{member} lacks {WI_ROLE} on {email}"));
                fixes.push(format!(
                    "gcloud iam service-accounts add-iam-policy-binding {email} --role={WI_ROLE} --member=\"{member}\" --project={}",
                    s.n.project
                ));
            }
        }
        Read::Absent => {
            problems.push(format!("the node service account {email} is missing"));
            fixes.push(s.up());
        }
        other => {
            return vec![unread(
                ID,
                &format!("the IAM policy of {email}"),
                other,
                s.timeout,
            )];
        }
    }
    if problems.is_empty() {
        return vec![ok(
            ID,
            format!(
                "{KSA_NAMESPACE}/{KSA_NAME} acts as {email} ({WI_ANNOTATION} set, {member} holds {WI_ROLE})"
            ),
        )];
    }
    fixes.push(format!("or {}", s.up()));
    vec![check(
        ID,
        CheckStatus::Fail,
        problems.join("; "),
        fixes.join("; "),
    )]
}

pub async fn nvidia_driver(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "nvidia-driver";
    let Some(c) = s.gke.found() else {
        return vec![unread(ID, "the GKE cluster", &s.gke, s.timeout)];
    };
    let accs: Vec<(String, PoolAccelerator)> = c
        .node_pools
        .iter()
        .flat_map(|p| {
            p.config.iter().flat_map(|cfg| &cfg.accelerators).map(|a| {
                (
                    p.name.clone(),
                    PoolAccelerator {
                        accelerator_type: a.accelerator_type.clone(),
                        gpu_driver_version: a
                            .gpu_driver_installation_config
                            .as_ref()
                            .map(|g| g.gpu_driver_version.clone()),
                    },
                )
            })
        })
        .filter(|(_, a)| a.accelerator_type.starts_with("nvidia-"))
        .collect();
    if accs.is_empty() {
        return vec![ok(ID, "no GPU node pools: no NVIDIA driver needed".into())];
    }
    let plain: Vec<PoolAccelerator> = accs.iter().map(|(_, a)| a.clone()).collect();
    if !needs_nvidia_driver_installer(&plain) {
        let pools: Vec<String> = accs.iter().map(|(p, _)| p.clone()).collect();
        return vec![ok(
            ID,
            format!(
                "GKE installs the NVIDIA driver on every GPU pool (gpuDriverVersion set): {}",
                listed(&pools)
            ),
        )];
    }
    let k = match s.kube_or_why(ID) {
        Ok(k) => k,
        Err(c) => return vec![c],
    };
    let gpu_nodes = match &s.nodes {
        Read::Found(n) => n
            .iter()
            .filter(|n| {
                n.info.gpus > 0
                    || n.info
                        .labels
                        .contains_key("cloud.google.com/gke-accelerator")
            })
            .count(),
        _ => 0,
    };
    let deadline = s.deadline;
    let ds = read(
        deadline,
        k.get_daemonset("kube-system", NVIDIA_DRIVER_DAEMONSET),
        nf,
    )
    .await;
    let ds = match ds {
        Read::Found(Some(d)) => d,
        Read::Found(None) => {
            return vec![check(
                ID,
                CheckStatus::Fail,
                format!(
                    "GPU pools without GKE-managed drivers need daemonset kube-system/{NVIDIA_DRIVER_DAEMONSET}, which is missing"
                ),
                format!("{}: it applies the pinned installer manifest", s.up()),
            )];
        }
        other => {
            return vec![unread(
                ID,
                "the driver installer daemonset",
                &other,
                s.timeout,
            )];
        }
    };
    let r = daemonset_check(&ds, true);
    let message = format!(
        "daemonset kube-system/{NVIDIA_DRIVER_DAEMONSET}: {} ({gpu_nodes} GPU nodes)",
        r.message
    );
    if r.done {
        return vec![ok(ID, message)];
    }
    vec![check(
        ID,
        CheckStatus::Fail,
        format!("{message}: GPU pods cannot start until the driver is installed"),
        format!(
            "kubectl -n kube-system rollout status daemonset/{NVIDIA_DRIVER_DAEMONSET}; kubectl -n kube-system logs -l k8s-app={NVIDIA_DRIVER_DAEMONSET} -c {NVIDIA_DRIVER_DAEMONSET}; {} re-applies it",
            s.up()
        ),
    )]
}

pub fn nodes(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "nodes";
    if let Err(c) = s.kube_or_why(ID) {
        return vec![c];
    }
    let Read::Found(nodes) = &s.nodes else {
        return vec![unread(ID, "the node list", &s.nodes, s.timeout)];
    };
    let not_ready: Vec<String> = nodes
        .iter()
        .filter_map(|n: &NodeHealth| {
            n.not_ready.as_ref().map(|why| {
                format!(
                    "{} ({}) {why}",
                    n.info.name,
                    n.info.pool.as_deref().unwrap_or("no pool")
                )
            })
        })
        .collect();
    let pressured: Vec<String> = nodes
        .iter()
        .filter(|n| !n.pressures.is_empty())
        .map(|n| format!("{} {}", n.info.name, n.pressures.join("+")))
        .collect();
    let first = |v: &[String]| {
        v.first()
            .and_then(|x| x.split(' ').next())
            .unwrap_or("NODE")
            .to_owned()
    };
    if !not_ready.is_empty() {
        return vec![check(
            ID,
            CheckStatus::Fail,
            format!(
                "{} of {} nodes NotReady: {}",
                not_ready.len(),
                nodes.len(),
                listed(&not_ready)
            ),
            format!(
                "kubectl describe node {} shows the kubelet's reason; GKE auto-repair recreates a node NotReady for long, or delete its VM (gcloud compute instances delete {} --zone={} --project={}) to replace it",
                first(&not_ready),
                first(&not_ready),
                s.n.zone,
                s.n.project
            ),
        )];
    }
    if !pressured.is_empty() {
        return vec![check(
            ID,
            CheckStatus::Warn,
            format!(
                "{} of {} nodes under pressure: {}",
                pressured.len(),
                nodes.len(),
                listed(&pressured)
            ),
            format!(
                "kubectl describe node {} and kubectl top pods -A show what fills memory, disk or PIDs; lower those pods' usage or move them",
                first(&pressured)
            ),
        )];
    }
    vec![ok(
        ID,
        format!(
            "{} nodes, all Ready, none under memory, disk or PID pressure",
            nodes.len()
        ),
    )]
}

pub fn pending_pods(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "pending-pods";
    if let Err(c) = s.kube_or_why(ID) {
        return vec![c];
    }
    let Read::Found(pods) = &s.pods else {
        return vec![unread(ID, "the pod list", &s.pods, s.timeout)];
    };
    let pending: Vec<String> = pods
        .iter()
        .filter(|p| p.is_pending())
        .map(|p| {
            format!(
                "{}/{}: {}",
                p.namespace,
                p.name,
                p.unschedulable.as_deref().unwrap_or("not scheduled yet")
            )
        })
        .collect();
    if pending.is_empty() {
        return vec![ok(
            ID,
            format!("no pod Pending ({})", count(pods.len(), "pod", "pods")),
        )];
    }
    vec![check(
        ID,
        CheckStatus::Warn,
        format!(
            "{} of {} pods Pending: {}",
            pending.len(),
            pods.len(),
            listed(&pending)
        ),
        format!(
            "GET /v1/{}/capacity says why accelerator pods wait; POST /v1/{}:checkWorkload with the workload says what to change; kubectl describe pod shows the scheduler's events",
            s.name, s.name
        ),
    )]
}

pub async fn warning_events(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "warning-events";
    let k = match s.kube_or_why(ID) {
        Ok(k) => k,
        Err(c) => return vec![c],
    };
    let deadline = s.deadline;
    let events = match read(deadline, k.warning_events(), nf).await {
        Read::Found(e) => e,
        other => return vec![unread(ID, "the event list", &other, s.timeout)],
    };
    let since = Utc::now() - chrono::Duration::minutes(EVENT_WINDOW_MINUTES);
    let recent: Vec<_> = events
        .iter()
        .filter(|e| e.last_seen.is_none_or(|t| t >= since))
        .collect();
    if recent.is_empty() {
        return vec![ok(
            ID,
            format!("no Warning event in the last {EVENT_WINDOW_MINUTES} minutes"),
        )];
    }
    let mut by_reason: BTreeMap<&str, i64> = BTreeMap::new();
    for e in &recent {
        *by_reason.entry(e.reason.as_str()).or_default() += i64::from(e.count.max(1));
    }
    let reasons: Vec<String> = by_reason.iter().map(|(r, n)| format!("{r} x{n}")).collect();
    let latest: Vec<String> = recent
        .iter()
        .map(|e| format!("{}/{} {}: {}", e.namespace, e.object, e.reason, e.message))
        .collect();
    vec![check(
        ID,
        CheckStatus::Warn,
        format!(
            "{} Warning events in the last {EVENT_WINDOW_MINUTES} minutes ({}): {}",
            recent.len(),
            reasons.join(", "),
            listed(&latest)
        ),
        "kubectl get events -A --field-selector type=Warning --sort-by=.lastTimestamp".into(),
    )]
}
