//! What Compute Engine offers in the simulator: regions and zones, machine types (vCPUs),
//! GPUs (per zone, with the machine types they fit and their quota metrics) and GKE TPU
//! machine types (chips per host, valid topologies).
//!
//! Invariant: pure data and lookups, no state; GKE validation and quota accounting both
//! read this one table, so a pool the GKE simulator accepts always has a known shape.

/// One GPU type.
#[derive(Debug, Clone, Copy)]
pub struct Gpu {
    pub name: &'static str,
    pub description: &'static str,
    pub max_cards: u32,
    /// Counts allowed on N1 machines (empty: only on its bundled machine family).
    pub n1_counts: &'static [u32],
    /// Regional quota metric (on-demand, spot); `None`: no per-type metric to check.
    pub metric: Option<&'static str>,
    pub spot_metric: Option<&'static str>,
    /// Offered only in zones `-a`, `-b`, `-c`.
    pub scarce: bool,
}

const fn gpu(
    name: &'static str,
    description: &'static str,
    max_cards: u32,
    n1_counts: &'static [u32],
    metric: Option<&'static str>,
    spot_metric: Option<&'static str>,
    scarce: bool,
) -> Gpu {
    Gpu {
        name,
        description,
        max_cards,
        n1_counts,
        metric,
        spot_metric,
        scarce,
    }
}

pub const GPUS: &[Gpu] = &[
    gpu(
        "nvidia-l4",
        "NVIDIA L4",
        8,
        &[],
        Some("NVIDIA_L4_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_L4_GPUS"),
        false,
    ),
    gpu(
        "nvidia-tesla-t4",
        "NVIDIA T4",
        4,
        &[1, 2, 4],
        Some("NVIDIA_T4_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_T4_GPUS"),
        false,
    ),
    gpu(
        "nvidia-tesla-v100",
        "NVIDIA V100",
        8,
        &[1, 2, 4, 8],
        Some("NVIDIA_V100_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_V100_GPUS"),
        true,
    ),
    gpu(
        "nvidia-tesla-p4",
        "NVIDIA P4",
        4,
        &[1, 2, 4],
        Some("NVIDIA_P4_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_P4_GPUS"),
        true,
    ),
    gpu(
        "nvidia-tesla-p100",
        "NVIDIA P100",
        4,
        &[1, 2, 4],
        Some("NVIDIA_P100_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_P100_GPUS"),
        true,
    ),
    gpu(
        "nvidia-tesla-a100",
        "NVIDIA A100 40GB",
        16,
        &[],
        Some("NVIDIA_A100_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_A100_GPUS"),
        false,
    ),
    gpu(
        "nvidia-a100-80gb",
        "NVIDIA A100 80GB",
        8,
        &[],
        Some("NVIDIA_A100_80GB_GPUS"),
        Some("PREEMPTIBLE_NVIDIA_A100_80GB_GPUS"),
        true,
    ),
    gpu(
        "nvidia-h100-80gb",
        "NVIDIA H100 80GB",
        8,
        &[],
        None,
        Some("PREEMPTIBLE_NVIDIA_H100_GPUS"),
        true,
    ),
    gpu(
        "nvidia-h100-mega-80gb",
        "NVIDIA H100 80GB MEGA",
        8,
        &[],
        None,
        None,
        true,
    ),
    gpu(
        "nvidia-h200-141gb",
        "NVIDIA H200 141GB",
        8,
        &[],
        None,
        None,
        true,
    ),
    gpu("nvidia-b200", "NVIDIA B200", 8, &[], None, None, true),
];

pub fn gpu_by_name(name: &str) -> Option<&'static Gpu> {
    GPUS.iter().find(|g| g.name == name)
}

/// The GPUs a zone offers (the simulator's availability map).
pub fn gpus_in_zone(zone: &str) -> Vec<&'static Gpu> {
    let letter = zone.rsplit('-').next().unwrap_or("");
    GPUS.iter()
        .filter(|g| !g.scarce || matches!(letter, "a" | "b" | "c"))
        .collect()
}

/// GPU machine types that come with their GPUs: (accelerator, count).
pub fn bundled_gpu(machine: &str) -> Option<(&'static str, u32)> {
    if let Some(n) = machine.strip_prefix("g2-standard-") {
        let count = match n {
            "4" | "8" | "12" | "16" | "32" => 1,
            "24" => 2,
            "48" => 4,
            "96" => 8,
            _ => return None,
        };
        return Some(("nvidia-l4", count));
    }
    if machine == "a2-megagpu-16g" {
        return Some(("nvidia-tesla-a100", 16));
    }
    let fixed = [
        ("a3-megagpu-8g", "nvidia-h100-mega-80gb"),
        ("a3-ultragpu-8g", "nvidia-h200-141gb"),
        ("a4-highgpu-8g", "nvidia-b200"),
    ];
    if let Some((_, a)) = fixed.iter().find(|(m, _)| *m == machine) {
        return Some((a, 8));
    }
    let families = [
        ("a2-highgpu-", "nvidia-tesla-a100"),
        ("a2-ultragpu-", "nvidia-a100-80gb"),
        ("a3-highgpu-", "nvidia-h100-80gb"),
    ];
    for (prefix, accel) in families {
        if let Some(n) = machine
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix('g'))
        {
            return match n {
                "1" | "2" | "4" | "8" => n.parse().ok().map(|c| (accel, c)),
                _ => None,
            };
        }
    }
    None
}

/// One GKE TPU machine type.
#[derive(Debug, Clone, Copy)]
pub struct TpuMachine {
    pub machine: &'static str,
    /// `cloud.google.com/gke-tpu-accelerator` value.
    pub accelerator: &'static str,
    pub chips_per_host: u32,
    pub vcpus: u32,
    /// Valid topologies; the first is the single-host one (chips == chips_per_host)
    /// when the machine type has one.
    pub topologies: &'static [&'static str],
    pub metric: Option<&'static str>,
    pub spot_metric: Option<&'static str>,
    /// Zones whose Compute offers the machine type (Google's TPU availability, abridged).
    pub zones: &'static [&'static str],
}

const V5E_ZONES: &[&str] = &[
    "us-central1-a",
    "us-south1-a",
    "us-west1-c",
    "us-west4-a",
    "us-east1-c",
    "us-east5-b",
    "europe-west4-b",
    "asia-southeast1-b",
];
const V3_ZONES: &[&str] = &["us-central1-a", "us-central1-b", "europe-west4-a"];

const V5E: Option<&str> = Some("TPU_LITE_PODSLICE_V5");
const V5E_SPOT: Option<&str> = Some("PREEMPTIBLE_TPU_LITE_PODSLICE_V5");
const V4: Option<&str> = Some("TPU_PODSLICE_V4");
const V4_SPOT: Option<&str> = Some("PREEMPTIBLE_TPU_PODSLICE_V4");
const CUBES: &[&str] = &[
    "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16", "8x16x16",
    "16x16x16",
];

pub const TPUS: &[TpuMachine] = &[
    TpuMachine {
        machine: "ct5lp-hightpu-1t",
        accelerator: "tpu-v5-lite-podslice",
        chips_per_host: 1,
        vcpus: 24,
        topologies: &["1x1"],
        metric: V5E,
        spot_metric: V5E_SPOT,
        zones: V5E_ZONES,
    },
    TpuMachine {
        machine: "ct5lp-hightpu-4t",
        accelerator: "tpu-v5-lite-podslice",
        chips_per_host: 4,
        vcpus: 112,
        topologies: &["2x2", "4x4", "4x8", "8x8", "8x16", "16x16"],
        metric: V5E,
        spot_metric: V5E_SPOT,
        zones: V5E_ZONES,
    },
    TpuMachine {
        machine: "ct5lp-hightpu-8t",
        accelerator: "tpu-v5-lite-podslice",
        chips_per_host: 8,
        vcpus: 224,
        topologies: &["2x4"],
        metric: V5E,
        spot_metric: V5E_SPOT,
        zones: V5E_ZONES,
    },
    TpuMachine {
        machine: "ct4p-hightpu-4t",
        accelerator: "tpu-v4-podslice",
        chips_per_host: 4,
        vcpus: 240,
        topologies: CUBES,
        metric: V4,
        spot_metric: V4_SPOT,
        zones: &["us-central2-b"],
    },
    TpuMachine {
        machine: "ct5p-hightpu-4t",
        accelerator: "tpu-v5p-slice",
        chips_per_host: 4,
        vcpus: 208,
        topologies: CUBES,
        metric: None,
        spot_metric: None,
        zones: &["us-east5-a", "us-central1-a", "europe-west4-b"],
    },
    TpuMachine {
        machine: "ct6e-standard-4t",
        accelerator: "tpu-v6e-slice",
        chips_per_host: 4,
        vcpus: 180,
        topologies: &["2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"],
        metric: None,
        spot_metric: None,
        zones: &[
            "us-east5-b",
            "us-east1-d",
            "us-south1-a",
            "europe-west4-a",
            "asia-northeast1-b",
        ],
    },
    TpuMachine {
        machine: "ct3-hightpu-4t",
        accelerator: "tpu-v3-podslice",
        chips_per_host: 4,
        vcpus: 96,
        topologies: &["2x2"],
        metric: None,
        spot_metric: None,
        zones: V3_ZONES,
    },
    TpuMachine {
        machine: "ct3p-hightpu-4t",
        accelerator: "tpu-v3-podslice",
        chips_per_host: 4,
        vcpus: 48,
        topologies: &[
            "4x4", "4x8", "8x8", "8x16", "16x16", "16x32", "32x32", "32x64",
        ],
        metric: None,
        spot_metric: None,
        zones: V3_ZONES,
    },
];

pub fn tpu_machine(machine: &str) -> Option<&'static TpuMachine> {
    TPUS.iter().find(|t| t.machine == machine)
}

/// Chips in a topology (`2x2x4` -> 16).
pub fn topology_chips(topology: &str) -> Option<u32> {
    topology
        .split('x')
        .map(|d| d.parse::<u32>().ok().filter(|n| *n > 0))
        .try_fold(1u32, |acc, d| d.and_then(|d| acc.checked_mul(d)))
}

/// vCPUs of a machine type, or `None` when the simulator does not know it.
pub fn vcpus(machine: &str) -> Option<u32> {
    if let Some(t) = tpu_machine(machine) {
        return Some(t.vcpus);
    }
    match machine {
        "e2-micro" | "e2-small" | "e2-medium" | "f1-micro" | "g1-small" => return Some(2),
        "a2-megagpu-16g" => return Some(96),
        "a3-megagpu-8g" => return Some(208),
        "a3-ultragpu-8g" | "a4-highgpu-8g" => return Some(224),
        _ => {}
    }
    if let Some((accel, count)) = bundled_gpu(machine) {
        let per_gpu = match accel {
            "nvidia-h100-80gb" => 26,
            "nvidia-l4" => return machine.rsplit('-').next()?.parse().ok(),
            _ => 12,
        };
        return Some(per_gpu * count);
    }
    let mut parts = machine.split('-');
    let (family, class, n) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let families = [
        "e2", "n1", "n2", "n2d", "n4", "c2", "c2d", "c3", "c3d", "c4", "t2d", "t2a", "m1", "m3",
    ];
    let classes = ["standard", "highmem", "highcpu", "megamem", "ultramem"];
    if !families.contains(&family) || !classes.contains(&class) {
        return None;
    }
    n.parse().ok().filter(|n: &u32| (1..=416).contains(n))
}

/// Region of a zone (`us-central1-a` -> `us-central1`) when `location` is a zone.
pub fn zone_region(location: &str) -> Option<&str> {
    let (region, letter) = location.rsplit_once('-')?;
    letters(region)?.contains(&letter).then_some(region)
}

/// Google's regions (a subset) with the letters of their zones, as Compute lists them.
pub const REGIONS: &[(&str, &[&str])] = &[
    ("us-central1", &["a", "b", "c", "f"]),
    ("us-central2", &["b"]),
    ("us-east1", &["b", "c", "d"]),
    ("us-east4", &["a", "b", "c"]),
    ("us-east5", &["a", "b", "c"]),
    ("us-south1", &["a", "b", "c"]),
    ("us-west1", &["a", "b", "c"]),
    ("us-west4", &["a", "b", "c"]),
    ("northamerica-northeast2", &["a", "b", "c"]),
    ("europe-west1", &["b", "c", "d"]),
    ("europe-west4", &["a", "b", "c"]),
    ("asia-east1", &["a", "b", "c"]),
    ("asia-northeast1", &["a", "b", "c"]),
    ("asia-southeast1", &["a", "b", "c"]),
    ("australia-southeast1", &["a", "b", "c"]),
    ("me-west1", &["a", "b", "c"]),
];

fn letters(region: &str) -> Option<&'static [&'static str]> {
    REGIONS.iter().find(|(r, _)| *r == region).map(|(_, l)| *l)
}

/// `us-central1`, `europe-west4`, `northamerica-northeast2`, ... (a region of [`REGIONS`]).
pub fn is_region(s: &str) -> bool {
    letters(s).is_some()
}

/// Region of a zone or region name.
pub fn region_of(location: &str) -> Option<&str> {
    if is_region(location) {
        Some(location)
    } else {
        zone_region(location)
    }
}

/// The zones of a region (none for an unknown region).
pub fn zones_of(region: &str) -> Vec<String> {
    letters(region)
        .unwrap_or_default()
        .iter()
        .map(|l| format!("{region}-{l}"))
        .collect()
}

/// Every zone, region by region.
pub fn all_zones() -> Vec<String> {
    REGIONS.iter().flat_map(|(r, _)| zones_of(r)).collect()
}

/// Whether Compute offers `machine` in `zone`: TPU machine types only where the TPUs
/// are, GPU-bundled types where their GPU is, any other known type in every zone.
pub fn machine_in_zone(machine: &str, zone: &str) -> bool {
    if zone_region(zone).is_none() || vcpus(machine).is_none() {
        return false;
    }
    if let Some(t) = tpu_machine(machine) {
        return t.zones.contains(&zone);
    }
    match bundled_gpu(machine) {
        Some((gpu, _)) => gpus_in_zone(zone).iter().any(|g| g.name == gpu),
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(bundled_gpu("g2-standard-24"), Some(("nvidia-l4", 2)));
        assert_eq!(bundled_gpu("a3-highgpu-8g"), Some(("nvidia-h100-80gb", 8)));
        assert_eq!(bundled_gpu("a2-highgpu-3g"), None);
        assert_eq!(vcpus("g2-standard-48"), Some(48));
        assert_eq!(vcpus("a2-highgpu-2g"), Some(24));
        assert_eq!(vcpus("e2-standard-4"), Some(4));
        assert_eq!(vcpus("zz-standard-4"), None);
        assert_eq!(topology_chips("2x2x4"), Some(16));
        assert_eq!(topology_chips("2xx"), None);
        assert_eq!(zone_region("us-central1-a"), Some("us-central1"));
        assert_eq!(zone_region("us-central1-z"), None);
        assert!(is_region("northamerica-northeast2"));
        assert!(!is_region("us-central"));
        assert!(!is_region("xx-fake9"));
        assert_eq!(zone_region("xx-fake9-a"), None);
        assert_eq!(zone_region("us-east1-a"), None, "us-east1 has b, c, d");
        assert_eq!(
            zones_of("us-east1"),
            ["us-east1-b", "us-east1-c", "us-east1-d"]
        );
        assert!(machine_in_zone("ct5lp-hightpu-4t", "us-central1-a"));
        assert!(!machine_in_zone("ct5lp-hightpu-4t", "us-central1-f"));
        assert!(!machine_in_zone("ct4p-hightpu-4t", "us-central1-a"));
        assert!(machine_in_zone("e2-standard-4", "us-central1-f"));
        assert!(!machine_in_zone("a3-highgpu-8g", "us-central1-f"));
        for t in TPUS {
            assert!(
                t.zones.iter().all(|z| zone_region(z).is_some()),
                "{}",
                t.machine
            );
        }
        assert_eq!(region_of("europe-west4"), Some("europe-west4"));
        assert_eq!(gpus_in_zone("us-central1-f").len(), 3);
    }
}
