//! GKE operations: starting one (one per cluster at a time), deciding quota and stockout
//! outcomes up front, and moving operations along the clock.
//!
//! Invariant: an operation's effect is applied exactly once, when it turns DONE; a
//! failed operation leaves the pool (or cluster) in ERROR / RUNNING_WITH_ERROR with a
//! condition naming GKE's code, and its `error` carries the reason in an ErrorInfo.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::cloud::gcp::types::container::{Operation, RpcStatus, StatusCondition};
use crate::sim::Sim;
use crate::sim::clock::Clock;
use crate::sim::error::{SimError, error_info};
use crate::sim::faults::FaultKind;
use crate::sim::gcp::compute::quota;
use crate::sim::world::World;

use super::durations;
use super::effects;
use super::lookup::{At, F, find_pool, key};
use super::model::{Effect, Failure, OpRec, Shape};
use super::{State, stocked_out};

/// 400 FAILED_PRECONDITION while another operation runs on the cluster (GKE's wording).
pub fn ensure_idle(state: &State, cluster_key: &str, cluster_name: &str) -> Result<(), SimError> {
    match state
        .operations
        .iter()
        .find(|o| o.cluster == cluster_key && o.op.status != "DONE")
    {
        Some(o) => Err(SimError::precondition(
            F,
            format!(
                "Operation {} is currently {}. Please wait and try again once it is done.",
                o.op.name,
                o.doing(cluster_name)
            ),
        )),
        None => Ok(()),
    }
}

/// What a new operation is about.
pub struct Start<'a> {
    pub project: &'a str,
    pub location: &'a str,
    pub cluster_key: &'a str,
    pub base_url: &'a str,
    pub target_link: String,
    pub operation_type: &'static str,
    pub effect: Effect,
    pub duration: Duration,
    pub failure: Option<Failure>,
}

/// Record a PENDING operation and apply whatever is already due (speed 0: all of it);
/// returns the operation as the caller sees it now.
pub fn start(world: &mut World, clock: &Clock, s: Start<'_>) -> Operation {
    let now = clock.now();
    let state = &mut world.container;
    let ms = chrono::Utc::now().timestamp_millis();
    let name = format!("operation-{ms}-{:08x}", rand::random::<u32>());
    let op = Operation {
        name: name.clone(),
        operation_type: s.operation_type.to_owned(),
        status: "PENDING".into(),
        self_link: Some(format!(
            "{}/container/v1/projects/{}/locations/{}/operations/{name}",
            s.base_url, s.project, s.location
        )),
        target_link: Some(s.target_link),
        location: Some(s.location.to_owned()),
        zone: Some(s.location.to_owned()),
        start_time: Some(state.stamp(clock, now)),
        ..Operation::default()
    };
    state.operations.push(OpRec {
        op,
        project: s.project.to_owned(),
        cluster: s.cluster_key.to_owned(),
        running_at: now + durations::PENDING.min(s.duration),
        done_at: now + s.duration,
        effect: s.effect,
        failure: s.failure,
    });
    advance(world, clock);
    world
        .container
        .operations
        .named(&name)
        .map(|o| o.op.clone())
        .unwrap_or_default()
}

/// Start the operation that applies `effect` to the cluster `(project, location, key)`;
/// its GKE operation type and virtual duration follow from the effect.
pub fn begin(
    sim: &Sim,
    w: &mut World,
    (project, location, cluster_key): At<'_>,
    target_link: String,
    effect: Effect,
    failure: Option<Failure>,
) -> Operation {
    let (operation_type, duration) = match effect {
        Effect::CreateCluster => ("CREATE_CLUSTER", durations::CREATE_CLUSTER),
        Effect::DeleteCluster => ("DELETE_CLUSTER", durations::DELETE_CLUSTER),
        Effect::CreatePool(_) => ("CREATE_NODE_POOL", durations::CREATE_NODE_POOL),
        Effect::DeletePool(_) => ("DELETE_NODE_POOL", durations::DELETE_NODE_POOL),
        Effect::SetSize(..) => ("SET_NODE_POOL_SIZE", durations::SET_NODE_POOL_SIZE),
        // The discovery document has no autoscaling operation type; GKE reports
        // autoscaling changes as cluster updates.
        Effect::SetAutoscaling(..) => ("UPDATE_CLUSTER", durations::SET_NODE_POOL_AUTOSCALING),
    };
    start(
        w,
        sim.clock(),
        Start {
            project,
            location,
            cluster_key,
            base_url: &sim.url(),
            target_link,
            operation_type,
            effect,
            duration,
            failure,
        },
    )
}

/// Start the operation that applies `effect` to an existing node pool which grows by
/// `added` nodes per zone: quota and stock are decided for those nodes now (none when
/// it does not grow), as GKE decides them when the call is made.
pub fn begin_pool_change(
    sim: &Sim,
    w: &mut World,
    at: At<'_>,
    pool: &str,
    added: u32,
    forced: Option<FaultKind>,
    effect: Effect,
) -> Result<Operation, SimError> {
    let (project, location, cluster) = at;
    let (c, p) = find_pool(w, at, pool)?;
    let failure = decide(
        sim,
        w,
        project,
        &c.region,
        &p.shape,
        &p.zones,
        added,
        added > 0,
        forced,
    );
    let link = format!("{}/nodePools/{pool}", c.self_link());
    let k = key(project, location, cluster);
    Ok(begin(
        sim,
        w,
        (project, location, &k),
        link,
        effect,
        failure,
    ))
}

fn info(reason: &str, metadata: serde_json::Value) -> serde_json::Value {
    error_info(reason, "container.googleapis.com", metadata)
}

fn quota_failure(metric: &str, limit: f64, region: &str) -> Failure {
    let message = format!("Quota '{metric}' exceeded. Limit: {limit:.1} in region {region}.");
    Failure {
        error: RpcStatus {
            code: 8,
            message: message.clone(),
            details: vec![info(
                "QUOTA_EXCEEDED",
                json!({"metric": metric, "limit": format!("{limit:.1}"), "region": region}),
            )],
        },
        condition: StatusCondition {
            code: Some("GCE_QUOTA_EXCEEDED".into()),
            message: Some(message),
            canonical_code: Some("RESOURCE_EXHAUSTED".into()),
        },
        pool: None,
    }
}

fn stockout_failure(project: &str, zone: &str, what: &str) -> Failure {
    let message = format!(
        "Google Compute Engine: GCE_STOCKOUT: The zone 'projects/{project}/zones/{zone}' does not have enough \
         resources available to fulfill the request ({what}). Try a different zone, or try again later."
    );
    Failure {
        error: RpcStatus {
            code: 8,
            message: message.clone(),
            details: vec![info(
                "GCE_STOCKOUT",
                json!({"zone": zone, "resource": what}),
            )],
        },
        condition: StatusCondition {
            code: Some("GCE_STOCKOUT".into()),
            message: Some(message),
            canonical_code: Some("RESOURCE_EXHAUSTED".into()),
        },
        pool: None,
    }
}

/// The outcome of giving `added` more nodes per zone to a pool of `shape` in `zones`:
/// quota first (as GCE checks it), then stock. `forced` is an armed QUOTA_EXCEEDED or
/// STOCKOUT fault. Stock is checked when `check_stock` (creation, growth).
#[allow(clippy::too_many_arguments)]
pub fn decide(
    sim: &Sim,
    world: &World,
    project: &str,
    region: &str,
    shape: &Shape,
    zones: &[String],
    added: u32,
    check_stock: bool,
    forced: Option<FaultKind>,
) -> Option<Failure> {
    let units = shape.units();
    if forced == Some(FaultKind::QuotaExceeded) {
        let metric = units
            .keys()
            .find(|m| **m != "CPUS")
            .copied()
            .unwrap_or("CPUS");
        let limit = quota::limit(world, region, metric).unwrap_or(0.0);
        return Some(quota_failure(metric, limit, region));
    }
    let nodes = f64::from(added) * zones.len() as f64;
    let extra: BTreeMap<String, f64> = units
        .into_iter()
        .map(|(m, u)| (m.to_owned(), u * nodes))
        .collect();
    if let Some((metric, limit)) = quota::exceeded(world, project, region, &extra) {
        return Some(quota_failure(&metric, limit, region));
    }
    let what = shape
        .accelerator()
        .map(str::to_owned)
        .unwrap_or_else(|| shape.machine.clone());
    if forced == Some(FaultKind::Stockout) {
        let zone = zones.first().map(String::as_str).unwrap_or(region);
        return Some(stockout_failure(project, zone, &what));
    }
    if check_stock {
        let accel = shape.accelerator()?;
        let zone = zones
            .iter()
            .find(|z| stocked_out(sim, &world.container, z, accel))?;
        return Some(stockout_failure(project, zone, &what));
    }
    None
}

/// Move every operation that is due.
/// Returns whether an operation finished (its effect applied).
pub fn advance(world: &mut World, clock: &Clock) -> bool {
    let mut finished = false;
    for i in 0..world.container.operations.len() {
        let o = &mut world.container.operations[i];
        if o.op.status == "DONE" {
            continue;
        }
        if clock.is_due(o.done_at) {
            finish(world, clock, i);
            finished = true;
        } else if o.op.status == "PENDING" && clock.is_due(o.running_at) {
            o.op.status = "RUNNING".into();
        }
    }
    finished
}

fn finish(world: &mut World, clock: &Clock, i: usize) {
    let rec = world.container.operations[i].clone();
    let end = world.container.stamp(clock, rec.done_at);
    let World {
        container, kube, ..
    } = world;
    let fail = rec.failure.as_ref();
    effects::apply(
        &mut container.clusters,
        kube,
        &rec.cluster,
        &rec.effect,
        fail,
    );
    let o = &mut container.operations[i].op;
    o.status = "DONE".into();
    o.end_time = Some(end);
    o.error = fail.map(|f| f.error.clone());
}
