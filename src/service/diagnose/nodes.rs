//! The cluster's health as Kubernetes reports it: nodes NotReady or under memory, disk
//! or PID pressure, pods Pending and the scheduler's reason, and the last hour's
//! Warning events.
//!
//! Invariant: `nodes` and `pending-pods` are pure functions of the shared node and pod
//! lists; `warning-events` LISTs events (`type=Warning`) once, bounded by the deadline.
//! A list that failed or timed out makes its check WARN (not checked).

use std::collections::BTreeMap;

use chrono::Utc;

use crate::cloud::kube::health::NodeHealth;
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};

use super::kube::{listed, nf};
use super::{Read, Shared, check, count, ok, read};

/// How far back Warning events count.
const EVENT_WINDOW_MINUTES: i64 = 60;

pub fn nodes(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "nodes";
    let nodes = or_return!(s.kube_read(ID, "the node list", &s.nodes));
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
    // Some of the nodes are in a state: `{n} of {all} nodes {state}: {which}`.
    let some = |status, which: &[String], state: &str, fix: String| {
        let all = nodes.len();
        let message = format!("{} of {all} nodes {state}: {}", which.len(), listed(which));
        vec![check(ID, status, message, fix)]
    };
    if !not_ready.is_empty() {
        let node = first(&not_ready);
        let fix = format!(
            "kubectl describe node {node} shows the kubelet's reason; GKE auto-repair recreates a node NotReady for long, or delete its VM (gcloud compute instances delete {node} --zone={} --project={}) to replace it",
            s.n.zone, s.n.project
        );
        return some(CheckStatus::Fail, &not_ready, "NotReady", fix);
    }
    if !pressured.is_empty() {
        let fix = format!(
            "kubectl describe node {} and kubectl top pods -A show what fills memory, disk or PIDs; lower those pods' usage or move them",
            first(&pressured)
        );
        return some(CheckStatus::Warn, &pressured, "under pressure", fix);
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
    let pods = or_return!(s.kube_read(ID, "the pod list", &s.pods));
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
    let k = or_return!(s.kube_or_why(ID));
    let deadline = s.deadline;
    let events = match read(deadline, k.warning_events(), nf).await {
        Read::Found(e) => e,
        other => return vec![s.unread(ID, "the event list", &other)],
    };
    let since = Utc::now() - chrono::Duration::minutes(EVENT_WINDOW_MINUTES);
    let mut recent: Vec<_> = events
        .iter()
        .filter(|e| e.last_seen.is_none_or(|t| t >= since))
        .collect();
    // Newest first.
    recent.sort_by_key(|e| std::cmp::Reverse(e.last_seen));
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
