//! The simulated cloud of `serve --dev` (and of the tests): the built-in simulator's
//! address handed to the cloud clients as ordinary configuration, the same endpoints and
//! pinned manifests that production reads from `KINETIC_GCP_URL` and
//! `KINETIC_*_MANIFEST_*`.
//!
//! Invariant: only this composition root knows that the cloud is simulated; `cloud` and
//! `config` never import `sim`.

use anyhow::Context;

use crate::cloud::Cloud;
use crate::cloud::gcp::GcpConfig;
use crate::cloud::kube::manifests::ManifestConfig;
use crate::config::Settings;
use crate::sim::clock::ClockMode;
use crate::sim::{DEFAULT_SPEED, Sim, SimConfig};

/// With `--dev` and no `KINETIC_GCP_URL`: start the built-in simulator on
/// `sim_listen` and point `settings`' Google endpoints and manifests at it.
pub async fn start_sim(settings: &mut Settings) -> anyhow::Result<Option<Sim>> {
    if !settings.dev || settings.gcp_explicit {
        return Ok(None);
    }
    let speed = settings.sim_speed.unwrap_or(DEFAULT_SPEED);
    let config = SimConfig {
        clock: ClockMode::Auto { speed },
        ..Default::default()
    };
    let (sim, _) = Sim::start(config, settings.sim_listen)
        .await
        .with_context(|| format!("starting the cloud simulator on {}", settings.sim_listen))?;
    let call_timeout = settings.gcp.call_timeout;
    (settings.gcp, settings.manifests) = sim_config(&sim.url(), speed)?;
    settings.gcp.call_timeout = call_timeout;
    Ok(Some(sim))
}

/// Google endpoints (every API at the simulator's root, no credentials) and manifests
/// (the simulator's own, pinned) for a simulator at `sim_url` running `speed` times
/// faster than real time: polls are as frequent per virtual second as against Google.
pub fn sim_config(
    sim_url: &str,
    speed: f64,
) -> Result<(GcpConfig, ManifestConfig), url::ParseError> {
    let root = url::Url::parse(sim_url)?;
    let mut gcp = GcpConfig::single_root(&root);
    gcp.at_sim_speed(speed);
    Ok((gcp, crate::sim::kube::manifests::config(sim_url)))
}

/// Cloud clients for an instant simulator at `sim_url`, built as production builds them.
pub fn simulated_cloud(sim_url: &str, http: reqwest::Client) -> Result<Cloud, url::ParseError> {
    let (gcp, manifests) = sim_config(sim_url, 0.0)?;
    Ok(Cloud::new(gcp, manifests, http))
}
