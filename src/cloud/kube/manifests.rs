//! Manifests kineticd applies to every cluster (the LeaderWorkerSet controller and the
//! NVIDIA COS driver installer): where they come from, and their download checked
//! against a pinned sha256. (The workflows cache downloaded bodies in PostgreSQL:
//! `ops::workflows::cluster::manifest_cache`.)
//!
//! Invariant: a downloaded body is returned only if it hashes to the pinned digest (when
//! one is configured).

use std::time::Duration;

use sha2::{Digest, Sha256};

use super::KubeError;

/// LeaderWorkerSet release manifest (kubernetes-sigs/lws).
pub const LWS_VERSION: &str = "v0.8.0";
pub const LWS_URL: &str =
    "https://github.com/kubernetes-sigs/lws/releases/download/v0.8.0/manifests.yaml";
/// NVIDIA driver installer for Container-Optimized OS (GoogleCloudPlatform/container-engine-accelerators),
/// pinned to a fixed commit (the file's last change, 2025-07-02), never a moving branch:
/// the same URL always serves the same body, which [`NVIDIA_DRIVER_SHA256`] pins.
pub const NVIDIA_DRIVER_REVISION: &str = "f2cf4197a5c3f0f20133be15d5fad8b7453beed5";
pub const NVIDIA_DRIVER_VERSION: &str = "cos-preloaded@f2cf4197a5c3";
pub const NVIDIA_DRIVER_URL: &str = "https://raw.githubusercontent.com/GoogleCloudPlatform/container-engine-accelerators/f2cf4197a5c3f0f20133be15d5fad8b7453beed5/nvidia-driver-installer/cos/daemonset-preloaded.yaml";
/// sha256 of `nvidia-driver-installer/cos/daemonset-preloaded.yaml` at that commit.
pub const NVIDIA_DRIVER_SHA256: &str =
    "41c303c5f1c1279eae47f5e183591b12e2cc4176523ad5764ab1081c1b9d27ee";

/// The LWS controller Deployment the `up` workflow waits for.
pub const LWS_NAMESPACE: &str = "lws-system";
pub const LWS_DEPLOYMENT: &str = "lws-controller-manager";
/// The driver installer DaemonSet.
pub const NVIDIA_DRIVER_NAMESPACE: &str = "kube-system";
pub const NVIDIA_DRIVER_DAEMONSET: &str = "nvidia-driver-installer";

/// A manifest pinned by URL, version and (optionally) sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSpec {
    /// Short name for messages (`lws`, `nvidia-driver-installer`).
    pub name: String,
    pub url: String,
    pub version: String,
    /// Lowercase hex sha256 of the body. `None`: pinned by the first fetch.
    pub sha256: Option<String>,
}

/// The manifests kineticd knows about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestConfig {
    pub lws: ManifestSpec,
    pub nvidia_driver: ManifestSpec,
}

/// A sha256 as lowercase hex, or an error naming the variable it came from.
fn parse_sha256(var: &str, v: &str) -> Result<String, KubeError> {
    let v = v.trim().to_ascii_lowercase();
    if v.len() == 64 && v.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(v)
    } else {
        Err(KubeError::Config(format!(
            "{var} must be 64 hex digits (a sha256)"
        )))
    }
}

impl Default for ManifestConfig {
    /// GitHub's URLs. The driver installer is pinned by commit and digest; the LWS release
    /// asset's digest was not known when this was built (no network on build machines),
    /// so its first download pins it (or set `KINETIC_LWS_MANIFEST_SHA256`).
    fn default() -> Self {
        ManifestConfig {
            lws: ManifestSpec {
                name: "lws".into(),
                url: LWS_URL.into(),
                version: LWS_VERSION.into(),
                sha256: None,
            },
            nvidia_driver: ManifestSpec {
                name: "nvidia-driver-installer".into(),
                url: NVIDIA_DRIVER_URL.into(),
                version: NVIDIA_DRIVER_VERSION.into(),
                sha256: Some(NVIDIA_DRIVER_SHA256.into()),
            },
        }
    }
}

impl ManifestConfig {
    /// Defaults overridden by `KINETIC_LWS_MANIFEST_URL` / `_SHA256` and
    /// `KINETIC_NVIDIA_DRIVER_MANIFEST_URL` / `_SHA256`.
    pub fn from_env() -> Result<ManifestConfig, KubeError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As [`ManifestConfig::from_env`], reading variables through `get`. A URL override
    /// without a digest drops the default digest (it belongs to the default URL).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ManifestConfig, KubeError> {
        let mut cfg = ManifestConfig::default();
        for (spec, prefix) in [
            (&mut cfg.lws, ENV_PREFIXES[0]),
            (&mut cfg.nvidia_driver, ENV_PREFIXES[1]),
        ] {
            if let Some(url) = get(&format!("{prefix}_URL")).filter(|u| !u.trim().is_empty()) {
                spec.url = url.trim().to_owned();
                spec.sha256 = None;
            }
            let var = format!("{prefix}_SHA256");
            if let Some(sha) = get(&var).filter(|s| !s.trim().is_empty()) {
                spec.sha256 = Some(parse_sha256(&var, &sha)?);
            }
        }
        Ok(cfg)
    }

    /// The variables [`ManifestConfig::from_env`] reads back as this configuration
    /// (`KINETIC_LWS_MANIFEST_URL`, `..._SHA256`, ...), in that order.
    pub fn env(&self) -> Vec<(String, String)> {
        [&self.lws, &self.nvidia_driver]
            .into_iter()
            .zip(ENV_PREFIXES)
            .flat_map(|(spec, prefix)| {
                let url = (format!("{prefix}_URL"), spec.url.clone());
                let sha = spec.sha256.clone().map(|s| (format!("{prefix}_SHA256"), s));
                std::iter::once(url).chain(sha)
            })
            .collect()
    }
}

/// Environment variable prefixes of the LWS and driver installer manifests.
const ENV_PREFIXES: [&str; 2] = ["KINETIC_LWS_MANIFEST", "KINETIC_NVIDIA_DRIVER_MANIFEST"];

/// Lowercase hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A manifest body as downloaded, with its sha256 (checked against the pinned digest
/// when there is one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    pub sha256: String,
    pub body: String,
}

const MAX_MANIFEST_BYTES: usize = 16 * 1024 * 1024;
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Download the body of `spec` over `http`; a body that does not hash to the pinned
/// digest (if any) is refused with [`KubeError::ChecksumMismatch`].
pub async fn download(
    http: &reqwest::Client,
    spec: &ManifestSpec,
) -> Result<Downloaded, KubeError> {
    let bytes = fetch_bytes(http, &spec.url).await?;
    let actual = sha256_hex(&bytes);
    if let Some(expected) = &spec.sha256
        && *expected != actual
    {
        return Err(KubeError::ChecksumMismatch {
            url: spec.url.clone(),
            expected: expected.clone(),
            actual,
        });
    }
    let body = String::from_utf8(bytes)
        .map_err(|_| KubeError::Manifest(format!("{} is not UTF-8 text", spec.url)))?;
    Ok(Downloaded {
        sha256: actual,
        body,
    })
}

async fn fetch_bytes(http: &reqwest::Client, url: &str) -> Result<Vec<u8>, KubeError> {
    let fail = |status: Option<u16>, message: String| KubeError::Download {
        url: url.to_owned(),
        status,
        message,
    };
    let resp = http
        .get(url)
        .timeout(DOWNLOAD_TIMEOUT)
        .send()
        .await
        .map_err(|e| fail(None, format!("{e:#}")))?;
    let status = resp.status();
    if !status.is_success() {
        return Err(fail(Some(status.as_u16()), format!("HTTP {status}")));
    }
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| fail(None, format!("reading the body: {e:#}")))?;
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(fail(None, format!("{} bytes is too large", bytes.len())));
    }
    Ok(bytes.to_vec())
}

/// One accelerator of a node pool, as GKE describes it (`config.accelerators[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolAccelerator {
    /// GKE accelerator type (`nvidia-l4`, `tpu-v5-lite-podslice`, ...).
    pub accelerator_type: String,
    /// `gpuDriverInstallationConfig.gpuDriverVersion`, if set.
    pub gpu_driver_version: Option<String>,
}

/// Whether the cluster needs the NVIDIA driver installer DaemonSet: some GPU pool has
/// no GKE-managed driver (`gpuDriverVersion` unset, unspecified or INSTALLATION_DISABLED).
pub fn needs_nvidia_driver_installer(pools: &[PoolAccelerator]) -> bool {
    pools.iter().any(|p| {
        p.accelerator_type.starts_with("nvidia-")
            && !matches!(p.gpu_driver_version.as_deref(), Some("DEFAULT" | "LATEST"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(t: &str, v: Option<&str>) -> PoolAccelerator {
        PoolAccelerator {
            accelerator_type: t.into(),
            gpu_driver_version: v.map(str::to_owned),
        }
    }

    #[test]
    fn driver_decision() {
        assert!(!needs_nvidia_driver_installer(&[]));
        assert!(!needs_nvidia_driver_installer(&[acc(
            "tpu-v5-lite-podslice",
            None
        )]));
        assert!(needs_nvidia_driver_installer(&[acc("nvidia-l4", None)]));
        assert!(needs_nvidia_driver_installer(&[acc(
            "nvidia-l4",
            Some("INSTALLATION_DISABLED")
        )]));
        assert!(!needs_nvidia_driver_installer(&[acc(
            "nvidia-l4",
            Some("LATEST")
        )]));
        assert!(needs_nvidia_driver_installer(&[
            acc("nvidia-l4", Some("DEFAULT")),
            acc("nvidia-tesla-t4", Some("GPU_DRIVER_VERSION_UNSPECIFIED")),
        ]));
    }

    #[test]
    fn env_overrides() {
        let sha = "AB".repeat(32);
        let cfg = ManifestConfig::from_lookup(|k| match k {
            "KINETIC_LWS_MANIFEST_URL" => Some("http://mirror/lws.yaml".into()),
            "KINETIC_LWS_MANIFEST_SHA256" => Some(sha.clone()),
            _ => None,
        })
        .unwrap();
        assert_eq!(cfg.lws.url, "http://mirror/lws.yaml");
        assert_eq!(cfg.lws.sha256.as_deref(), Some("ab".repeat(32).as_str()));
        assert_eq!(cfg.nvidia_driver, ManifestConfig::default().nvidia_driver);
        let bad = ManifestConfig::from_lookup(|k| {
            (k == "KINETIC_NVIDIA_DRIVER_MANIFEST_SHA256").then(|| "xyz".to_owned())
        });
        assert!(matches!(bad, Err(KubeError::Config(_))));
    }

    #[test]
    fn env_reads_back_as_the_same_config() {
        let cfg = ManifestConfig {
            lws: ManifestSpec {
                url: "http://sim/lws.yaml".into(),
                sha256: Some("cd".repeat(32)),
                ..ManifestConfig::default().lws
            },
            ..ManifestConfig::default()
        };
        let env = cfg.env();
        assert_eq!(env[0].0, "KINETIC_LWS_MANIFEST_URL");
        let back = ManifestConfig::from_lookup(|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
        .unwrap();
        assert_eq!(back, cfg);
    }

    #[test]
    fn nvidia_installer_is_pinned_to_a_fixed_revision() {
        let spec = ManifestConfig::default().nvidia_driver;
        assert!(
            spec.url.contains(&format!(
                "/container-engine-accelerators/{NVIDIA_DRIVER_REVISION}/"
            )),
            "{}",
            spec.url
        );
        assert!(!spec.url.contains("/master/") && !spec.url.contains("/main/"));
        assert_eq!(NVIDIA_DRIVER_REVISION.len(), 40, "a full commit hash");
        assert_eq!(spec.sha256.as_deref(), Some(NVIDIA_DRIVER_SHA256));
        assert!(spec.version.ends_with(&NVIDIA_DRIVER_REVISION[..12]));
    }

    #[test]
    fn digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
