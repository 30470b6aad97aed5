//! Wait conditions: a Deployment Available, a DaemonSet scheduled (or ready), a CRD
//! Established, each polled until a deadline, cancellable, with progress messages.
//!
//! Invariant: a wait returns within its deadline (each poll request is itself bounded
//! by it) or promptly after cancellation, reports a progress message only when the
//! observed state changes, and tolerates "not found yet" and retryable errors while
//! polling; a terminal error ends the wait at once.

use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{KubeCluster, KubeError};
use crate::cloud::gcp::RetryClass;

/// What to wait for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitFor {
    /// The Deployment's `Available` condition is True for its current generation.
    DeploymentAvailable { namespace: String, name: String },
    /// Every node that should run the DaemonSet has its pod scheduled
    /// (`desiredNumberScheduled == currentNumberScheduled`, none misscheduled).
    DaemonSetScheduled { namespace: String, name: String },
    /// Scheduled, and every pod ready (`numberReady == desired`, none unavailable).
    DaemonSetReady { namespace: String, name: String },
    /// The CRD's `Established` condition is True.
    CrdEstablished { name: String },
}

impl WaitFor {
    pub fn describe(&self) -> String {
        match self {
            WaitFor::DeploymentAvailable { namespace, name } => {
                format!("deployment {namespace}/{name} available")
            }
            WaitFor::DaemonSetScheduled { namespace, name } => {
                format!("daemonset {namespace}/{name} scheduled")
            }
            WaitFor::DaemonSetReady { namespace, name } => {
                format!("daemonset {namespace}/{name} ready")
            }
            WaitFor::CrdEstablished { name } => format!("CRD {name} established"),
        }
    }
}

/// Deadline and poll interval of a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitOptions {
    pub timeout: Duration,
    pub poll: Duration,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            timeout: Duration::from_secs(600),
            poll: Duration::from_secs(2),
        }
    }
}

/// One observation: whether the condition holds, and the state in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub done: bool,
    pub message: String,
}

fn pending_generation(generation: Option<i64>, observed: Option<i64>) -> Option<Check> {
    let (g, o) = (generation.unwrap_or(0), observed.unwrap_or(0));
    (o < g).then(|| Check {
        done: false,
        message: format!("generation {g} not yet observed (observed {o})"),
    })
}

/// The conditions of an object's `status` (empty when it has no status or no conditions).
pub(crate) fn status_conditions<S, C: Clone>(
    status: Option<&S>,
    conditions: impl FnOnce(&S) -> Option<&Vec<C>>,
) -> Vec<C> {
    status.and_then(conditions).cloned().unwrap_or_default()
}

/// Whether a Deployment is Available for its current generation.
pub fn deployment_check(d: &Deployment) -> Check {
    let status = d.status.clone().unwrap_or_default();
    if let Some(c) = pending_generation(d.metadata.generation, status.observed_generation) {
        return c;
    }
    let want = d.spec.replicas.unwrap_or(1);
    let available = status.available_replicas.unwrap_or(0);
    let cond = status
        .conditions
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_.as_deref() == Some("Available"));
    let done = cond
        .as_ref()
        .is_some_and(|c| c.status.as_deref() == Some("True"));
    let mut message = format!("{available}/{want} replicas available");
    if let Some(c) = cond.filter(|_| !done) {
        let detail = c.message.or(c.reason).unwrap_or_default();
        if !detail.is_empty() {
            message.push_str(&format!(" ({detail})"));
        }
    }
    Check { done, message }
}

/// Whether a DaemonSet's pods are all scheduled (and, with `ready`, all ready).
pub fn daemonset_check(ds: &DaemonSet, ready: bool) -> Check {
    let s = ds.status.clone().unwrap_or_default();
    if let Some(c) = pending_generation(ds.metadata.generation, s.observed_generation) {
        return c;
    }
    let desired = s.desired_number_scheduled;
    let scheduled = s.current_number_scheduled == desired
        && s.number_misscheduled == 0
        && s.updated_number_scheduled.is_none_or(|u| u == desired);
    let all_ready = s.number_ready == desired && s.number_unavailable.unwrap_or(0) == 0;
    Check {
        done: scheduled && (!ready || all_ready),
        message: format!(
            "{}/{desired} scheduled, {}/{desired} ready",
            s.current_number_scheduled, s.number_ready
        ),
    }
}

/// Whether a CRD is Established.
pub fn crd_check(crd: &CustomResourceDefinition) -> Check {
    let conds = status_conditions(crd.status.as_ref(), |s| s.conditions.as_ref());
    let est = conds.iter().find(|c| c.type_ == "Established");
    let done = est.is_some_and(|c| c.status == "True");
    let message = match est {
        Some(_) if done => "established".to_owned(),
        Some(c) => format!(
            "not established ({})",
            c.message.clone().or(c.reason.clone()).unwrap_or_default()
        ),
        None => "not established yet".to_owned(),
    };
    Check { done, message }
}

impl KubeCluster {
    async fn check(&self, what: &WaitFor) -> Result<Check, KubeError> {
        let client = self.client().await?;
        let action = format!("get {}", what.describe());
        let got = match what {
            WaitFor::DeploymentAvailable { namespace, name } => {
                Api::<Deployment>::namespaced(client, namespace)
                    .get(name)
                    .await
                    .map(|d| deployment_check(&d))
            }
            WaitFor::DaemonSetScheduled { namespace, name }
            | WaitFor::DaemonSetReady { namespace, name } => {
                let ready = matches!(what, WaitFor::DaemonSetReady { .. });
                Api::<DaemonSet>::namespaced(client, namespace)
                    .get(name)
                    .await
                    .map(|d| daemonset_check(&d, ready))
            }
            WaitFor::CrdEstablished { name } => Api::<CustomResourceDefinition>::all(client)
                .get(name)
                .await
                .map(|c| crd_check(&c)),
        };
        match got {
            Ok(c) => Ok(c),
            Err(e) => Err(self.fail(action, e).await),
        }
    }

    /// Poll until `what` holds, `opts.timeout` passes, or `cancel` fires. `progress`
    /// receives a message each time the observed state changes.
    pub async fn wait_for(
        &self,
        what: &WaitFor,
        opts: &WaitOptions,
        cancel: &CancellationToken,
        mut progress: impl FnMut(String),
    ) -> Result<(), KubeError> {
        let started = Instant::now();
        let deadline = started + opts.timeout;
        let cancelled = || KubeError::Cancelled {
            what: what.describe(),
        };
        let mut last = String::new();
        loop {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            let observed = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                r = tokio::time::timeout_at(deadline, self.check(what)) => r,
            };
            let message = match observed {
                Ok(Ok(c)) if c.done => {
                    progress(format!("{}: {}", what.describe(), c.message));
                    return Ok(());
                }
                Ok(Ok(c)) => c.message,
                Ok(Err(e)) if e.is_not_found() => "not found yet".to_owned(),
                Ok(Err(e)) if e.retry() == RetryClass::Retryable => format!("{e}"),
                Ok(Err(e)) => return Err(e),
                Err(_elapsed) => "no answer from the API server".to_owned(),
            };
            if message != last {
                progress(format!("{}: {message}", what.describe()));
                last = message;
            }
            let now = Instant::now();
            if now + opts.poll >= deadline {
                // No time for another full poll: wait out the deadline, then give up.
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Err(cancelled()),
                    _ = tokio::time::sleep_until(deadline) => {}
                }
                return Err(KubeError::Deadline {
                    what: what.describe(),
                    waited: Instant::now() - started,
                    last,
                });
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                _ = tokio::time::sleep_until(now + opts.poll) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deployment_conditions() {
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "d", "generation": 2},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": {"observedGeneration": 1, "conditions": [{"type": "Available", "status": "True"}]}
        }))
        .unwrap();
        assert!(!deployment_check(&d).done, "old generation");
        let d: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "d", "generation": 2},
            "spec": {"replicas": 1, "selector": {}, "template": {}},
            "status": {"observedGeneration": 2, "availableReplicas": 1,
                       "conditions": [{"type": "Available", "status": "True"}]}
        }))
        .unwrap();
        assert_eq!(
            deployment_check(&d),
            Check {
                done: true,
                message: "1/1 replicas available".into()
            }
        );
    }

    #[test]
    fn daemonset_states() {
        let ds = |cur: i32, ready: i32| -> DaemonSet {
            serde_json::from_value(json!({
                "metadata": {"name": "x", "generation": 1},
                "status": {"observedGeneration": 1, "desiredNumberScheduled": 2,
                           "currentNumberScheduled": cur, "numberMisscheduled": 0,
                           "numberReady": ready}
            }))
            .unwrap()
        };
        assert!(!daemonset_check(&ds(1, 0), false).done);
        assert!(daemonset_check(&ds(2, 0), false).done);
        assert!(!daemonset_check(&ds(2, 1), true).done);
        assert!(daemonset_check(&ds(2, 2), true).done);
    }
}
