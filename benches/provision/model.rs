//! The simulator's model of how long each `up` action takes (virtual time), read from the
//! simulator's own constants so that the benchmark follows any change to them.

use std::time::Duration;

use kineticd::plan::{Action, ActionKind, StepId};
use kineticd::sim::gcp::{artifact_registry, compute, container, service_usage};
use kineticd::sim::kube::controllers;

/// Virtual duration of `action` on a fresh project (every action a CREATE): the
/// long-running operation or controller delay the simulator models, zero for the calls
/// it answers at once (buckets, service accounts, IAM policies, server-side apply of a
/// ServiceAccount, our own profile record).
pub fn virtual_duration(a: &Action) -> Duration {
    if a.action == ActionKind::Keep {
        return Duration::ZERO;
    }
    match (a.resource.type_name(), &a.id) {
        // batchEnable: one operation for every API.
        ("serviceusage.service", _) => service_usage::ENABLE_DELAY,
        ("compute.network", _) => compute::durations::NETWORK,
        ("compute.router", _) => compute::durations::ROUTER,
        ("artifactregistry.repository", _) => artifact_registry::OP_DELAY,
        ("container.cluster", _) => container::durations::CREATE_CLUSTER,
        // A gpu-l4 / TPU pool starts at 0 nodes: the GKE operation is all.
        ("container.nodePool", _) => container::durations::CREATE_NODE_POOL,
        // Applied, then waited for until its Deployment is Available.
        ("kubernetes.object", StepId::Lws) => controllers::DEPLOYMENT_READY_DELAY,
        // Waited for until scheduled: with no GPU node yet, at once.
        ("kubernetes.object", _) => Duration::ZERO,
        _ => Duration::ZERO,
    }
}

/// Real seconds of `action` at simulator `speed` (virtual seconds per real second).
pub fn real_seconds(a: &Action, speed: f64) -> f64 {
    virtual_duration(a).as_secs_f64() / speed
}

/// How the step waits for its action: the clients' poll schedules are real time.
enum Wait {
    /// Nothing to wait for (the call's answer is the result).
    None,
    /// A Google long-running operation, polled by [`kineticd::cloud::gcp::lro::wait`].
    Lro,
    /// A Kubernetes condition, polled by the kube wait loop.
    Kube,
}

fn wait_of(a: &Action) -> Wait {
    match a.resource.type_name() {
        "serviceusage.service"
        | "compute.network"
        | "compute.router"
        | "artifactregistry.repository"
        | "container.cluster"
        | "container.nodePool" => Wait::Lro,
        "kubernetes.object" => Wait::Kube,
        _ => Wait::None,
    }
}

/// Real seconds until the client first sees `action` done at simulator `speed`: its
/// modelled duration rounded up to the next poll of the schedule the steps use at that
/// speed (against Google the LRO waiter looks at once, then after 0.5 s, 1 s, 2 s, 4 s,
/// 5 s, 5 s ...; the Kubernetes wait every 0.5 s; a simulator scales both by its speed). Request latencies are left out, so this is meaningful
/// while modelled durations are well above them (speeds up to about 1,000).
pub fn observed_seconds(a: &Action, speed: f64) -> f64 {
    let d = real_seconds(a, speed);
    if d <= 0.0 {
        return 0.0;
    }
    let timing = kineticd::ops::workflows::cluster::Timing::polling(
        kineticd::cloud::gcp::lro::PollSchedule::for_speed(speed),
    );
    match wait_of(a) {
        Wait::None => d,
        Wait::Lro => {
            let policy = timing.lro_policy();
            let (mut t, mut delay) = (0.0f64, policy.first_delay);
            while t < d {
                t += delay.as_secs_f64();
                delay = (delay * 2).min(policy.max_delay);
            }
            t
        }
        Wait::Kube => {
            let poll = timing.kube.poll.as_secs_f64();
            (d / poll).ceil() * poll
        }
    }
}
