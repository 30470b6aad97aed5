//! The in-cluster checks: the LeaderWorkerSet CRD and its controller, the job KSA and
//! its Workload Identity binding, and the NVIDIA driver installer on GPU nodes (or
//! GKE's managed drivers).
//!
//! Invariant: Kubernetes GETs and LISTs only (plus the node service account's
//! `getIamPolicy`), each bounded by the diagnosis deadline; a check whose reads failed
//! or timed out is WARN (not checked), never OK or FAIL.

use crate::cloud::Cloud;
use crate::cloud::kube::manifests::NVIDIA_DRIVER_DAEMONSET;
use crate::cloud::kube::wait::{crd_check, daemonset_check, deployment_check};
use crate::cloud::kube::{KubeError, PoolAccelerator, needs_nvidia_driver_installer};
use crate::domain::resource_names::{KSA_NAME, KSA_NAMESPACE};
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};

use super::{Read, Shared, check, ok, read};

const LWS_CRD: &str = "leaderworkersets.leaderworkerset.x-k8s.io";
const LWS_NAMESPACE: &str = "lws-system";
const LWS_DEPLOYMENT: &str = "lws-controller-manager";
const WI_ANNOTATION: &str = "iam.gke.io/gcp-service-account";
const WI_ROLE: &str = "roles/iam.workloadIdentityUser";
/// Objects named in a message at most.
const LIST_AT_MOST: usize = 5;

pub(super) fn nf(e: &KubeError) -> bool {
    e.is_not_found()
}

/// `a, b, c and 4 more`.
pub(super) fn listed(items: &[String]) -> String {
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
    let k = or_return!(s.kube_or_why(ID));
    let deadline = s.deadline;
    let (crd, dep) = tokio::join!(
        read(deadline, k.get_crd(LWS_CRD), nf),
        read(
            deadline,
            k.get_namespaced("deployment", LWS_NAMESPACE, LWS_DEPLOYMENT),
            nf
        ),
    );
    let crd = match crd {
        Read::Found(c) => c,
        other => return vec![s.unread(ID, "the LWS CRD", &other)],
    };
    let dep = match dep {
        Read::Found(d) => d,
        other => {
            return vec![s.unread(ID, "the LWS controller deployment", &other)];
        }
    };
    let (Some(crd), Some(dep)) = (crd, dep) else {
        let message = format!(
            "LeaderWorkerSet is not installed (CRD {LWS_CRD} or deployment {LWS_NAMESPACE}/{LWS_DEPLOYMENT} missing)"
        );
        return vec![s.not_applied(ID, message, "LWS")];
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
    let k = or_return!(s.kube_or_why(ID));
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
        other => return vec![s.unread(ID, "the job service account", &other)],
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
            return vec![s.unread(ID, &format!("the IAM policy of {email}"), other)];
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
        return vec![s.unread(ID, "the GKE cluster", &s.gke)];
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
    let k = or_return!(s.kube_or_why(ID));
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
        k.get_namespaced("daemonset", "kube-system", NVIDIA_DRIVER_DAEMONSET),
        nf,
    )
    .await;
    let ds = match ds {
        Read::Found(Some(d)) => d,
        Read::Found(None) => {
            let message = format!(
                "GPU pools without GKE-managed drivers need daemonset kube-system/{NVIDIA_DRIVER_DAEMONSET}, which is missing"
            );
            return vec![s.not_applied(ID, message, "installer")];
        }
        other => {
            return vec![s.unread(ID, "the driver installer daemonset", &other)];
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
