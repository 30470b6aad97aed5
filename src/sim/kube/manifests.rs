//! The simulator's own small LeaderWorkerSet and NVIDIA driver installer manifests,
//! served at `/sim/v1/manifests/...` so that tests and `serve --dev` never reach the
//! internet, with their sha256 digests for pinning.
//!
//! Invariant: each `*_SHA256` constant is the digest of the embedded file (a unit test
//! keeps them in sync).

use crate::cloud::kube::manifests::{ManifestConfig, ManifestSpec};

pub const LWS_FILE: &str = "lws-v0.8.0.yaml";
pub const LWS_PATH: &str = "/sim/v1/manifests/lws-v0.8.0.yaml";
pub const LWS_YAML: &str = include_str!("manifests/lws-v0.8.0.yaml");
pub const LWS_SHA256: &str = "f1be3c4c8f65204ee09d75fd176b28a543b2dfd4e8038ac18d2770d312660529";

pub const NVIDIA_DRIVER_FILE: &str = "nvidia-driver-installer.yaml";
pub const NVIDIA_DRIVER_PATH: &str = "/sim/v1/manifests/nvidia-driver-installer.yaml";
pub const NVIDIA_DRIVER_YAML: &str = include_str!("manifests/nvidia-driver-installer.yaml");
pub const NVIDIA_DRIVER_SHA256: &str =
    "9e83e11e678323f757a7339e52a1ac9fc8e4af4d404be4707d87df7df933a084";

/// kineticd's manifest configuration pointing at the simulator listening at
/// `sim_base_url` (`serve --dev`, tests): pinned to the digests above.
pub fn config(sim_base_url: &str) -> ManifestConfig {
    let base = sim_base_url.trim_end_matches('/');
    let defaults = ManifestConfig::default();
    ManifestConfig {
        lws: ManifestSpec {
            url: format!("{base}{LWS_PATH}"),
            sha256: Some(LWS_SHA256.into()),
            ..defaults.lws
        },
        nvidia_driver: ManifestSpec {
            url: format!("{base}{NVIDIA_DRIVER_PATH}"),
            sha256: Some(NVIDIA_DRIVER_SHA256.into()),
            ..defaults.nvidia_driver
        },
    }
}

/// The body of a served manifest file.
pub fn by_file(file: &str) -> Option<&'static str> {
    match file {
        LWS_FILE => Some(LWS_YAML),
        NVIDIA_DRIVER_FILE => Some(NVIDIA_DRIVER_YAML),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::kube::manifests::sha256_hex;

    #[test]
    fn digests_match_the_files() {
        assert_eq!(
            sha256_hex(LWS_YAML.as_bytes()),
            LWS_SHA256,
            "update LWS_SHA256"
        );
        assert_eq!(
            sha256_hex(NVIDIA_DRIVER_YAML.as_bytes()),
            NVIDIA_DRIVER_SHA256,
            "update NVIDIA_DRIVER_SHA256"
        );
    }

    #[test]
    fn manifests_parse() {
        let lws = crate::cloud::kube::parse_manifest(LWS_YAML).expect("lws");
        assert_eq!(lws.len(), 6);
        let ds = crate::cloud::kube::parse_manifest(NVIDIA_DRIVER_YAML).expect("driver");
        assert_eq!(ds.len(), 1);
    }
}
