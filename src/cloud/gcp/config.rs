//! Where each Google service lives and how calls authenticate.
//!
//! Invariant: every base URL ends with `/` and includes the service's version path, so
//! clients join relative paths (`projects/p/...`) the same way against Google, the
//! built-in simulator (one URL, a prefix per service) or a third-party emulator.

use std::time::Duration;

use crate::cloud::rate::DEFAULT_CEILING;
use crate::cloud::retry::DEFAULT_REQUEST_WINDOW;

use url::Url;

/// The seven services kineticd calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    Container,
    Compute,
    Storage,
    Iam,
    ResourceManager,
    ServiceUsage,
    ArtifactRegistry,
}

impl Service {
    pub const ALL: [Service; 7] = [
        Service::Container,
        Service::Compute,
        Service::Storage,
        Service::Iam,
        Service::ResourceManager,
        Service::ServiceUsage,
        Service::ArtifactRegistry,
    ];

    /// Short name used in metrics, errors, the simulator's prefixes and env variables.
    pub fn name(self) -> &'static str {
        match self {
            Service::Container => "container",
            Service::Compute => "compute",
            Service::Storage => "storage",
            Service::Iam => "iam",
            Service::ResourceManager => "cloudresourcemanager",
            Service::ServiceUsage => "serviceusage",
            Service::ArtifactRegistry => "artifactregistry",
        }
    }

    /// Google's production base URL.
    pub fn google_url(self) -> &'static str {
        match self {
            Service::Container => "https://container.googleapis.com/v1/",
            Service::Compute => "https://compute.googleapis.com/compute/v1/",
            Service::Storage => "https://storage.googleapis.com/storage/v1/",
            Service::Iam => "https://iam.googleapis.com/v1/",
            Service::ResourceManager => "https://cloudresourcemanager.googleapis.com/v3/",
            Service::ServiceUsage => "https://serviceusage.googleapis.com/v1/",
            Service::ArtifactRegistry => "https://artifactregistry.googleapis.com/v1/",
        }
    }

    /// The path this service has under one simulator (or proxy) root URL.
    pub fn sim_path(self) -> &'static str {
        match self {
            Service::Container => "container/v1/",
            Service::Compute => "compute/v1/",
            Service::Storage => "storage/v1/",
            Service::Iam => "iam/v1/",
            Service::ResourceManager => "cloudresourcemanager/v3/",
            Service::ServiceUsage => "serviceusage/v1/",
            Service::ArtifactRegistry => "artifactregistry/v1/",
        }
    }

    /// The variable that overrides this service's base URL (`KINETIC_GCP_CONTAINER_URL`, ...).
    pub fn env_var(self) -> String {
        format!("KINETIC_GCP_{}_URL", self.name().to_ascii_uppercase())
    }
}

/// How requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Application Default Credentials via gcp_auth (cloud-platform scope).
    Google,
    /// No Authorization header (emulators, the simulator).
    None,
}

#[derive(Debug, Clone)]
pub struct GcpConfig {
    pub container: Url,
    pub compute: Url,
    pub storage: Url,
    /// Storage media uploads (`/upload/storage/v1/`).
    pub storage_upload: Url,
    pub iam: Url,
    pub resource_manager: Url,
    pub service_usage: Url,
    pub artifact_registry: Url,
    pub auth: AuthMode,
    /// Timeout of one HTTP call, Google's and the clusters' Kubernetes APIs alike
    /// (`KINETIC_CLOUD_CALL_TIMEOUT_SECONDS`; LRO waits have their own deadlines). A call
    /// that hangs costs this long before its step retries it.
    pub call_timeout: Duration,
    /// How long-running operations are polled.
    pub poll: super::lro::PollSchedule,
    /// How long a call made while answering a request may keep retrying
    /// (`KINETIC_CLOUD_RETRY_SECONDS`); a step's calls get
    /// [`crate::cloud::retry::DEFAULT_STEP_WINDOW`].
    pub request_retry: Duration,
    /// The ceiling of the adaptive rate per project and API, in requests per second
    /// (`KINETIC_CLOUD_RATE_PER_SECOND`); 429s lower it, successes raise it back.
    pub rate_ceiling: f64,
    /// The cloud's clock ([`crate::cloud::clock`]): `None` is this machine's wall clock
    /// (Google's, kept by NTP); a simulator root sets its virtual clock
    /// (`{root}/sim/v1/clock`); `KINETIC_CLOCK_URL` overrides (`wall` for the wall clock).
    pub clock: Option<Url>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{var} is not a valid URL: {value:?}")]
    BadUrl { var: String, value: String },
    #[error("KINETIC_GCP_AUTH must be `google` or `none`, not {0:?}")]
    BadAuth(String),
    #[error("{CALL_TIMEOUT_VAR} must be a number of seconds between 0.1 and 3600, not {0:?}")]
    BadCallTimeout(String),
    #[error("{RETRY_VAR} must be a number of seconds between 0 and 600, not {0:?}")]
    BadRetry(String),
    #[error("{RATE_VAR} must be a number of requests per second between 1 and 100000, not {0:?}")]
    BadRate(String),
}

/// The variable that sets [`GcpConfig::request_retry`].
pub const RETRY_VAR: &str = "KINETIC_CLOUD_RETRY_SECONDS";
/// The variable that sets [`GcpConfig::rate_ceiling`].
pub const RATE_VAR: &str = "KINETIC_CLOUD_RATE_PER_SECOND";

/// The variable that sets [`GcpConfig::clock`].
pub const CLOCK_VAR: &str = "KINETIC_CLOCK_URL";

/// The variable that sets [`GcpConfig::call_timeout`].
pub const CALL_TIMEOUT_VAR: &str = "KINETIC_CLOUD_CALL_TIMEOUT_SECONDS";

/// The default [`GcpConfig::call_timeout`].
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A call timeout as written in [`CALL_TIMEOUT_VAR`]: seconds, 0.1 to 3600.
fn parse_call_timeout(value: &str) -> Result<Duration, ConfigError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| (0.1..=3600.0).contains(s))
        .map(Duration::from_secs_f64)
        .ok_or_else(|| ConfigError::BadCallTimeout(value.to_owned()))
}

/// A finite number within `min..=max`.
fn parse_number(value: &str, min: f64, max: f64) -> Option<f64> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
}

fn with_slash(mut u: Url) -> Url {
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    u
}

fn parse(var: &str, value: &str) -> Result<Url, ConfigError> {
    Url::parse(value)
        .map(with_slash)
        .map_err(|_| ConfigError::BadUrl {
            var: var.to_owned(),
            value: value.to_owned(),
        })
}

impl GcpConfig {
    /// Google's production endpoints with ADC.
    pub fn google() -> GcpConfig {
        let u = |s: Service| Url::parse(s.google_url()).expect("static URL");
        GcpConfig {
            container: u(Service::Container),
            compute: u(Service::Compute),
            storage: u(Service::Storage),
            storage_upload: Url::parse("https://storage.googleapis.com/upload/storage/v1/")
                .expect("static URL"),
            iam: u(Service::Iam),
            resource_manager: u(Service::ResourceManager),
            service_usage: u(Service::ServiceUsage),
            artifact_registry: u(Service::ArtifactRegistry),
            auth: AuthMode::Google,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            poll: Default::default(),
            request_retry: DEFAULT_REQUEST_WINDOW,
            rate_ceiling: DEFAULT_CEILING,
            clock: None,
        }
    }

    /// Every service under one root (the simulator): `{root}/container/v1/`, ...
    pub fn single_root(root: &Url) -> GcpConfig {
        let root = with_slash(root.clone());
        let j = |s: Service| root.join(s.sim_path()).expect("joinable");
        GcpConfig {
            container: j(Service::Container),
            compute: j(Service::Compute),
            storage: j(Service::Storage),
            storage_upload: root.join("upload/storage/v1/").expect("joinable"),
            iam: j(Service::Iam),
            resource_manager: j(Service::ResourceManager),
            service_usage: j(Service::ServiceUsage),
            artifact_registry: j(Service::ArtifactRegistry),
            auth: AuthMode::None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            poll: Default::default(),
            request_retry: DEFAULT_REQUEST_WINDOW,
            rate_ceiling: DEFAULT_CEILING,
            clock: Some(root.join("sim/v1/clock").expect("joinable")),
        }
    }

    /// From the environment: `KINETIC_GCP_URL` (one root for all), then per-service
    /// `KINETIC_GCP_<SERVICE>_URL`, `STORAGE_EMULATOR_HOST`, `KINETIC_GCP_AUTH`,
    /// `KINETIC_CLOUD_CALL_TIMEOUT_SECONDS`.
    pub fn from_env() -> Result<GcpConfig, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<GcpConfig, ConfigError> {
        let mut cfg = match get("KINETIC_GCP_URL") {
            Some(root) => GcpConfig::single_root(&parse("KINETIC_GCP_URL", &root)?),
            None => GcpConfig::google(),
        };
        if let Some(host) = get("STORAGE_EMULATOR_HOST") {
            // Google's client libraries accept a bare host:port or a URL.
            let base = if host.contains("://") {
                host
            } else {
                format!("http://{host}")
            };
            let root = parse("STORAGE_EMULATOR_HOST", &base)?;
            cfg.storage = root.join("storage/v1/").expect("joinable");
            cfg.storage_upload = root.join("upload/storage/v1/").expect("joinable");
        }
        for s in Service::ALL {
            if let Some(v) = get(&s.env_var()) {
                let url = parse(&s.env_var(), &v)?;
                *cfg.url_mut(s) = url;
            }
        }
        if let Some(a) = get("KINETIC_GCP_AUTH") {
            cfg.auth = match a.as_str() {
                "google" => AuthMode::Google,
                "none" => AuthMode::None,
                other => return Err(ConfigError::BadAuth(other.to_owned())),
            };
        }
        if let Some(t) = get(CALL_TIMEOUT_VAR) {
            cfg.call_timeout = parse_call_timeout(&t)?;
        }
        if let Some(t) = get(RETRY_VAR) {
            cfg.request_retry = parse_number(&t, 0.0, 600.0)
                .map(Duration::from_secs_f64)
                .ok_or(ConfigError::BadRetry(t))?;
        }
        if let Some(r) = get(RATE_VAR) {
            cfg.rate_ceiling = parse_number(&r, 1.0, 100_000.0).ok_or(ConfigError::BadRate(r))?;
        }
        if let Some(c) = get(CLOCK_VAR) {
            cfg.clock = match c.trim() {
                "wall" => None,
                url => Some(Url::parse(url).map_err(|_| ConfigError::BadUrl {
                    var: CLOCK_VAR.to_owned(),
                    value: c.clone(),
                })?),
            };
        }
        Ok(cfg)
    }

    /// Against a simulator whose virtual time runs `speed` times faster than real time:
    /// operations polled, and the adaptive rate's ceiling raised, by the same factor, so
    /// kineticd makes as many calls per virtual second as against Google and its rate
    /// limit is not hit by the compressed clock alone. Speed 0 (instant) or 1 changes
    /// only the poll schedule's floor ([`super::lro::PollSchedule::for_speed`]).
    pub fn at_sim_speed(&mut self, speed: f64) {
        self.poll = super::lro::PollSchedule::for_speed(speed);
        if speed.is_finite() && speed > 1.0 {
            self.rate_ceiling *= speed;
        }
    }

    pub fn url(&self, s: Service) -> &Url {
        match s {
            Service::Container => &self.container,
            Service::Compute => &self.compute,
            Service::Storage => &self.storage,
            Service::Iam => &self.iam,
            Service::ResourceManager => &self.resource_manager,
            Service::ServiceUsage => &self.service_usage,
            Service::ArtifactRegistry => &self.artifact_registry,
        }
    }

    fn url_mut(&mut self, s: Service) -> &mut Url {
        match s {
            Service::Container => &mut self.container,
            Service::Compute => &mut self.compute,
            Service::Storage => &mut self.storage,
            Service::Iam => &mut self.iam,
            Service::ResourceManager => &mut self.resource_manager,
            Service::ServiceUsage => &mut self.service_usage,
            Service::ArtifactRegistry => &mut self.artifact_registry,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_precedence() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(a, _)| *a == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let c = GcpConfig::from_lookup(env(&[])).unwrap();
        assert_eq!(c.container.as_str(), "https://container.googleapis.com/v1/");
        assert_eq!(c.auth, AuthMode::Google);
        let c = GcpConfig::from_lookup(env(&[
            ("KINETIC_GCP_URL", "http://127.0.0.1:8090"),
            ("STORAGE_EMULATOR_HOST", "localhost:4443"),
            ("KINETIC_GCP_IAM_URL", "http://iam.local/v1"),
        ]))
        .unwrap();
        assert_eq!(c.container.as_str(), "http://127.0.0.1:8090/container/v1/");
        assert_eq!(c.storage.as_str(), "http://localhost:4443/storage/v1/");
        assert_eq!(
            c.storage_upload.as_str(),
            "http://localhost:4443/upload/storage/v1/"
        );
        assert_eq!(c.iam.as_str(), "http://iam.local/v1/");
        assert_eq!(c.auth, AuthMode::None);
        assert!(GcpConfig::from_lookup(env(&[("KINETIC_GCP_AUTH", "maybe")])).is_err());
        assert_eq!(c.call_timeout, DEFAULT_CALL_TIMEOUT);
    }

    #[test]
    fn retry_window_and_rate_from_env() {
        let c = GcpConfig::from_lookup(|_| None).unwrap();
        assert_eq!(c.request_retry, DEFAULT_REQUEST_WINDOW);
        assert_eq!(c.rate_ceiling, DEFAULT_CEILING);
        let c = GcpConfig::from_lookup(|k| match k {
            RETRY_VAR => Some("2.5".into()),
            RATE_VAR => Some("20".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.request_retry, Duration::from_millis(2500));
        assert_eq!(c.rate_ceiling, 20.0);
        for (var, bad) in [
            (RETRY_VAR, "-1"),
            (RETRY_VAR, "soon"),
            (RATE_VAR, "0"),
            (RATE_VAR, "NaN"),
        ] {
            let e = GcpConfig::from_lookup(|k| (k == var).then(|| bad.to_owned())).unwrap_err();
            assert!(e.to_string().contains(var), "{bad}: {e}");
        }
    }

    #[test]
    fn a_faster_simulator_is_polled_and_paced_faster() {
        let mut c = GcpConfig::google();
        c.at_sim_speed(100.0);
        assert_eq!(c.rate_ceiling, DEFAULT_CEILING * 100.0);
        assert_eq!(c.poll, super::super::lro::PollSchedule::for_speed(100.0));
        let mut c = GcpConfig::google();
        c.at_sim_speed(0.0);
        assert_eq!(c.rate_ceiling, DEFAULT_CEILING);
    }

    #[test]
    fn call_timeout_from_env() {
        let one = |v: &'static str| move |k: &str| (k == CALL_TIMEOUT_VAR).then(|| v.to_owned());
        let c = GcpConfig::from_lookup(one("2.5")).unwrap();
        assert_eq!(c.call_timeout, Duration::from_millis(2500));
        for bad in ["0", "-1", "soon", "4000", "NaN"] {
            let e = GcpConfig::from_lookup(one(bad)).unwrap_err();
            assert!(e.to_string().contains(CALL_TIMEOUT_VAR), "{bad}: {e}");
        }
    }
}
