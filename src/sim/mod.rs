//! The cloud simulator: one axum app that speaks the Google Cloud REST APIs kineticd uses
//! (each under its own prefix: `/container/v1/`, `/compute/v1/`, `/storage/v1/` and
//! `/upload/storage/v1/`, `/iam/v1/`, `/cloudresourcemanager/v3/`, `/serviceusage/v1/`,
//! `/artifactregistry/v1/`) and, per simulated GKE cluster, the Kubernetes API
//! (`/kube/{cluster}/...`), with admin endpoints under `/sim/v1/`.
//!
//! Invariant: kineticd reaches the simulator only through its configurable base URLs,
//! with the same clients it uses against Google; the simulator keeps real state machines
//! (never canned replies), so the journal shows exactly what kineticd sent.

pub mod admin;
pub mod body;
pub mod clock;
pub mod error;
pub mod faults;
pub mod gcp;
pub mod journal;
pub mod kube;
pub mod world;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;

use clock::{Clock, ClockMode};
use error::Flavor;
use faults::{FaultKind, Faults};
use journal::{Journal, SimMethod};
use world::{World, WorldGuard};

/// Default speed: GKE's ~5 minute cluster create takes about 3 seconds.
pub const DEFAULT_SPEED: f64 = 100.0;

#[derive(Debug, Clone)]
pub struct SimConfig {
    pub clock: ClockMode,
    /// Regional quota limits by metric (every region), e.g. `NVIDIA_L4_GPUS` -> 16.
    pub quotas: BTreeMap<String, f64>,
    /// (zone, GKE accelerator type) pairs that are out of stock.
    pub stockouts: Vec<(String, String)>,
    /// The GKE version new clusters get when they ask for none (their release
    /// channel's default); tests set an older one to see version checks refuse.
    pub gke_version: String,
}

impl Default for SimConfig {
    fn default() -> Self {
        let quotas = [
            ("CPUS", 1000.0),
            ("NVIDIA_L4_GPUS", 32.0),
            ("PREEMPTIBLE_NVIDIA_L4_GPUS", 32.0),
            ("NVIDIA_T4_GPUS", 32.0),
            ("PREEMPTIBLE_NVIDIA_T4_GPUS", 32.0),
            ("NVIDIA_V100_GPUS", 16.0),
            ("NVIDIA_P4_GPUS", 16.0),
            ("NVIDIA_P100_GPUS", 16.0),
            ("NVIDIA_A100_GPUS", 16.0),
            ("PREEMPTIBLE_NVIDIA_A100_GPUS", 16.0),
            ("NVIDIA_A100_80GB_GPUS", 16.0),
            ("TPU_LITE_PODSLICE_V5", 64.0),
            ("PREEMPTIBLE_TPU_LITE_PODSLICE_V5", 64.0),
            ("TPU_PODSLICE_V4", 64.0),
            ("PREEMPTIBLE_TPU_PODSLICE_V4", 64.0),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        SimConfig {
            clock: ClockMode::Auto {
                speed: DEFAULT_SPEED,
            },
            quotas,
            stockouts: Vec::new(),
            gke_version: gcp::container::DEFAULT_VERSION.to_owned(),
        }
    }
}

struct Inner {
    config: SimConfig,
    clock: Clock,
    world: Mutex<World>,
    faults: Faults,
    journal: Journal,
    url: OnceLock<String>,
}

/// A running (or routable) simulator; cheap to clone.
#[derive(Clone)]
pub struct Sim(Arc<Inner>);

impl Sim {
    pub fn new(config: SimConfig) -> Sim {
        Sim(Arc::new(Inner {
            clock: Clock::new(config.clock),
            world: Mutex::new(World::new(&config)),
            config,
            faults: Faults::default(),
            journal: Journal::default(),
            url: OnceLock::new(),
        }))
    }

    pub fn config(&self) -> &SimConfig {
        &self.0.config
    }

    pub fn clock(&self) -> &Clock {
        &self.0.clock
    }

    pub fn faults(&self) -> &Faults {
        &self.0.faults
    }

    pub fn journal(&self) -> &Journal {
        &self.0.journal
    }

    /// The simulator's base URL (`http://127.0.0.1:PORT`), once it listens.
    pub fn url(&self) -> String {
        self.0.url.get().cloned().unwrap_or_default()
    }

    /// The environment that points a separate `kineticd serve` at this simulator (what
    /// `kineticd sim` prints): every Google service under its URL without credentials,
    /// its speed (so polls scale with it) and the manifests it serves, pinned by digest,
    /// so that nothing is fetched from the internet.
    pub fn serve_env(&self) -> Vec<(String, String)> {
        let url = self.url();
        let mut env = vec![
            ("KINETIC_GCP_URL".to_owned(), url.clone()),
            ("KINETIC_GCP_AUTH".to_owned(), "none".to_owned()),
        ];
        if let ClockMode::Auto { speed } = self.clock().mode() {
            env.push(("KINETIC_SIM_SPEED".to_owned(), speed.to_string()));
        }
        env.extend(kube::manifests::config(&url).env());
        env
    }

    /// The gcloud properties that point Google's own CLI at this simulator: no
    /// credentials, and each API kineticd uses at its prefix here (the URL forms gcloud
    /// expects: Compute and Storage with their version, the others without).
    pub fn gcloud_properties(&self) -> Vec<(String, String)> {
        let url = self.url();
        let mut props = vec![("auth/disable_credentials".to_owned(), "true".to_owned())];
        props.extend(
            [
                ("artifactregistry", "artifactregistry/"),
                ("compute", "compute/v1/"),
                ("container", "container/"),
                ("iam", "iam/"),
                ("serviceusage", "serviceusage/"),
                ("storage", "storage/v1/"),
            ]
            .into_iter()
            .map(|(api, path)| {
                (
                    format!("api_endpoint_overrides/{api}"),
                    format!("{url}/{path}"),
                )
            }),
        );
        props
    }

    /// The state, with every due change applied. Do not hold across an `.await`.
    pub fn world(&self) -> WorldGuard<'_> {
        let mut w = self.0.world.lock().unwrap_or_else(|p| p.into_inner());
        w.tick(&self.0.clock);
        WorldGuard(w)
    }

    /// Answer one call of `method` of `service`: the armed fault's response if one is
    /// armed (before `answer` runs, so a faulted call changes nothing), else what `answer`
    /// gives; tagged with `method` either way.
    pub async fn serve<R: IntoResponse>(
        &self,
        (service, flavor): (&str, Flavor),
        method: &'static str,
        answer: impl FnOnce() -> R,
    ) -> Response {
        self.serve_forcing((service, flavor), method, &[], |_| answer())
            .await
    }

    /// [`Sim::serve`] for a method that reports the fault kinds in `forwarded` (quota,
    /// stockout) through its own answer, such as a failed operation: an armed fault of
    /// such a kind is handed to `answer` instead of being answered right away.
    pub async fn serve_forcing<R: IntoResponse>(
        &self,
        (service, flavor): (&str, Flavor),
        method: &'static str,
        forwarded: &[FaultKind],
        answer: impl FnOnce(Option<FaultKind>) -> R,
    ) -> Response {
        let forced = match self.faults().take(service, method) {
            Some(k) if !forwarded.contains(&k) => {
                return tag(method, faults::respond(k, flavor).await);
            }
            forced => forced,
        };
        tag(method, world::answering(service, || answer(forced)))
    }

    pub fn router(&self) -> Router {
        Router::new()
            .merge(admin::routes())
            .merge(gcp::routes())
            .merge(kube::routes())
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                journal::record,
            ))
            .with_state(self.clone())
    }

    /// Listen on `addr` and serve in the background.
    pub async fn start(config: SimConfig, addr: SocketAddr) -> std::io::Result<(Sim, SocketAddr)> {
        let listener = TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let sim = Sim::new(config);
        let _ = sim.0.url.set(format!("http://{local}"));
        let router = sim.router();
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::error!(error = %e, "simulator stopped");
            }
        });
        tracing::info!(url = %sim.url(), "cloud simulator listening");
        Ok((sim, local))
    }
}

/// Mark a response with the Google method it served (for the journal).
pub fn tag(method: &'static str, r: impl IntoResponse) -> Response {
    let mut resp = r.into_response();
    resp.extensions_mut().insert(SimMethod(method));
    resp
}
