//! What every benchmark binary does before it measures anything: it runs only under
//! `cargo bench` (`--bench` among its arguments; `cargo test --benches` runs it without,
//! and then it does nothing), and it logs warnings and worse to stderr (`RUST_LOG`
//! overrides), so stdout holds the figures alone.

/// The arguments after the program name when run by `cargo bench`; `None` (after saying
/// how to run it) otherwise.
pub fn bench_args(name: &str) -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--bench") {
        return Some(args);
    }
    println!("{name} benchmark: run it with `cargo bench --bench {name}`");
    None
}

/// Logs at `warn` (or as `RUST_LOG` says) to stderr.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
}
