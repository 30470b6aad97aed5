//! CUDA in an image tag versus the driver a GPU pool runs (data: `cuda_drivers.csv`,
//! sources noted in it).
//!
//! Invariant: a pool's CUDA ceiling is only ever read from the table; when the table
//! does not know the driver (installation disabled, an unlisted GKE version with no
//! older row) the answer is `None` and nothing is claimed.

use std::collections::BTreeMap;
use std::sync::LazyLock;

/// A CUDA version, `(major, minor)`.
pub type Cuda = (u32, u32);

const TABLE: &str = include_str!("cuda_drivers.csv");

struct Table {
    /// Driver branch -> newest CUDA it supports.
    drivers: BTreeMap<u32, Cuda>,
    /// (GKE minor `(1, 31)`, DEFAULT|LATEST) -> driver branch.
    gke: BTreeMap<((u32, u32), String), u32>,
}

fn pair(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

static TABLE_DATA: LazyLock<Table> = LazyLock::new(|| {
    let mut t = Table {
        drivers: BTreeMap::new(),
        gke: BTreeMap::new(),
    };
    for line in TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split(',').collect();
        match cols[..] {
            ["driver", branch, cuda] => {
                if let (Ok(b), Some(c)) = (branch.parse(), pair(cuda)) {
                    t.drivers.insert(b, c);
                }
            }
            ["gke", key, branch] => {
                if let (Some((minor, which)), Ok(b)) = (key.split_once(':'), branch.parse())
                    && let Some(m) = pair(minor)
                {
                    t.gke.insert((m, which.to_owned()), b);
                }
            }
            _ => {}
        }
    }
    t
});

/// Newest CUDA a driver (`550.90.07`, or a branch `550`) supports.
pub fn driver_max_cuda(driver: &str) -> Option<Cuda> {
    let branch: u32 = driver.split('.').next()?.parse().ok()?;
    TABLE_DATA
        .drivers
        .range(..=branch)
        .next_back()
        .map(|(_, c)| *c)
}

/// The driver branch GKE installs for `which` (DEFAULT or LATEST) on `gke_version`.
pub fn gke_driver(gke_version: &str, which: &str) -> Option<u32> {
    let minor = pair(gke_version.split('-').next()?)?;
    TABLE_DATA
        .gke
        .iter()
        .filter(|((m, w), _)| *m <= minor && w == which)
        .max_by_key(|((m, _), _)| *m)
        .map(|(_, b)| *b)
}

/// The driver a pool runs, as the table knows it: (driver as written, newest CUDA).
pub fn pool_max_cuda(
    driver_version: Option<&str>,
    gke_version: Option<&str>,
) -> Option<(String, Cuda)> {
    let managed = |which: &str| {
        let b = gke_driver(gke_version?, which)?;
        Some((format!("{which} (R{b})"), driver_max_cuda(&b.to_string())?))
    };
    match driver_version {
        // Kinetic's installer DaemonSet installs GKE's default driver.
        None | Some("DEFAULT") => managed("DEFAULT"),
        Some("LATEST") => managed("LATEST"),
        Some("INSTALLATION_DISABLED") => None,
        Some(v) => Some((v.to_owned(), driver_max_cuda(v)?)),
    }
}

/// The CUDA version an image is built for, read off its tag: `nvidia/cuda:12.8.0-...`,
/// `...:2.5.1-cuda12.4-cudnn9-runtime`, `...:2.4.0-cu121`.
pub fn image_cuda(image: &str) -> Option<Cuda> {
    let (repo, tag) = image.rsplit_once(':').filter(|(_, t)| !t.contains('/'))?;
    if repo.ends_with("/cuda") {
        return pair(tag);
    }
    tag.split(['-', '_']).find_map(|part| {
        if let Some(v) = part.strip_prefix("cuda") {
            return pair(v);
        }
        let digits = part.strip_prefix("cu")?;
        if digits.len() == 3 && digits.chars().all(|c| c.is_ascii_digit()) {
            Some((digits[..2].parse().ok()?, digits[2..].parse().ok()?))
        } else {
            None
        }
    })
}

/// `12.4`.
pub fn show(c: Cuda) -> String {
    format!("{}.{}", c.0, c.1)
}
