//! Node objects for the nodes of the GKE node pools: names, labels (the pool's plus the
//! standard ones), taints, capacity and allocatable from the machine type, Ready.
//!
//! Invariant: a node's JSON (minus server metadata) is a pure function of its pool, zone
//! and index, so re-syncing unchanged pools changes nothing, and the autoscaler's
//! template node is exactly what a scale-up will create.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::PoolNodes;

/// (vCPUs, memory MiB) of a machine type; a guess for unknown types.
pub fn machine_shape(machine_type: &str) -> (u64, u64) {
    const GIB: u64 = 1024;
    let known: &[(&str, u64, u64)] = &[
        ("a2-megagpu-16g", 96, 1360 * GIB),
        ("ct5lp-hightpu-1t", 24, 48 * GIB),
        ("ct5lp-hightpu-4t", 112, 192 * GIB),
        ("ct5lp-hightpu-8t", 224, 400 * GIB),
        ("ct5p-hightpu-4t", 208, 448 * GIB),
        ("ct6e-standard-4t", 180, 720 * GIB),
        ("ct4p-hightpu-4t", 240, 407 * GIB),
    ];
    if let Some((_, c, m)) = known.iter().find(|(n, _, _)| *n == machine_type) {
        return (*c, *m);
    }
    let parts: Vec<&str> = machine_type.split('-').collect();
    let gpus = |s: &str| s.strip_suffix('g').and_then(|n| n.parse::<u64>().ok());
    match parts.as_slice() {
        ["a2", "highgpu", n] => gpus(n).map_or((12, 85 * GIB), |k| (12 * k, 85 * GIB * k)),
        ["a2", "ultragpu", n] => gpus(n).map_or((12, 170 * GIB), |k| (12 * k, 170 * GIB * k)),
        ["a3", _, n] => gpus(n).map_or((26, 234 * GIB), |k| (26 * k, 234 * GIB * k)),
        [family, class, n] => {
            let Ok(cpus) = n.parse::<u64>() else {
                return (4, 16 * GIB);
            };
            // MiB per vCPU.
            let per = match (*family, *class) {
                ("n1", "standard") => 3840,
                ("n1", "highmem") => 6656,
                ("n1", "highcpu") => 922,
                (_, "highmem") => 8 * GIB,
                (_, "highcpu") => GIB,
                _ => 4 * GIB,
            };
            (cpus, cpus * per)
        }
        _ => (4, 16 * GIB),
    }
}

/// GKE's CPU reservation, in millicores, for a machine with `cpus` vCPUs.
fn cpu_reserved_m(cpus: u64) -> u64 {
    let mut r = 60 * cpus.min(1) + 10 * cpus.saturating_sub(1).min(1);
    r += 5 * cpus.saturating_sub(2).min(2);
    r + cpus.saturating_sub(4) * 5 / 2
}

/// GKE's memory reservation (plus the 100 MiB eviction threshold), in MiB.
fn memory_reserved_mib(mib: u64) -> u64 {
    let tiers = [
        (4096, 25),
        (4096, 20),
        (8192, 10),
        (114_688, 6),
        (u64::MAX, 2),
    ];
    let (mut left, mut r) = (mib, 0);
    for (size, pct) in tiers {
        let take = left.min(size);
        r += take * pct / 100;
        left -= take;
    }
    r + 100
}

/// A short stable hash (for node names and IPs).
fn fnv(s: &str) -> u64 {
    crate::domain::hash::fnv1a(s.bytes())
}

/// `gke-{pool}-{4 hex}-{index}`: stable per (cluster, zone), at most 63 characters.
pub fn node_name(key: &str, pool: &str, zone: &str, index: u32) -> String {
    let h = fnv(&format!("{key}/{zone}")) & 0xffff;
    let mut pool = pool.to_owned();
    pool.truncate(40);
    format!("gke-{pool}-{h:04x}-{index}")
}

fn region_of(zone: &str) -> String {
    match zone.rsplit_once('-') {
        Some((r, z)) if z.len() == 1 => r.to_owned(),
        _ => zone.to_owned(),
    }
}

/// The node object (no server metadata) of node `index` in `zone` of `pool`.
pub fn node_object(key: &str, pool: &PoolNodes, zone: &str, index: u32) -> Value {
    let name = node_name(key, &pool.pool, zone, index);
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let machine_family = pool.machine_type.split('-').next().unwrap_or("").to_owned();
    for (k, v) in [
        ("kubernetes.io/hostname", name.clone()),
        ("kubernetes.io/os", "linux".into()),
        ("kubernetes.io/arch", "amd64".into()),
        ("topology.kubernetes.io/zone", zone.to_owned()),
        ("topology.kubernetes.io/region", region_of(zone)),
        (
            "node.kubernetes.io/instance-type",
            pool.machine_type.clone(),
        ),
        ("cloud.google.com/gke-nodepool", pool.pool.clone()),
        ("cloud.google.com/machine-family", machine_family),
        ("cloud.google.com/gke-os-distribution", "cos".into()),
    ] {
        labels.insert(k.to_owned(), v);
    }
    if pool.spot {
        labels.insert("cloud.google.com/gke-spot".into(), "true".into());
    }
    // The pool's own labels win over the defaults (GKE sets some of the same keys).
    labels.extend(pool.labels.clone());
    let (cpus, mib) = machine_shape(&pool.machine_type);
    let mut capacity = serde_json::Map::new();
    let mut allocatable = serde_json::Map::new();
    capacity.insert("cpu".into(), json!(cpus.to_string()));
    allocatable.insert(
        "cpu".into(),
        json!(format!("{}m", cpus * 1000 - cpu_reserved_m(cpus))),
    );
    capacity.insert("memory".into(), json!(format!("{mib}Mi")));
    allocatable.insert(
        "memory".into(),
        json!(format!("{}Mi", mib - memory_reserved_mib(mib))),
    );
    for m in [&mut capacity, &mut allocatable] {
        m.insert("pods".into(), json!("110"));
        m.insert("ephemeral-storage".into(), json!("98Gi"));
        for (k, v) in &pool.allocatable {
            m.insert(k.clone(), json!(v));
        }
    }
    let taints: Vec<Value> = pool
        .taints
        .iter()
        .map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}))
        .collect();
    let h = fnv(&name);
    let ip = format!(
        "10.{}.{}.{}",
        128 + (h & 0x3f),
        (h >> 8) & 0xff,
        2 + ((h >> 16) % 250)
    );
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "providerID": format!("gce://sim/{zone}/{name}"),
            "podCIDR": format!("10.{}.{}.0/24", 64 + (h & 0x3f), (h >> 8) & 0xff),
            "taints": taints,
        },
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
            }],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.33.5-gke.1000",
                "kubeProxyVersion": "v1.33.5-gke.1000",
                "containerRuntimeVersion": "containerd://2.0.4",
                "osImage": "Container-Optimized OS from Google",
                "kernelVersion": "6.6.87+",
                "operatingSystem": "linux",
                "architecture": "amd64",
                "machineID": format!("{h:032x}"),
                "systemUUID": format!("{h:032x}"),
                "bootID": format!("{h:032x}"),
            },
        },
    })
}

/// Every node the pools should have now: name -> object.
pub fn desired_nodes<'a>(
    key: &str,
    pools: impl IntoIterator<Item = &'a PoolNodes>,
) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for pool in pools {
        for zone in &pool.zones {
            for i in 0..pool.count {
                let obj = node_object(key, pool, zone, i);
                let name = obj["metadata"]["name"].as_str().unwrap_or("").to_owned();
                out.insert(name, obj);
            }
        }
    }
    out
}

/// The names of the nodes `pool` loses when it shrinks by one node (per zone).
pub fn last_nodes(key: &str, pool: &PoolNodes) -> Vec<String> {
    let Some(last) = pool.count.checked_sub(1) else {
        return Vec::new();
    };
    pool.zones
        .iter()
        .map(|z| node_name(key, &pool.pool, z, last))
        .collect()
}

/// The node a scale-up of `pool` would add (first zone), for the autoscaler.
pub fn template(key: &str, pool: &PoolNodes) -> Value {
    let zone = pool.zones.first().map(String::as_str).unwrap_or("zone-a");
    node_object(key, pool, zone, u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::kube::quantity;

    #[test]
    fn shapes_and_reservations() {
        assert_eq!(machine_shape("e2-standard-4"), (4, 16 * 1024));
        assert_eq!(machine_shape("g2-standard-24"), (24, 96 * 1024));
        assert_eq!(machine_shape("a2-highgpu-4g"), (48, 340 * 1024));
        assert_eq!(cpu_reserved_m(4), 80);
        let pool = PoolNodes {
            pool: "p".into(),
            machine_type: "e2-standard-4".into(),
            zones: vec!["us-central1-a".into()],
            count: 1,
            ..PoolNodes::default()
        };
        let n = node_object("k", &pool, "us-central1-a", 0);
        assert_eq!(n["status"]["allocatable"]["cpu"], "3920m");
        let mem = quantity::units(n["status"]["allocatable"]["memory"].as_str().unwrap());
        assert!(mem > 12 << 30 && mem < 16 << 30, "{mem}");
        assert_eq!(
            n["metadata"]["labels"]["topology.kubernetes.io/region"],
            "us-central1"
        );
        assert!(node_name("k", &"x".repeat(50), "z", 999).len() <= 63);
    }
}
