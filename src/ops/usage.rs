//! The usage collector: every interval, one replica (the holder of the `usage-collector`
//! task lease) reads the cloud's clock once, lists every RUNNING cluster's nodes and pods
//! through its Kubernetes API, and records what each node ran ([`store::usage`]).
//!
//! Invariants:
//! - One round at a time across replicas (the lease); a round's samples all carry the
//!   cloud time read at its start, and the store drops a sample not later than the
//!   cluster's last, so overlapping collectors or a restart never count time twice.
//! - A cluster that cannot be read is recorded as a gap (unknown), never as zero usage.
//! - A round's cost grows with the number of nodes (two lists per cluster, a bounded
//!   number of clusters at once), not with recorded history.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::cloud::Cloud;
use crate::cloud::kube::{ClusterAccess, Inventory, NodeInfo};
use crate::domain::PoolState;
use crate::domain::accelerators::{self, Choice};
use crate::domain::pricing::PriceTable;
use crate::domain::usage::NodeSample;
use crate::store::usage::{Applied, Sampled};
use crate::store::{Db, PoolSpecRecord, StoreError, node_pools, task_leases, usage};

/// The task lease's name.
pub const TASK: &str = "usage-collector";
/// Clusters read at once.
const CONCURRENCY: usize = 16;
/// How long one cluster's lists may take before the cluster counts as unreadable.
const READ_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a cluster's endpoint is reused before GKE is asked again.
const ACCESS_TTL: Duration = Duration::from_secs(600);

#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Clock(#[from] crate::cloud::clock::ClockError),
}

/// What one round did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Round {
    /// `None`: another replica holds the task.
    pub round: Option<i64>,
    pub time: Option<DateTime<Utc>>,
    pub sampled: usize,
    pub unreachable: usize,
    pub stale: usize,
    pub nodes: usize,
}

/// The collector of one process.
pub struct Collector {
    db: Db,
    cloud: Arc<Cloud>,
    prices: Arc<PriceTable>,
    holder: String,
    interval: Duration,
    access: Mutex<HashMap<Uuid, (ClusterAccess, Instant)>>,
}

impl Collector {
    pub fn new(db: Db, cloud: Arc<Cloud>, prices: Arc<PriceTable>, interval: Duration) -> Self {
        Collector {
            db,
            cloud,
            prices,
            holder: format!("{}-{}", hostname(), Uuid::new_v4().simple()),
            interval,
            access: Mutex::new(HashMap::new()),
        }
    }

    /// This process's name on the task lease.
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Sample every interval until `stop`; the lease is given up on the way out.
    pub async fn run(self, stop: CancellationToken) {
        metrics::describe_histogram!(
            "kineticd_usage_round_seconds",
            metrics::Unit::Seconds,
            "Time one usage collector round took (the replica holding the collector's lease)"
        );
        metrics::describe_gauge!(
            "kineticd_usage_unreachable_clusters",
            "Clusters the last usage round could not read (their usage is a gap, not zero)"
        );
        let mut tick = tokio::time::interval(self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.cancelled() => break,
            }
            let started = Instant::now();
            match self.round().await {
                Ok(r) if r.round.is_some() => {
                    metrics::histogram!("kineticd_usage_round_seconds")
                        .record(started.elapsed().as_secs_f64());
                    metrics::gauge!("kineticd_usage_unreachable_clusters")
                        .set(r.unreachable as f64);
                    tracing::debug!(?r, "usage sampled");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %format_args!("{e:#}"), "usage round failed"),
            }
        }
        if let Err(e) = task_leases::release(&self.db, TASK, &self.holder).await {
            tracing::warn!(error = %e, "usage collector lease not released");
        }
    }

    /// One round: take (or keep) the task, read the clock, sample every RUNNING cluster.
    pub async fn round(&self) -> Result<Round, CollectError> {
        let ttl = (self.interval.as_secs_f64() * 3.0).max(30.0);
        let Some(round) = task_leases::hold(&self.db, TASK, &self.holder, ttl).await? else {
            return Ok(Round::default());
        };
        let now = self.cloud.clock.now().await?;
        let clusters = usage::running_clusters(&self.db).await?;
        let results: Vec<Result<Outcome, StoreError>> = futures::stream::iter(clusters)
            .map(|c| async move { self.sample(&c, now, round).await })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let mut out = Round {
            round: Some(round),
            time: Some(now),
            ..Round::default()
        };
        for (team, threshold) in usage::budget_crossings(&self.db, now).await? {
            tracing::info!(%team, threshold, "team budget threshold crossed");
        }
        for r in results {
            match r? {
                Outcome::Sampled { nodes, stale } => {
                    out.sampled += 1;
                    out.nodes += nodes;
                    out.stale += usize::from(stale);
                }
                Outcome::Unreachable => out.unreachable += 1,
            }
        }
        Ok(out)
    }

    async fn sample(
        &self,
        c: &Sampled,
        now: DateTime<Utc>,
        round: i64,
    ) -> Result<Outcome, StoreError> {
        let inventory = match self.read(c).await {
            Ok(inv) => inv,
            Err(reason) => {
                self.forget(c.id);
                tracing::info!(cluster = %c.name, %reason, "usage: cluster unreadable; a gap");
                usage::record_unreachable(&self.db, c, now, &reason).await?;
                return Ok(Outcome::Unreachable);
            }
        };
        let records = node_pools::list(&self.db, c.id, None, 10_000).await?;
        let creators: HashMap<String, Option<String>> = usage::pool_creators(&self.db, c.id)
            .await?
            .into_iter()
            .collect();
        let pools: HashMap<&str, &PoolSpecRecord> = records
            .iter()
            .filter(|p| p.state != PoolState::Deleted)
            .map(|p| (p.pool_id.as_str(), &p.spec))
            .collect();
        let nodes: Vec<NodeSample> = inventory
            .nodes
            .iter()
            .map(|n| {
                let pool = n.pool.clone().unwrap_or_default();
                let member = creators
                    .get(&pool)
                    .cloned()
                    .flatten()
                    .or_else(|| Some(c.created_by.clone()));
                node_sample(
                    n,
                    pools.get(pool.as_str()).copied(),
                    busy_on(&inventory, &n.name),
                    member,
                    &self.prices,
                )
            })
            .collect();
        let applied = usage::record_sample(&self.db, c, now, round, &nodes).await?;
        Ok(Outcome::Sampled {
            nodes: nodes.len(),
            stale: applied == Applied::Stale,
        })
    }

    /// The cluster's nodes and pods, or why they could not be read.
    async fn read(&self, c: &Sampled) -> Result<Inventory, String> {
        let access = self.access_of(c).await?;
        let k = self.cloud.kube.cluster(access);
        match tokio::time::timeout(READ_TIMEOUT, k.inventory()).await {
            Ok(Ok(inv)) => Ok(inv),
            Ok(Err(e)) => Err(format!("the Kubernetes API could not be read: {e}")),
            Err(_) => Err(format!(
                "the Kubernetes API did not answer within {}s",
                READ_TIMEOUT.as_secs()
            )),
        }
    }

    async fn access_of(&self, c: &Sampled) -> Result<ClusterAccess, String> {
        if let Some((a, at)) = self.cache().get(&c.id)
            && at.elapsed() < ACCESS_TTL
        {
            return Ok(a.clone());
        }
        let gke = self
            .cloud
            .gcp
            .container
            .get_cluster(&c.project_id, &c.zone, &c.name)
            .await
            .map_err(|e| format!("the GKE cluster could not be read: {e}"))?;
        let access = ClusterAccess::for_gke(&gke)
            .ok_or_else(|| "the GKE cluster has no endpoint".to_owned())?;
        self.cache().insert(c.id, (access.clone(), Instant::now()));
        Ok(access)
    }

    fn forget(&self, id: Uuid) {
        self.cache().remove(&id);
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, (ClusterAccess, Instant)>> {
        self.access.lock().unwrap_or_else(|p| p.into_inner())
    }
}

enum Outcome {
    Sampled { nodes: usize, stale: bool },
    Unreachable,
}

/// Accelerators requested by the unfinished pods on node `node`.
fn busy_on(inv: &Inventory, node: &str) -> u64 {
    inv.pods
        .iter()
        .filter(|p| p.node.as_deref() == Some(node))
        .filter(|p| !matches!(p.phase.as_str(), "Succeeded" | "Failed"))
        .map(|p| p.requests.gpus + p.requests.tpus)
        .sum()
}

/// One node as recorded: from its pool's record when kineticd has one (accelerator,
/// count, provisioning, today's price), else from the node's own labels and allocatable.
pub fn node_sample(
    n: &NodeInfo,
    record: Option<&PoolSpecRecord>,
    busy: u64,
    member: Option<String>,
    prices: &PriceTable,
) -> NodeSample {
    let resolved = record.and_then(|r| match accelerators::parse(&r.accelerator) {
        Ok(Choice::Accelerator(a)) => Some(a),
        _ => None,
    });
    let (accelerator, accelerators, provisioning, price) = match (record, &resolved) {
        (Some(r), Some(acc)) => {
            let mode = r.mode();
            let price = prices
                .per_node_in(acc, mode)
                .map(|(p, _)| p)
                .or_else(|| r.estimated_hourly_cost.as_ref().map(|c| c.per_node))
                .unwrap_or(0.0);
            (
                Some(acc.pool_prefix()),
                acc.per_node(),
                mode.as_str().to_owned(),
                price,
            )
        }
        _ => {
            let label = |k: &str| n.labels.get(k).cloned();
            let accelerator = label("cloud.google.com/gke-accelerator")
                .or_else(|| label("cloud.google.com/gke-tpu-accelerator"));
            let provisioning = if n.spot {
                "SPOT"
            } else if label("cloud.google.com/gke-flex-start").as_deref() == Some("true") {
                "FLEX_START"
            } else {
                "ON_DEMAND"
            };
            let count = u32::try_from(n.gpus + n.tpus).unwrap_or(u32::MAX);
            (accelerator, count, provisioning.to_owned(), 0.0)
        }
    };
    NodeSample {
        node: n.name.clone(),
        uid: n.uid.clone(),
        pool: n.pool.clone().unwrap_or_default(),
        accelerator,
        accelerators,
        provisioning,
        member,
        price_per_hour: price,
        busy: u32::try_from(busy).unwrap_or(u32::MAX).min(accelerators),
    }
}

fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "kineticd".to_owned())
}
