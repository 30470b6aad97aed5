//! The `kineticd` command line: `serve`, `migrate`, `openapi`, `sim`, `config-reference`,
//! `errors-reference`.
//!
//! Invariant: commands fail with one clear message (and exit code 1 or 2) instead of a
//! panic; configuration is validated before anything is started.

pub mod dev;
mod serve;

use std::io::Write;

use clap::{CommandFactory, Parser, Subcommand};

use crate::config::ServeArgs;

#[derive(Debug, Parser)]
#[command(
    name = "kineticd",
    version,
    about = "Team-wide control plane for GKE accelerator clusters"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once at start-up; boxing the large variant buys nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run the API server (and, with --dev, everything it needs locally).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate {
        /// PostgreSQL URL of the database to migrate (as for `serve`).
        #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
        database_url: String,
    },
    /// Print the OpenAPI document (JSON).
    Openapi {
        /// OpenAPI version to render: 3.1 (the published document) or 3.0 (for
        /// generators that read only 3.0; committed as openapi/kineticd.openapi30.json).
        #[arg(long, default_value = "3.1", value_parser = ["3.1", "3.0"])]
        openapi_version: String,
    },
    /// Run the cloud simulator alone (Google Cloud APIs + simulated clusters' Kubernetes).
    Sim {
        /// Address to listen on.
        #[arg(long, env = "KINETIC_SIM_LISTEN", default_value = "127.0.0.1:8090")]
        listen: std::net::SocketAddr,
        /// Virtual seconds per real second (0 = instant; default compresses GKE's minutes
        /// to seconds).
        #[arg(long, env = "KINETIC_SIM_SPEED", default_value_t = crate::sim::DEFAULT_SPEED)]
        speed: f64,
    },
    /// Print the configuration reference (markdown; committed as docs/configuration.md).
    ConfigReference,
    /// Print the error reason reference (markdown; committed as docs/errors.md).
    ErrorsReference,
}

/// Entry point of the binary; returns the process exit code.
pub fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kineticd: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(args).await,
            Command::Migrate { database_url } => migrate(&database_url).await,
            Command::Sim { listen, speed } => run_sim(listen, speed).await,
            Command::ConfigReference => {
                print!("{}", crate::config::reference::markdown(&Cli::command()));
                Ok(())
            }
            Command::ErrorsReference => {
                print!("{}", crate::api::reasons::markdown());
                Ok(())
            }
            Command::Openapi { openapi_version } => {
                match openapi_version.as_str() {
                    "3.0" => print!("{}", crate::api::openapi30::document_json()),
                    _ => print!("{}", crate::api::openapi::document_json()),
                }
                Ok(())
            }
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kineticd: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run_sim(listen: std::net::SocketAddr, speed: f64) -> anyhow::Result<()> {
    crate::telemetry::init(crate::config::LogFormat::Pretty);
    anyhow::ensure!(
        speed.is_finite() && speed >= 0.0,
        "--speed must be a number >= 0"
    );
    let config = crate::sim::SimConfig {
        clock: crate::sim::clock::ClockMode::Auto { speed },
        ..Default::default()
    };
    let (sim, _) = crate::sim::Sim::start(config, listen).await?;
    print!("{}", sim_banner(&sim));
    std::io::stdout().flush()?;
    crate::app::shutdown_signal().await;
    Ok(())
}

/// What `kineticd sim` prints once it listens: `export KEY=value` lines with every
/// variable a separate `kineticd serve` needs to use this simulator (cloud URL, no
/// credentials, speed, manifests served by the simulator), the `gcloud config set`
/// commands that let gcloud read it (as shell comments: pasting the block must not change
/// anyone's gcloud configuration), then where it listens (as a shell comment).
fn sim_banner(sim: &crate::sim::Sim) -> String {
    let mut out = String::from(
        "# Point `kineticd serve` at this simulator with these variables (paste them into a shell):\n",
    );
    for (key, value) in sim.serve_env() {
        out.push_str(&format!("export {key}={value}\n"));
    }
    out.push_str(&gcloud_lines(sim));
    out.push_str(&format!(
        "# kineticd simulator listening on {url}  (journal: {url}/sim/v1/journal)\n",
        url = sim.url()
    ));
    out
}

/// The `gcloud config set` block of [`sim_banner`]: one `#   gcloud config set KEY VALUE`
/// line per property, meant for a configuration directory of its own.
fn gcloud_lines(sim: &crate::sim::Sim) -> String {
    let mut out = String::from(
        "# Point gcloud at this simulator, in a configuration of its own (run these after\n\
         #   export CLOUDSDK_CONFIG=$(mktemp -d); gcloud config set core/project PROJECT):\n",
    );
    for (property, value) in sim.gcloud_properties() {
        out.push_str(&format!("#   gcloud config set {property} {value}\n"));
    }
    out
}

async fn migrate(url: &str) -> anyhow::Result<()> {
    crate::telemetry::init(crate::config::LogFormat::Pretty);
    let db = crate::store::connect(url, 2).await?;
    crate::store::migrate(&db).await?;
    tracing::info!("migrations applied");
    Ok(())
}
