//! The `kineticd` command line: `serve`, `migrate`, `openapi`.
//!
//! Invariant: commands fail with one clear message (and exit code 1 or 2) instead of a
//! panic; configuration is validated before anything is started.

mod serve;

use clap::{Parser, Subcommand};

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
pub enum Command {
    /// Run the API server (and, with --dev, everything it needs locally).
    Serve(ServeArgs),
    /// Apply database migrations and exit.
    Migrate {
        #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
        database_url: String,
    },
    /// Print the OpenAPI document (JSON).
    Openapi,
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
            Command::Openapi => {
                print!("{}", crate::api::openapi::document_json());
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

async fn migrate(url: &str) -> anyhow::Result<()> {
    crate::telemetry::init(crate::config::LogFormat::Pretty);
    let db = crate::store::connect(url, 2).await?;
    crate::store::migrate(&db).await?;
    tracing::info!("migrations applied");
    Ok(())
}
