//! The accelerator catalog and the parser for every spelling users type (Kinetic's
//! rules): `l4`, `gpu-l4`, `a100x4`, `nvidia-tesla-t4`, `gpu`, `gpu:4`, `tpu`, `tpu:16`,
//! `v5e-16`, `tpu-v5litepod-4x4`, `v4-2x2x4`, `l4:spot`, `cpu`.
//!
//! Invariant: a [`Resolved`] accelerator always names a combination GKE accepts: a GPU
//! count offered by its machine family, a TPU chip count with its topology, machine
//! type and host count from the same catalog row.

use std::fmt;

/// GPU or TPU (stored and shown as `GPU` / `TPU`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "UPPERCASE")]
#[schema(as = AcceleratorKind)]
pub enum Kind {
    Gpu,
    Tpu,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Gpu => "GPU",
            Kind::Tpu => "TPU",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Kind::Gpu => "gpu",
            Kind::Tpu => "tpu",
        }
    }
}

/// One GPU model: its GKE accelerator type and the machine type for each count.
#[derive(Debug)]
pub struct GpuModel {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub gke_type: &'static str,
    /// (GPUs per node, machine type), ascending.
    pub counts: &'static [(u32, &'static str)],
}

/// One TPU slice shape of a family.
#[derive(Debug)]
pub struct TpuShape {
    pub chips: u32,
    pub topology: &'static str,
    pub machine_type: &'static str,
    pub hosts: u32,
}

/// One TPU family.
#[derive(Debug)]
pub struct TpuFamily {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub gke_type: &'static str,
    pub default_chips: u32,
    pub shapes: &'static [TpuShape],
}

macro_rules! shapes {
    ($($chips:literal: $topo:literal, $mt:literal, $hosts:literal);* $(;)?) => {
        &[$(TpuShape { chips: $chips, topology: $topo, machine_type: $mt, hosts: $hosts }),*]
    };
}

pub static GPUS: &[GpuModel] = &[
    GpuModel {
        name: "l4",
        aliases: &["nvidia-l4"],
        gke_type: "nvidia-l4",
        counts: &[
            (1, "g2-standard-4"),
            (2, "g2-standard-24"),
            (4, "g2-standard-48"),
            (8, "g2-standard-96"),
        ],
    },
    GpuModel {
        name: "t4",
        aliases: &["nvidia-tesla-t4"],
        gke_type: "nvidia-tesla-t4",
        counts: &[
            (1, "n1-standard-4"),
            (2, "n1-standard-8"),
            (4, "n1-standard-16"),
        ],
    },
    GpuModel {
        name: "v100",
        aliases: &["nvidia-tesla-v100"],
        gke_type: "nvidia-tesla-v100",
        counts: &[
            (1, "n1-standard-8"),
            (2, "n1-standard-16"),
            (4, "n1-standard-32"),
            (8, "n1-standard-64"),
        ],
    },
    GpuModel {
        name: "a100",
        aliases: &["nvidia-tesla-a100"],
        gke_type: "nvidia-tesla-a100",
        counts: &[
            (1, "a2-highgpu-1g"),
            (2, "a2-highgpu-2g"),
            (4, "a2-highgpu-4g"),
            (8, "a2-highgpu-8g"),
            (16, "a2-megagpu-16g"),
        ],
    },
    GpuModel {
        name: "a100-80gb",
        aliases: &["nvidia-a100-80gb"],
        gke_type: "nvidia-a100-80gb",
        counts: &[
            (1, "a2-ultragpu-1g"),
            (2, "a2-ultragpu-2g"),
            (4, "a2-ultragpu-4g"),
            (8, "a2-ultragpu-8g"),
            (16, "a2-ultragpu-16g"),
        ],
    },
    GpuModel {
        name: "h100",
        aliases: &["nvidia-h100-80gb"],
        gke_type: "nvidia-h100-80gb",
        counts: &[
            (1, "a3-highgpu-1g"),
            (2, "a3-highgpu-2g"),
            (4, "a3-highgpu-4g"),
            (8, "a3-highgpu-8g"),
        ],
    },
    GpuModel {
        name: "h100-mega",
        aliases: &["nvidia-h100-mega-80gb"],
        gke_type: "nvidia-h100-mega-80gb",
        counts: &[(8, "a3-megagpu-8g")],
    },
    GpuModel {
        name: "h200",
        aliases: &["nvidia-h200-141gb"],
        gke_type: "nvidia-h200-141gb",
        counts: &[(8, "a3-ultragpu-8g")],
    },
    GpuModel {
        name: "b200",
        aliases: &["nvidia-b200"],
        gke_type: "nvidia-b200",
        counts: &[(8, "a4-highgpu-8g")],
    },
    GpuModel {
        name: "p4",
        aliases: &["nvidia-tesla-p4"],
        gke_type: "nvidia-tesla-p4",
        counts: &[
            (1, "n1-standard-4"),
            (2, "n1-standard-8"),
            (4, "n1-standard-16"),
        ],
    },
    GpuModel {
        name: "p100",
        aliases: &["nvidia-tesla-p100"],
        gke_type: "nvidia-tesla-p100",
        counts: &[
            (1, "n1-standard-4"),
            (2, "n1-standard-8"),
            (4, "n1-standard-16"),
        ],
    },
];

pub static TPUS: &[TpuFamily] = &[
    TpuFamily {
        name: "v3",
        aliases: &["tpu-v3-podslice"],
        gke_type: "tpu-v3-podslice",
        default_chips: 4,
        shapes: shapes![4: "2x2", "ct3-hightpu-4t", 1; 16: "4x4", "ct3p-hightpu-4t", 4; 32: "4x8", "ct3p-hightpu-4t", 8;
            64: "8x8", "ct3p-hightpu-4t", 16; 128: "8x16", "ct3p-hightpu-4t", 32; 256: "16x16", "ct3p-hightpu-4t", 64;
            512: "16x32", "ct3p-hightpu-4t", 128; 1024: "32x32", "ct3p-hightpu-4t", 256; 2048: "32x64", "ct3p-hightpu-4t", 512],
    },
    TpuFamily {
        name: "v4",
        aliases: &["tpu-v4-podslice"],
        gke_type: "tpu-v4-podslice",
        default_chips: 4,
        shapes: shapes![4: "2x2x1", "ct4p-hightpu-4t", 1; 8: "2x2x2", "ct4p-hightpu-4t", 2; 16: "2x2x4", "ct4p-hightpu-4t", 4;
            32: "2x4x4", "ct4p-hightpu-4t", 8; 64: "4x4x4", "ct4p-hightpu-4t", 16; 128: "4x4x8", "ct4p-hightpu-4t", 32;
            256: "4x8x8", "ct4p-hightpu-4t", 64; 512: "8x8x8", "ct4p-hightpu-4t", 128; 1024: "8x8x16", "ct4p-hightpu-4t", 256;
            2048: "8x16x16", "ct4p-hightpu-4t", 512; 4096: "16x16x16", "ct4p-hightpu-4t", 1024],
    },
    TpuFamily {
        name: "v5litepod",
        aliases: &["v5e", "tpu-v5-lite-podslice", "v5lite"],
        gke_type: "tpu-v5-lite-podslice",
        default_chips: 4,
        shapes: shapes![1: "1x1", "ct5lp-hightpu-1t", 1; 4: "2x2", "ct5lp-hightpu-4t", 1; 8: "2x4", "ct5lp-hightpu-8t", 1;
            16: "4x4", "ct5lp-hightpu-4t", 4; 32: "4x8", "ct5lp-hightpu-4t", 8; 64: "8x8", "ct5lp-hightpu-4t", 16;
            128: "8x16", "ct5lp-hightpu-4t", 32; 256: "16x16", "ct5lp-hightpu-4t", 64],
    },
    TpuFamily {
        name: "v5p",
        aliases: &["tpu-v5p-slice"],
        gke_type: "tpu-v5p-slice",
        default_chips: 8,
        shapes: shapes![8: "2x2x2", "ct5p-hightpu-4t", 2; 16: "2x2x4", "ct5p-hightpu-4t", 4; 32: "2x4x4", "ct5p-hightpu-4t", 8],
    },
    TpuFamily {
        name: "v6e",
        aliases: &["tpu-v6e-slice"],
        gke_type: "tpu-v6e-slice",
        default_chips: 8,
        shapes: shapes![8: "2x4", "ct6e-standard-4t", 2; 16: "4x4", "ct6e-standard-4t", 4],
    },
];

/// `gpu:N` preference order (Kinetic's).
const GPU_PREFERENCE: [&str; 8] = [
    "h100",
    "a100-80gb",
    "a100",
    "l4",
    "v100",
    "t4",
    "p100",
    "p4",
];
/// `tpu:N` preference order (Kinetic's).
const TPU_PREFERENCE: [&str; 5] = ["v6e", "v5p", "v5litepod", "v4", "v3"];

/// A fully resolved accelerator choice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub kind: Kind,
    /// Model or family (`l4`, `v5litepod`): the `{name}` of pool names.
    pub family: &'static str,
    /// GPUs per node, or TPU chips in the slice.
    pub count: u32,
    pub gke_accelerator_type: &'static str,
    pub machine_type: &'static str,
    /// TPU only.
    pub topology: Option<&'static str>,
    /// TPU only: hosts (nodes) per slice.
    pub hosts_per_slice: Option<u32>,
    pub spot: bool,
}

impl Resolved {
    /// `gpu-l4`, `gpu-a100x4`, `tpu-v5litepod-16` (plus `:spot` when spot).
    pub fn canonical(&self) -> String {
        let base = match self.kind {
            Kind::Gpu if self.count == 1 => format!("gpu-{}", self.family),
            Kind::Gpu => format!("gpu-{}x{}", self.family, self.count),
            Kind::Tpu => format!("tpu-{}-{}", self.family, self.count),
        };
        if self.spot {
            format!("{base}:spot")
        } else {
            base
        }
    }

    /// The canonical name without `:spot`.
    pub fn base_name(&self) -> String {
        Resolved {
            spot: false,
            ..self.clone()
        }
        .canonical()
    }

    /// Chips (TPU) or GPUs (GPU) on one node.
    pub fn per_node(&self) -> u32 {
        match self.kind {
            Kind::Gpu => self.count,
            Kind::Tpu => self.count / self.hosts_per_slice.unwrap_or(1).max(1),
        }
    }

    /// Multi-host TPU slices need COMPACT placement with a topology.
    pub fn is_multi_host(&self) -> bool {
        self.hosts_per_slice.is_some_and(|h| h > 1)
    }

    /// Pool id prefix: `gpu-l4`, `tpu-v5litepod` (the 4 hex are added by the caller).
    pub fn pool_prefix(&self) -> String {
        format!("{}-{}", self.kind.prefix(), self.family)
    }
}

/// What a user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// `cpu`: no accelerator.
    Cpu,
    Accelerator(Resolved),
}

/// An unusable spelling, with the closest valid names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAccelerator {
    pub input: String,
    pub reason: String,
    pub suggestions: Vec<String>,
}

impl fmt::Display for UnknownAccelerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown accelerator {:?}: {}", self.input, self.reason)?;
        if !self.suggestions.is_empty() {
            write!(f, "; did you mean {}?", self.suggestions.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownAccelerator {}

fn gpu(m: &'static GpuModel, count: u32, spot: bool) -> Option<Resolved> {
    let (_, mt) = m.counts.iter().find(|(c, _)| *c == count)?;
    Some(Resolved {
        kind: Kind::Gpu,
        family: m.name,
        count,
        gke_accelerator_type: m.gke_type,
        machine_type: mt,
        topology: None,
        hosts_per_slice: None,
        spot,
    })
}

fn tpu(f: &'static TpuFamily, shape: &'static TpuShape, spot: bool) -> Resolved {
    Resolved {
        kind: Kind::Tpu,
        family: f.name,
        count: shape.chips,
        gke_accelerator_type: f.gke_type,
        machine_type: shape.machine_type,
        topology: Some(shape.topology),
        hosts_per_slice: Some(shape.hosts),
        spot,
    }
}

fn find_gpu(name: &str) -> Option<&'static GpuModel> {
    GPUS.iter()
        .find(|m| m.name == name || m.aliases.contains(&name))
}

fn find_tpu(name: &str) -> Option<&'static TpuFamily> {
    let prefixed = format!("tpu-{name}");
    TPUS.iter().find(|f| {
        f.name == name || f.aliases.contains(&name) || f.aliases.contains(&prefixed.as_str())
    })
}

/// The first GPU model in order of preference with a machine of `n` GPUs.
fn preferred_gpu(n: u32, spot: bool) -> Option<Resolved> {
    GPU_PREFERENCE
        .iter()
        .filter_map(|name| find_gpu(name))
        .find_map(|m| gpu(m, n, spot))
}

/// The first TPU family in order of preference with a slice of `n` chips.
fn preferred_tpu(n: u32, spot: bool) -> Option<Resolved> {
    TPU_PREFERENCE
        .iter()
        .filter_map(|name| find_tpu(name))
        .find_map(|f| Some(tpu(f, f.shapes.iter().find(|s| s.chips == n)?, spot)))
}

/// Parse any accepted spelling.
pub fn parse(input: &str) -> Result<Choice, UnknownAccelerator> {
    let raw = input.trim().to_ascii_lowercase();
    let (body, spot) = match raw.strip_suffix(":spot") {
        Some(b) => (b.trim().to_owned(), true),
        None => (raw.clone(), false),
    };
    let err = |reason: String| UnknownAccelerator {
        input: input.trim().to_owned(),
        reason,
        suggestions: suggest(&body),
    };
    if body == "cpu" {
        if spot {
            return Err(err("cpu has no spot variant".into()));
        }
        return Ok(Choice::Cpu);
    }
    if body == "gpu" {
        return Ok(Choice::Accelerator(gpu(&GPUS[0], 1, spot).expect("l4 x1")));
    }
    if body == "tpu" {
        let f = find_tpu("v5litepod").expect("catalog");
        let s = f.shapes.iter().find(|s| s.chips == 4).expect("catalog");
        return Ok(Choice::Accelerator(tpu(f, s, spot)));
    }
    let count = |n: &str, rule: &str| n.parse::<u32>().map_err(|_| err(rule.into()));
    if let Some(n) = body.strip_prefix("gpu:") {
        let n = count(n, "gpu:N needs a number of GPUs")?;
        return preferred_gpu(n, spot)
            .map(Choice::Accelerator)
            .ok_or_else(|| err(format!("no GPU machine offers {n} GPUs per node")));
    }
    if let Some(n) = body.strip_prefix("tpu:") {
        let n = count(n, "tpu:N needs a number of chips")?;
        return preferred_tpu(n, spot)
            .map(Choice::Accelerator)
            .ok_or_else(|| err(format!("no TPU slice has {n} chips")));
    }
    let (hint, rest) = if let Some(r) = body.strip_prefix("gpu-") {
        (Some(Kind::Gpu), r)
    } else if let Some(r) = body.strip_prefix("tpu-") {
        // GKE's own TPU labels start with tpu- too (tpu-v5-lite-podslice).
        if find_tpu(&body).is_some() {
            (Some(Kind::Tpu), body.as_str())
        } else {
            (Some(Kind::Tpu), r)
        }
    } else {
        (None, body.as_str())
    };
    if hint != Some(Kind::Tpu)
        && let Some(r) = parse_gpu(rest, spot)
    {
        return r.map(Choice::Accelerator).map_err(err);
    }
    if hint != Some(Kind::Gpu)
        && let Some(r) = parse_tpu(rest, spot)
    {
        return r.map(Choice::Accelerator).map_err(err);
    }
    Err(err("not a GPU or TPU name".into()))
}

/// `None`: not a GPU name at all; `Some(Err)`: a GPU with an impossible count.
fn parse_gpu(s: &str, spot: bool) -> Option<Result<Resolved, String>> {
    if let Some(m) = find_gpu(s) {
        return Some(Ok(gpu(m, 1, spot).unwrap_or_else(|| {
            // Models sold only in 8s (h200, b200) default to their smallest count.
            let (c, _) = m.counts[0];
            gpu(m, c, spot).expect("first count")
        })));
    }
    let (name, count) = s.rsplit_once('x')?;
    let m = find_gpu(name)?;
    let Ok(n) = count.parse::<u32>() else {
        return Some(Err(format!("{count:?} is not a GPU count")));
    };
    Some(gpu(m, n, spot).ok_or_else(|| {
        let offered: Vec<String> = m.counts.iter().map(|(c, _)| c.to_string()).collect();
        format!(
            "{} comes with {} GPUs per node, not {n}",
            m.name,
            offered.join(", ")
        )
    }))
}

fn parse_tpu(s: &str, spot: bool) -> Option<Result<Resolved, String>> {
    if let Some(f) = find_tpu(s) {
        let shape = f.shapes.iter().find(|x| x.chips == f.default_chips)?;
        return Some(Ok(tpu(f, shape, spot)));
    }
    let (name, sel) = s.rsplit_once('-')?;
    let f = find_tpu(name)?;
    let shape = if sel.contains('x') {
        f.shapes.iter().find(|x| x.topology == sel)
    } else {
        let Ok(n) = sel.parse::<u32>() else {
            return Some(Err(format!(
                "{sel:?} is neither a chip count nor a topology"
            )));
        };
        f.shapes.iter().find(|x| x.chips == n)
    };
    Some(shape.map(|x| tpu(f, x, spot)).ok_or_else(|| {
        let offered: Vec<String> = f
            .shapes
            .iter()
            .map(|x| format!("{} ({})", x.chips, x.topology))
            .collect();
        format!("{} slices have {} chips", f.name, offered.join(", "))
    }))
}

/// Every canonical name (for listings and suggestions).
pub fn all() -> Vec<Resolved> {
    let mut v = Vec::new();
    for m in GPUS {
        for (c, _) in m.counts {
            v.extend(gpu(m, *c, false));
        }
    }
    for f in TPUS {
        for s in f.shapes {
            v.push(tpu(f, s, false));
        }
    }
    v
}

/// Up to five valid names closest to `input`.
pub fn suggest(input: &str) -> Vec<String> {
    use strsim::levenshtein;
    let mut names: Vec<String> = all().iter().map(Resolved::canonical).collect();
    names.extend(["cpu", "gpu", "tpu"].map(String::from));
    let target = input.trim_start_matches("gpu-").trim_start_matches("tpu-");
    let mut scored: Vec<(usize, String)> = names
        .into_iter()
        .map(|n| {
            let short = n
                .trim_start_matches("gpu-")
                .trim_start_matches("tpu-")
                .to_owned();
            (levenshtein(target, &short).min(levenshtein(input, &n)), n)
        })
        .collect();
    scored.sort();
    scored.into_iter().take(5).map(|(_, n)| n).collect()
}

/// Test support shared by the domain's test modules.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Choice, Resolved, parse};

    /// The accelerator `s` spells; panics (naming `s`) if it is not one.
    pub(crate) fn acc(s: &str) -> Resolved {
        match parse(s) {
            Ok(Choice::Accelerator(r)) => r,
            other => panic!("{s}: {other:?}"),
        }
    }
}

#[cfg(test)]
#[path = "accelerators_tests.rs"]
mod tests;
