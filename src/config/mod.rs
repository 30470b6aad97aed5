//! One typed `Settings`, built from flags and `KINETIC_*` environment variables and
//! validated before anything starts.
//!
//! Invariant: a `Settings` value is internally consistent (for example, development
//! identity is only ever paired with a loopback listen address).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::cloud::gcp::GcpConfig;
use crate::cloud::kube::manifests::ManifestConfig;
use crate::domain::Email;
use crate::domain::pricing::PriceTable;
use crate::domain::webhooks::Allow;

pub mod limits;
pub mod reference;

pub use limits::{LimitArgs, Limits};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AuthMode {
    /// Identity from the `X-Kinetic-User` header; loopback only.
    Dev,
    /// Identity from the Identity-Aware Proxy's signed JWT.
    Iap,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Json,
    Pretty,
}

/// Flags of `kineticd serve`; every flag also reads its environment variable.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Run the whole product locally: development identity, the built-in simulator and a
    /// private PostgreSQL when DATABASE_URL is unset.
    #[arg(long)]
    pub dev: bool,
    /// Address the API listens on (`0.0.0.0:8080` in a container).
    #[arg(long, env = "KINETIC_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// PostgreSQL URL (`postgres://user:password@host:port/db`). Required without --dev;
    /// unset with --dev: a private server under the data folder.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Largest number of database connections this process opens (at least 2; waiters of
    /// `:wait`/`:watch` hold none).
    #[arg(long, env = "KINETIC_DB_MAX_CONNECTIONS", default_value_t = 20)]
    pub db_max_connections: u32,
    /// Identity source: `iap` (the Identity-Aware Proxy's signed JWT) or `dev` (the
    /// `X-Kinetic-User` header; refused on a non-loopback listen address). Default `dev`
    /// with --dev, else `iap`.
    #[arg(long, env = "KINETIC_AUTH", value_enum)]
    pub auth: Option<AuthMode>,
    /// Where IAP's signing keys are fetched (cached; fetched again on an unknown `kid`).
    #[arg(
        long,
        env = "KINETIC_IAP_JWKS_URL",
        default_value = "https://www.gstatic.com/iap/verify/public_key-jwk"
    )]
    pub iap_jwks_url: String,
    /// Expected `aud` of IAP tokens, `/projects/NUMBER/global/backendServices/ID`;
    /// required with `iap` (see deploying.md for the command that prints it).
    #[arg(long, env = "KINETIC_IAP_AUDIENCE")]
    pub iap_audience: Option<String>,
    /// Comma-separated emails of service admins, who see and change everything.
    #[arg(long, env = "KINETIC_ADMINS", value_delimiter = ',')]
    pub admins: Vec<String>,
    /// Log output: `json` (one object a line) or `pretty`. Default `pretty` with --dev,
    /// else `json`; RUST_LOG filters.
    #[arg(long, env = "KINETIC_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Operations this process runs at once (0: API-only replica). Each is a task, and
    /// each of its steps a task of its own, that waits on Google holding no database
    /// connection (a write borrows one from the pool for its statement), so this bounds
    /// memory and cloud calls, not threads or connections.
    #[arg(long, env = "KINETIC_WORKERS", default_value_t = 256)]
    pub workers: usize,
    /// Seconds an operation's lease lasts without a heartbeat (1 to 3600): a dead worker's
    /// operation is resumed by another worker after it.
    #[arg(long, env = "KINETIC_LEASE_SECONDS", default_value_t = 30.0)]
    pub lease_seconds: f64,
    /// Days finished operations are kept before they are deleted.
    #[arg(long, env = "KINETIC_OPERATION_RETENTION_DAYS", default_value_t = 30)]
    pub operation_retention_days: u32,
    /// Seconds a request waiting for approval (the team's policy asks for it) waits
    /// before it ends CANCELLED with APPROVAL_EXPIRED (default 7 days).
    #[arg(long, env = "KINETIC_APPROVAL_TTL_SECONDS", default_value_t = 604_800)]
    pub approval_ttl_seconds: u64,
    /// Seconds between two samples of every RUNNING cluster's nodes by the usage
    /// collector (1 to 3600; one replica samples at a time).
    #[arg(long, env = "KINETIC_USAGE_INTERVAL_SECONDS", default_value_t = 60.0)]
    pub usage_interval_seconds: f64,
    /// Days audit events (`/v1/teams/{team}/events`) are kept before they are deleted.
    #[arg(long, env = "KINETIC_AUDIT_RETENTION_DAYS", default_value_t = 400)]
    pub audit_retention_days: u32,
    /// Enable the NOOP engine test workflow (`POST /v1/testing/noopOperations`): `true`
    /// or `false`, default `true` with --dev, else `false`.
    #[arg(long, env = "KINETIC_TEST_WORKFLOWS")]
    pub test_workflows: Option<bool>,
    /// Seconds in-flight steps get to finish after SIGTERM before their leases are handed
    /// back (keep the pod's terminationGracePeriodSeconds above it).
    #[arg(long, env = "KINETIC_SHUTDOWN_GRACE_SECONDS", default_value_t = 30)]
    pub shutdown_grace_seconds: u64,
    /// Where --dev runs the built-in cloud simulator.
    #[arg(long, env = "KINETIC_SIM_LISTEN", default_value = "127.0.0.1:8090")]
    pub sim_listen: SocketAddr,
    /// Simulator speed (virtual seconds per real second; 0 = instant; default 100): of the
    /// built-in simulator with --dev, or of the `kineticd sim` that KINETIC_GCP_URL points
    /// at (it prints this), so that operations are polled as often per virtual second as
    /// against Google.
    #[arg(long, env = "KINETIC_SIM_SPEED")]
    pub sim_speed: Option<f64>,
    /// JSON price table replacing the built-in estimates:
    /// `{"currency","perUnitHour":{"nvidia-l4":{"onDemand","spot"}}}` per GPU or TPU chip.
    #[arg(long, env = "KINETIC_PRICES_FILE")]
    pub prices_file: Option<PathBuf>,
    /// Which non-public addresses webhook deliveries may reach: `loopback` (127.0.0.0/8,
    /// ::1, localhost), `private` (RFC 1918, 100.64.0.0/10, fc00::/7), both
    /// comma-separated, or `none`; plain http:// only to those. Link-local and metadata
    /// addresses are never reached. Default `loopback` with --dev, else `none`.
    #[arg(long, env = "KINETIC_WEBHOOK_ALLOW")]
    pub webhook_allow: Option<String>,
    /// Folder for local state (the private PostgreSQL of --dev).
    #[arg(long, env = "KINETIC_DATA_DIR", default_value = ".kineticd")]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub limits: LimitArgs,
}

#[derive(Debug, Clone)]
pub enum Identity {
    Dev,
    Iap { jwks_url: String, audience: String },
}

/// Validated settings of a serving process.
#[derive(Debug, Clone)]
pub struct Settings {
    pub dev: bool,
    pub listen: SocketAddr,
    pub database_url: Option<String>,
    pub db_max_connections: u32,
    pub identity: Identity,
    pub admins: Vec<Email>,
    pub log_format: LogFormat,
    pub workers: usize,
    pub lease: Duration,
    pub operation_retention: Duration,
    /// How long a PENDING_APPROVAL operation waits for a decision.
    pub approval_ttl: Duration,
    /// How long audit events are kept (`KINETIC_AUDIT_RETENTION_DAYS`).
    pub audit_retention: Duration,
    /// Between two usage samples (`KINETIC_USAGE_INTERVAL_SECONDS`).
    pub usage_interval: Duration,
    pub test_workflows: bool,
    pub shutdown_grace: Duration,
    pub data_dir: PathBuf,
    /// Google endpoints and auth (`KINETIC_GCP_URL`, `KINETIC_GCP_<SERVICE>_URL`,
    /// `STORAGE_EMULATOR_HOST`, `KINETIC_GCP_AUTH`); `--dev` without `KINETIC_GCP_URL`
    /// uses the built-in simulator instead.
    pub gcp: GcpConfig,
    /// Whether the Google endpoints were configured explicitly (not the defaults).
    pub gcp_explicit: bool,
    /// Kubernetes manifests (LeaderWorkerSet, NVIDIA driver installer): URL, version, sha256.
    pub manifests: ManifestConfig,
    /// With --dev: the simulator's listen address and speed (`None`: the simulator's
    /// default).
    pub sim_listen: SocketAddr,
    pub sim_speed: Option<f64>,
    /// Price estimates (built-in, or from KINETIC_PRICES_FILE).
    pub prices: PriceTable,
    /// Rate, deadline and size limits (`config::limits`).
    pub limits: Limits,
    /// Non-public addresses webhooks may reach (`KINETIC_WEBHOOK_ALLOW`).
    pub webhook_allow: Allow,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "KINETIC_AUTH=dev trusts a plain header and is only allowed on a loopback address, \
         but the listen address is {0}: listen on 127.0.0.1 or use KINETIC_AUTH=iap"
    )]
    DevAuthNotLoopback(SocketAddr),
    #[error(
        "KINETIC_AUTH=iap needs KINETIC_IAP_AUDIENCE (the backend service audience, \
         /projects/NUMBER/global/backendServices/ID)"
    )]
    MissingAudience,
    #[error("KINETIC_ADMINS entry {0:?} is not an email address")]
    BadAdmin(String),
    #[error("Google endpoint configuration: {0}")]
    Gcp(#[from] crate::cloud::gcp::config::ConfigError),
    #[error("manifest configuration: {0}")]
    Manifests(String),
    #[error("KINETIC_PRICES_FILE {path}: {why}")]
    BadPrices { path: String, why: String },
    #[error("KINETIC_SIM_SPEED must be a number >= 0 (0 = every cloud operation finishes at once)")]
    BadSimSpeed,
    #[error("KINETIC_LEASE_SECONDS must be between 1 and 3600")]
    BadLease,
    #[error("KINETIC_USAGE_INTERVAL_SECONDS must be between 1 and 3600")]
    BadUsageInterval,
    #[error("KINETIC_DB_MAX_CONNECTIONS must be at least 2")]
    TooFewConnections,
    #[error("DATABASE_URL is required without --dev (with --dev a private PostgreSQL is started)")]
    MissingDatabase,
    #[error("KINETIC_WEBHOOK_ALLOW: {0}")]
    BadWebhookAllow(String),
    #[error(transparent)]
    Limits(#[from] limits::LimitError),
}

impl Settings {
    pub fn from_args(a: ServeArgs) -> Result<Settings, ConfigError> {
        let auth = a
            .auth
            .unwrap_or(if a.dev { AuthMode::Dev } else { AuthMode::Iap });
        let identity = match auth {
            AuthMode::Dev if !a.listen.ip().is_loopback() => {
                return Err(ConfigError::DevAuthNotLoopback(a.listen));
            }
            AuthMode::Dev => Identity::Dev,
            AuthMode::Iap => Identity::Iap {
                jwks_url: a.iap_jwks_url,
                audience: a
                    .iap_audience
                    .filter(|s| !s.trim().is_empty())
                    .ok_or(ConfigError::MissingAudience)?,
            },
        };
        let admins = a
            .admins
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| Email::parse(s).map_err(|_| ConfigError::BadAdmin(s.to_owned())))
            .collect::<Result<Vec<_>, _>>()?;
        if a.db_max_connections < 2 {
            return Err(ConfigError::TooFewConnections);
        }
        if !(1.0..=3600.0).contains(&a.lease_seconds) {
            return Err(ConfigError::BadLease);
        }
        if !(1.0..=3600.0).contains(&a.usage_interval_seconds) {
            return Err(ConfigError::BadUsageInterval);
        }
        let sim_speed = a.sim_speed;
        if sim_speed.is_some_and(|s| !s.is_finite() || s < 0.0) {
            return Err(ConfigError::BadSimSpeed);
        }
        let prices = match &a.prices_file {
            None => PriceTable::default(),
            Some(p) => {
                let bad = |why: String| ConfigError::BadPrices {
                    path: p.display().to_string(),
                    why,
                };
                let text = std::fs::read_to_string(p).map_err(|e| bad(e.to_string()))?;
                PriceTable::from_json(&text).map_err(|e| bad(e.to_string()))?
            }
        };
        let mut gcp = GcpConfig::from_env()?;
        let gcp_explicit = std::env::var_os("KINETIC_GCP_URL").is_some();
        if gcp_explicit && let Some(speed) = sim_speed {
            // A separate simulator at that speed: poll its operations (and pace calls)
            // accordingly.
            gcp.at_sim_speed(speed);
        }
        let manifests =
            ManifestConfig::from_env().map_err(|e| ConfigError::Manifests(e.to_string()))?;
        let limits = a.limits.validate()?;
        let webhook_allow = match &a.webhook_allow {
            Some(v) => Allow::parse(v).map_err(ConfigError::BadWebhookAllow)?,
            None => Allow {
                loopback: a.dev,
                private: false,
            },
        };
        let database_url = a.database_url.filter(|s| !s.trim().is_empty());
        if database_url.is_none() && !a.dev {
            return Err(ConfigError::MissingDatabase);
        }
        Ok(Settings {
            dev: a.dev,
            listen: a.listen,
            database_url,
            db_max_connections: a.db_max_connections,
            identity,
            admins,
            log_format: a.log_format.unwrap_or(if a.dev {
                LogFormat::Pretty
            } else {
                LogFormat::Json
            }),
            workers: a.workers,
            lease: Duration::from_secs_f64(a.lease_seconds),
            operation_retention: Duration::from_secs(
                u64::from(a.operation_retention_days) * 86_400,
            ),
            approval_ttl: Duration::from_secs(a.approval_ttl_seconds),
            audit_retention: Duration::from_secs(u64::from(a.audit_retention_days) * 86_400),
            usage_interval: Duration::from_secs_f64(a.usage_interval_seconds),
            test_workflows: a.test_workflows.unwrap_or(a.dev),
            shutdown_grace: Duration::from_secs(a.shutdown_grace_seconds),
            data_dir: a.data_dir,
            sim_listen: a.sim_listen,
            sim_speed,
            prices,
            gcp,
            gcp_explicit,
            manifests,
            limits,
            webhook_allow,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches, Parser};

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: ServeArgs,
    }

    /// The flags alone: the environment of whoever runs the tests (`DATABASE_URL`,
    /// `KINETIC_*`) is not read.
    fn parse(args: &[&str]) -> Result<Settings, ConfigError> {
        let mut v = vec!["t"];
        v.extend_from_slice(args);
        let matches = T::command()
            .mut_args(|a| a.env(None))
            .try_get_matches_from(v)
            .expect("flags parse");
        Settings::from_args(T::from_arg_matches(&matches).expect("flags parse").a)
    }

    #[test]
    fn dev_auth_refused_off_loopback() {
        let e = parse(&["--dev", "--listen", "0.0.0.0:8080"]).unwrap_err();
        assert!(matches!(e, ConfigError::DevAuthNotLoopback(_)), "{e}");
        assert!(e.to_string().contains("loopback"));
        assert!(parse(&["--dev", "--listen", "[::1]:8080"]).is_ok());
    }

    #[test]
    fn webhooks_reach_loopback_with_dev_only_unless_told() {
        let dev = parse(&["--dev"]).unwrap().webhook_allow;
        assert!(dev.loopback && !dev.private);
        let prod = parse(&["--dev", "--webhook-allow", "none"])
            .unwrap()
            .webhook_allow;
        assert_eq!(prod, Allow::default());
        let both = parse(&["--dev", "--webhook-allow", "private,loopback"]).unwrap();
        assert!(both.webhook_allow.private && both.webhook_allow.loopback);
        let e = parse(&["--dev", "--webhook-allow", "public"]).unwrap_err();
        assert!(matches!(e, ConfigError::BadWebhookAllow(_)), "{e}");
    }

    #[test]
    fn iap_needs_audience_and_database() {
        let iap = ["--auth", "iap"];
        let audience = ["--iap-audience", "/projects/1/global/backendServices/2"];
        let database = ["--database-url", "postgres://x/y"];
        let e = parse(&[iap, database].concat()).unwrap_err();
        assert!(matches!(e, ConfigError::MissingAudience));
        let e = parse(&[iap, audience].concat()).unwrap_err();
        assert!(matches!(e, ConfigError::MissingDatabase));
        let s = parse(&[audience, database, ["--admins", "A@x.io, b@y.io"]].concat()).unwrap();
        assert!(matches!(s.identity, Identity::Iap { .. }));
        assert_eq!(s.admins[0].as_str(), "a@x.io");
        assert_eq!(s.log_format, LogFormat::Json);
    }

    #[test]
    fn limits_default_on_zero_off_and_checked() {
        let l = parse(&["--dev"]).unwrap().limits;
        assert_eq!(
            l.rate,
            Some(limits::Rate {
                per_second: 50.0,
                burst: 200
            })
        );
        assert_eq!(l.request_timeout, Some(Duration::from_secs(60)));
        assert_eq!(l.db_acquire_timeout, Duration::from_secs(3));
        assert_eq!(
            (l.max_operations_per_team, l.max_watches_per_caller),
            (Some(100), Some(20))
        );
        assert_eq!(
            (l.header_read_timeout, l.idle_timeout),
            (
                Some(Duration::from_secs(30)),
                Some(Duration::from_secs(620))
            )
        );
        let off = [
            "--dev",
            "--rate-limit-per-second",
            "0",
            "--request-timeout-seconds",
            "0",
            "--max-operations-per-team",
            "0",
            "--max-watches-per-caller",
            "0",
            "--header-read-timeout-seconds",
            "0",
            "--idle-timeout-seconds",
            "0",
        ];
        let l = parse(&off).unwrap().limits;
        assert_eq!(l.rate, None);
        assert_eq!(l.request_timeout, None);
        assert_eq!((l.header_read_timeout, l.idle_timeout), (None, None));
        assert_eq!(
            (l.max_operations_per_team, l.max_watches_per_caller),
            (None, None)
        );
        let e = parse(&["--dev", "--db-acquire-timeout-seconds", "0"]).unwrap_err();
        assert!(
            e.to_string().contains("KINETIC_DB_ACQUIRE_TIMEOUT_SECONDS"),
            "{e}"
        );
        let e = parse(&["--dev", "--idle-timeout-seconds=-1"]).unwrap_err();
        assert!(
            e.to_string().contains("KINETIC_IDLE_TIMEOUT_SECONDS"),
            "{e}"
        );
        let e = parse(&["--dev", "--rate-limit-burst", "0"]).unwrap_err();
        assert!(e.to_string().contains("KINETIC_RATE_LIMIT_BURST"), "{e}");
    }

    #[test]
    fn bad_admin_named() {
        let e = parse(&["--dev", "--admins", "root"]).unwrap_err();
        assert!(e.to_string().contains("\"root\""));
    }
}
