//! The scenario's configuration (from `KINETIC_E2E_*`, or a simulator's exports) and its
//! running `serve`: requests as the test's caller, and long-polls of operations.
//!
//! Invariant: every request failure is a `Step` error naming the request and the serve
//! log, never a panic, so the cleanup always gets its turn.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use kineticd::domain::naming::ClusterNames;
use kineticd::domain::{ClusterName, ProjectId, ZoneName};
use reqwest::Method;
use serde_json::Value;

use crate::common;
use crate::serve_process::{LogPath, Server};

const CALLER: &str = "e2e@example.com";
/// `KINETIC_E2E_MAX_HOURLY_USD` when unset.
pub const DEFAULT_MAX_HOURLY_USD: f64 = 0.50;

/// Where and what the scenario runs.
pub struct Config {
    pub project: String,
    pub zone: String,
    /// The GPU pool's accelerator (any spelling `GET /v1/accelerators/{spec}` accepts).
    pub accelerator: String,
    pub max_hourly_usd: f64,
    /// What `serve` gets besides the database and the dev identity.
    pub serve_env: Vec<(String, String)>,
    /// The environment of the gcloud fallback (a configuration directory of its own for
    /// a simulator; the caller's own gcloud for Google).
    pub gcloud_env: Vec<(String, String)>,
    /// The longest one operation may take.
    pub op_deadline: Duration,
}

impl Config {
    /// From `KINETIC_E2E_*` and the ADC variables; `None` (with why) when the project is
    /// not set.
    pub fn from_env() -> Result<Config, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let project = var("KINETIC_E2E_PROJECT").ok_or("KINETIC_E2E_PROJECT is not set")?;
        let max_hourly_usd = match var("KINETIC_E2E_MAX_HOURLY_USD") {
            None => DEFAULT_MAX_HOURLY_USD,
            Some(v) => v
                .parse()
                .map_err(|e| format!("KINETIC_E2E_MAX_HOURLY_USD={v:?}: {e}"))?,
        };
        // What Application Default Credentials (and gcloud, as ADC's last resort) read,
        // and a proxy if the machine needs one: `serve` starts with an empty environment.
        let passed = [
            "HOME",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CLOUDSDK_CONFIG",
            "GCE_METADATA_HOST",
            "HTTPS_PROXY",
            "https_proxy",
            "NO_PROXY",
            "no_proxy",
            "RUST_LOG",
        ];
        Ok(Config {
            project,
            zone: var("KINETIC_E2E_ZONE").unwrap_or_else(|| "us-central1-a".into()),
            accelerator: var("KINETIC_E2E_ACCELERATOR").unwrap_or_else(|| "nvidia-tesla-t4".into()),
            max_hourly_usd,
            serve_env: passed
                .iter()
                .filter_map(|k| var(k).map(|v| (k.to_string(), v)))
                .collect(),
            gcloud_env: Vec::new(),
            op_deadline: Duration::from_secs(45 * 60),
        })
    }
}

/// A running `serve` and what the scenario made, shared with the cleanup.
pub struct Run {
    pub cfg: Config,
    pub http: reqwest::Client,
    pub server: Mutex<Server>,
    pub log_path: LogPath,
    pub team: String,
    pub cluster: String,
    /// Set once the scenario's own `down` succeeded.
    pub down: Mutex<bool>,
}

/// A failed step, said in words.
pub type Step<T> = Result<T, String>;

impl Run {
    /// A fresh database, `serve` on it with `cfg.serve_env`, and unique names.
    pub async fn start(cfg: Config, name: &str) -> Run {
        let (_db, url) = common::fresh_db().await;
        let http = kineticd::app::http_client().expect("http client");
        let (log_path, log) = LogPath::temp(name);
        let env: Vec<(&str, String)> = cfg
            .serve_env
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        let server = Server::start_healthy(&url, &log, &log_path, &http, &env).await;
        let id = uuid::Uuid::new_v4().simple().to_string();
        Run {
            team: format!("e2e-{}", &id[..8]),
            cluster: format!("kt-e2e-{}", &id[..6]),
            cfg,
            http,
            server: Mutex::new(server),
            log_path,
            down: Mutex::new(false),
        }
    }

    /// `projects/P/zones/Z/clusters/C`.
    pub fn cluster_name(&self) -> String {
        format!(
            "projects/{}/zones/{}/clusters/{}",
            self.cfg.project, self.cfg.zone, self.cluster
        )
    }

    pub fn names(&self) -> ClusterNames {
        ClusterNames::new(
            &ProjectId::parse(&self.cfg.project).expect("KINETIC_E2E_PROJECT is a project id"),
            &ZoneName::parse(&self.cfg.zone).expect("KINETIC_E2E_ZONE is a zone"),
            &ClusterName::parse(&self.cluster).expect("a cluster name"),
        )
    }

    pub fn alive(&self) -> bool {
        !self.server.lock().expect("server").child.exited()
    }

    /// `METHOD /v1/PATH` (`path` without `/v1/`) as the test's caller: status and body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Step<(u16, Value)> {
        let url = self
            .server
            .lock()
            .expect("server")
            .url(&format!("/v1/{path}"));
        let mut req = self
            .http
            .request(method.clone(), url)
            .header("x-kinetic-user", CALLER);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .map_err(|e| format!("{method} {path}: {e}; log: {}", self.log_path))?;
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((status, v))
    }

    /// `call`, which must answer `want`.
    pub async fn expect(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
        want: u16,
    ) -> Step<Value> {
        let (status, v) = self.call(method.clone(), path, body).await?;
        if status != want {
            return Err(format!(
                "{method} {path}: {status}, not {want}: {v}; log: {}",
                self.log_path
            ));
        }
        Ok(v)
    }

    /// Long-poll `op` until it is done; its final form if it SUCCEEDED.
    pub async fn wait(&self, op: &Value, what: &str) -> Step<Value> {
        let name = op["name"]
            .as_str()
            .ok_or(format!("{what}: no operation name in {op}"))?;
        let started = Instant::now();
        let deadline = started + self.cfg.op_deadline;
        let mut last_step = String::new();
        loop {
            // The HTTP client gives up after 30 s: ask for less.
            let op = self
                .expect(Method::POST, &format!("{name}:wait?timeout=20s"), None, 200)
                .await?;
            let step = op["metadata"]["progress"]["currentStep"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            if step != last_step && !step.is_empty() {
                println!("    {what}: {step} ({} s)", started.elapsed().as_secs());
                last_step = step;
            }
            if op["done"] == true {
                let state = &op["metadata"]["state"];
                println!("  {what}: {state} after {} s", started.elapsed().as_secs());
                if state != "SUCCEEDED" {
                    return Err(format!("{what} ended {state}: {}", op["error"]));
                }
                return Ok(op);
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{what} not done after {:?}: {op}",
                    self.cfg.op_deadline
                ));
            }
        }
    }
}
