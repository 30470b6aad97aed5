//! The soak's knobs: the short form CI runs (`cargo test --test soak`) and the long form
//! `scripts/long-soak.sh` asks for through `KINETIC_SOAK_*` variables.
//!
//! Invariant: a run is described completely by its [`SoakConfig`] and its seed (printed
//! first), so a failure can be replayed with `KINETIC_SOAK_SEED`; the seed fixes the
//! scripts and the kill schedule, not the faults' dice (the simulator rolls its own).

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct SoakConfig {
    pub seed: u64,
    /// Clusters worked on at once (one script each, in a zone of its own region).
    pub clusters: usize,
    /// Rounds per cluster; a round is up, pool add, resize, drill, pool remove, down.
    pub rounds: usize,
    /// SIGKILLs of `kineticd`, spread over the run.
    pub kills: usize,
    /// How long a process lives before its SIGKILL (drawn from this range, ms).
    pub life_ms: (u64, u64),
    /// Simulator speed (virtual seconds per real second).
    pub speed: f64,
    /// `KINETIC_CLOUD_CALL_TIMEOUT_SECONDS` of the servers: what a TIMEOUT fault costs.
    pub call_timeout_seconds: f64,
    /// `KINETIC_LEASE_SECONDS` of the servers.
    pub lease_seconds: u64,
    /// Rate of 429 and 503 answers together, and of hung calls, on every method.
    pub http_fault_rate: f64,
    pub timeout_rate: f64,
    /// Give up (and fail) when the operations are not all done by then.
    pub deadline: Duration,
}

fn var<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a valid value")),
        _ => default,
    }
}

impl SoakConfig {
    /// The short form, overridden by `KINETIC_SOAK_SEED`, `_CLUSTERS`, `_ROUNDS`, `_KILLS`,
    /// `_DEADLINE_SECONDS` (the long form sets them).
    pub fn from_env() -> SoakConfig {
        let fresh_seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x736f_616b);
        SoakConfig {
            seed: var("KINETIC_SOAK_SEED", fresh_seed),
            clusters: var("KINETIC_SOAK_CLUSTERS", 3usize).clamp(1, 12),
            rounds: var("KINETIC_SOAK_ROUNDS", 1usize).max(1),
            kills: var("KINETIC_SOAK_KILLS", 10usize),
            life_ms: (
                var("KINETIC_SOAK_MIN_LIFE_MS", 1_500u64),
                var("KINETIC_SOAK_MAX_LIFE_MS", 6_000u64),
            ),
            speed: var("KINETIC_SOAK_SPEED", 50.0f64),
            call_timeout_seconds: 2.0,
            lease_seconds: 2,
            http_fault_rate: 0.20,
            timeout_rate: 0.05,
            deadline: Duration::from_secs(var("KINETIC_SOAK_DEADLINE_SECONDS", 600u64)),
        }
    }
}
