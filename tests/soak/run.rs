//! The soak's run: a simulator with faults armed by probability, `kineticd serve`
//! processes (production mode, the simulator reached through `KINETIC_GCP_URL` and the
//! manifest URLs, as `kineticd sim` prints them) SIGKILLed on a seeded schedule while
//! the scripts send their requests, then a last process that finishes the queue.
//!
//! Invariant: at most one `kineticd` process runs at a time; every kill is a SIGKILL at
//! a moment drawn from the seed, possibly in the middle of a request the scripts sent.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::config::SoakConfig;
use crate::script::{OWNER, PROJECT, Script, TEAM};
use crate::serve_process::chaos::{Rng, wait_leases_expired};
use crate::serve_process::{LogPath, Server};

/// What the checks read after the run.
pub struct Report {
    pub db: kineticd::store::Db,
    pub log: LogPath,
    pub sim_url: String,
    /// Keeps the simulator up for the checks.
    pub _sim: kineticd::sim::Sim,
    pub scripts: Vec<Script>,
    pub kills: usize,
    /// The longest an unfinished operation's lease stayed expired while a process had
    /// been up long enough to take it over.
    pub max_overdue_seconds: f64,
    /// The bound on that (a lease, the claim poll and a worker's wake-up, with room).
    pub stuck_after_seconds: f64,
}

impl Report {
    pub fn log_path_cleanup(self) {
        self.log.remove();
    }
}

/// Arm 429 and 503 together at `http_rate` and hung calls at `timeout_rate` on every
/// service and method. The simulator takes the first armed fault whose dice fire, so
/// the later ones are scaled to keep the overall rates.
async fn arm_faults(http: &reqwest::Client, sim_url: &str, cfg: &SoakConfig) {
    let half = cfg.http_fault_rate / 2.0;
    let p503 = half / (1.0 - half);
    let timeout = cfg.timeout_rate / (1.0 - cfg.http_fault_rate);
    for (kind, p) in [("HTTP_429", half), ("HTTP_503", p503), ("TIMEOUT", timeout)] {
        let r = http
            .post(format!("{sim_url}/sim/v1/faults"))
            .json(&json!({"service": "*", "method": "*", "kind": kind, "probability": p}))
            .send()
            .await
            .expect("arm a fault");
        assert!(r.status().is_success(), "arming {kind}: {}", r.status());
    }
}

pub async fn disarm_faults(http: &reqwest::Client, sim_url: &str) {
    let r = http
        .delete(format!("{sim_url}/sim/v1/faults"))
        .send()
        .await
        .expect("disarm faults");
    assert!(r.status().is_success());
}

/// The longest any unfinished operation's lease has been expired, in seconds (0: none).
async fn overdue(db: &kineticd::store::Db) -> f64 {
    sqlx::query_scalar::<_, Option<f64>>(
        "SELECT max(extract(epoch FROM now() - lease_expire_time))::float8 FROM operations \
         WHERE end_time IS NULL AND lease_expire_time IS NOT NULL AND lease_expire_time < now()",
    )
    .fetch_one(db)
    .await
    .expect("overdue leases")
    .unwrap_or(0.0)
}

pub async fn run(cfg: &SoakConfig) -> Report {
    let mut rng = Rng(cfg.seed);
    let (db, url) = crate::common::fresh_db().await;
    let mut sim_cfg = kineticd::sim::SimConfig {
        clock: kineticd::sim::clock::ClockMode::Auto { speed: cfg.speed },
        ..Default::default()
    };
    // Room for every pool of every round: quota refusals are not what this soaks.
    for limit in sim_cfg.quotas.values_mut() {
        *limit = limit.max(1000.0);
    }
    let (sim, _) = kineticd::sim::Sim::start(sim_cfg, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("simulator");
    let sim_url = sim.url();
    let http = kineticd::app::http_client().expect("http client");
    let (log, log_file) = LogPath::temp("soak");

    let workers = cfg.clusters.max(2).to_string();
    let mut env: Vec<(&str, String)> = vec![
        ("KINETIC_WORKERS", workers),
        ("KINETIC_LEASE_SECONDS", cfg.lease_seconds.to_string()),
        (
            "KINETIC_CLOUD_CALL_TIMEOUT_SECONDS",
            cfg.call_timeout_seconds.to_string(),
        ),
        ("KINETIC_LOG_FORMAT", "json".to_owned()),
        ("KINETIC_DB_MAX_CONNECTIONS", "10".to_owned()),
        (
            "RUST_LOG",
            std::env::var("KINETIC_SOAK_RUST_LOG").unwrap_or_else(|_| "info".to_owned()),
        ),
    ];
    let sim_env = sim.serve_env();
    env.extend(sim_env.iter().map(|(k, v)| (k.as_str(), v.clone())));

    // The team, through a first process (not killed mid-request).
    {
        let setup = Server::start_healthy(&url, &log_file, &log, &http, &env).await;
        let r = http
            .post(setup.url("/v1/teams"))
            .header("x-kinetic-user", OWNER)
            .json(&json!({"teamId": TEAM, "projects": [PROJECT]}))
            .send()
            .await
            .expect("create team");
        assert!(r.status().is_success(), "team: {}", r.status());
    }
    arm_faults(&http, &sim_url, cfg).await;

    let mut scripts: Vec<Script> = (0..cfg.clusters)
        .map(|i| Script::new(i, cfg.rounds, &mut rng))
        .collect();
    let started = Instant::now();
    let mut kills = 0;
    let mut max_overdue: f64 = 0.0;
    // A process needs a lease, its claim poll and a moment to take an expired one over.
    let grace = Duration::from_secs(cfg.lease_seconds + 5);
    let stuck_after = (cfg.lease_seconds + 15) as f64;
    let mut progress = Vec::new();
    'processes: loop {
        let mut server = Server::start_healthy(&url, &log_file, &log, &http, &env).await;
        let born = Instant::now();
        let base = server.url("");
        let kill_at = (kills < cfg.kills)
            .then(|| born + Duration::from_millis(rng.range(cfg.life_ms.0, cfg.life_ms.1)));
        loop {
            if scripts.iter().all(Script::done) {
                break 'processes;
            }
            assert!(
                started.elapsed() < cfg.deadline,
                "not done after {:?}: {progress:?}; log: {log}",
                cfg.deadline
            );
            if born.elapsed() > grace {
                // Counted from the later of the lease's expiry and this process's start.
                let served = overdue(&db).await.min(born.elapsed().as_secs_f64());
                max_overdue = max_overdue.max(served);
            }
            let pass = async {
                for s in scripts.iter_mut() {
                    s.step(&http, &base, &mut rng).await;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            };
            match kill_at {
                Some(at) => {
                    tokio::select! {
                        _ = pass => {}
                        _ = tokio::time::sleep_until(at.into()) => break,
                    }
                }
                None => pass.await,
            }
        }
        server.kill();
        kills += 1;
        let done: usize = scripts.iter().map(|s| s.outcomes.len()).sum();
        progress.push(format!("{:.1}s:{done}", born.elapsed().as_secs_f64()));
        wait_leases_expired(&db).await;
    }
    println!("soak: processes lived (s:requests ended) {progress:?}");
    disarm_faults(&http, &sim_url).await;
    drop(log_file);
    Report {
        db,
        log,
        sim_url,
        _sim: sim,
        scripts,
        kills,
        max_overdue_seconds: max_overdue,
        stuck_after_seconds: stuck_after,
    }
}
