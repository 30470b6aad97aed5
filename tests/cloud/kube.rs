//! The Kubernetes layer against the simulator's Kubernetes side: server-side apply,
//! wait conditions, the manifest cache, client/token handling, inventory, and the
//! simulated scheduler, autoscaler and spot reclaims.

mod apply;
mod client;
mod inventory;
mod manifests;
mod sched;
mod wait;

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use kineticd::cloud::kube::{AccessToken, ClusterAccess, KubeClients, KubeCluster, KubeError};
use kineticd::sim::Sim;
use kineticd::sim::clock::ClockMode;
use kineticd::sim::kube::PoolNodes;

type TokenFuture = BoxFuture<'static, Result<Option<AccessToken>, KubeError>>;

/// Clients without authentication (the simulator's mode).
pub fn no_auth_clients() -> KubeClients {
    KubeClients::new(|| -> TokenFuture { Box::pin(async { Ok(None) }) })
}

pub fn access(sim: &Sim, key: &str) -> ClusterAccess {
    ClusterAccess {
        key: format!("test/{key}"),
        endpoint: format!("{}/kube/{key}", sim.url()),
        ca_certificate: None,
    }
}

/// A simulator (speed 0) with one empty cluster `k1`, and a handle on it.
pub async fn sim_cluster() -> (Sim, KubeCluster) {
    let (sim, _) = crate::common::start_sim().await;
    sim.world().kube.add_cluster("k1");
    let cluster = no_auth_clients().cluster(access(&sim, "k1"));
    (sim, cluster)
}

/// The same with a clock that moves only when the test advances it.
pub async fn explicit_sim_cluster() -> (Sim, KubeCluster) {
    let cfg = kineticd::sim::SimConfig {
        clock: ClockMode::Explicit,
        ..kineticd::sim::SimConfig::default()
    };
    let (sim, _) = crate::common::start_sim_with(cfg).await;
    sim.world().kube.add_cluster("k1");
    let cluster = no_auth_clients().cluster(access(&sim, "k1"));
    (sim, cluster)
}

/// How many `method` calls (`kube.apply`, `kube.list`, ...) the simulator's journal holds.
pub fn calls(sim: &Sim, method: &str) -> usize {
    let entries = sim.journal().entries();
    entries.iter().filter(|e| e.method == method).count()
}

/// Add `default-pool` (one e2-standard-4 node) and then `pools` to cluster `k1`.
pub fn add_pools(sim: &Sim, pools: impl IntoIterator<Item = PoolNodes>) {
    let mut w = sim.world();
    w.kube
        .upsert_pool("k1", pool("default-pool", "e2-standard-4", 1, 1));
    for p in pools {
        w.kube.upsert_pool("k1", p);
    }
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A pool as the GKE simulator describes it (one zone, us-central1-a).
pub fn pool(name: &str, machine: &str, count: u32, max: u32) -> PoolNodes {
    PoolNodes {
        pool: name.into(),
        machine_type: machine.into(),
        zones: vec!["us-central1-a".into()],
        min: 0,
        max,
        count,
        spot: false,
        labels: strings(&[("cloud.google.com/gke-nodepool", name)]),
        taints: Vec::new(),
        allocatable: BTreeMap::new(),
    }
}

/// An L4 pool: one GPU per node, tainted `nvidia.com/gpu=present:NoSchedule`.
pub fn gpu_pool(name: &str, count: u32, max: u32) -> PoolNodes {
    let mut p = pool(name, "g2-standard-4", count, max);
    p.labels.insert(
        "cloud.google.com/gke-accelerator".into(),
        "nvidia-l4".into(),
    );
    p.taints.push((
        "nvidia.com/gpu".into(),
        "present".into(),
        "NoSchedule".into(),
    ));
    p.allocatable.insert("nvidia.com/gpu".into(), "1".into());
    p
}

/// A spot L4 pool (also tainted `cloud.google.com/gke-spot=true:NoSchedule`).
pub fn spot_gpu_pool(name: &str, count: u32, max: u32) -> PoolNodes {
    let mut p = gpu_pool(name, count, max);
    p.spot = true;
    p.taints.push((
        "cloud.google.com/gke-spot".into(),
        "true".into(),
        "NoSchedule".into(),
    ));
    p
}

/// A v5e 2x2 pool: four TPU chips per node.
pub fn tpu_pool(name: &str, count: u32, max: u32) -> PoolNodes {
    let mut p = pool(name, "ct5lp-hightpu-4t", count, max);
    p.labels.insert(
        "cloud.google.com/gke-tpu-accelerator".into(),
        "tpu-v5-lite-podslice".into(),
    );
    p.labels
        .insert("cloud.google.com/gke-tpu-topology".into(), "2x2".into());
    p.taints.push((
        "google.com/tpu".into(),
        "present".into(),
        "NoSchedule".into(),
    ));
    p.allocatable.insert("google.com/tpu".into(), "4".into());
    p
}
