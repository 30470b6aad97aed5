//! The scenario's configuration (from `KINETIC_E2E_*`, or a simulator's exports) and its
//! running `serve`: requests as the test's caller, and long-polls of operations.
//!
//! With `KINETIC_E2E_IMPERSONATE=SA_EMAIL`, `serve` calls Google as that service account
//! (kineticd's own, holding only the team-project grants of docs/deploying.md): it gets
//! an empty home (no Application Default Credentials file of the caller's is found), no
//! `GOOGLE_APPLICATION_CREDENTIALS`, and gcloud's impersonation setting, so its
//! credentials are `gcloud auth print-access-token` as that account.
//!
//! Invariant: every request failure is a `Step` error naming the request and the serve
//! log, never a panic, so the cleanup always gets its turn.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use kineticd::domain::resource_names::ClusterNames;
use kineticd::domain::{ClusterName, ProjectId, ZoneName};
use reqwest::Method;
use serde_json::Value;

use crate::common;
use crate::serve_process::{LogPath, Server};

/// The test's identity towards `serve`; a service admin there (`KINETIC_ADMINS`), so its
/// team may claim the project without owning it on Google's side.
pub const CALLER: &str = "e2e@example.com";
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
    /// From `KINETIC_E2E_*` and the ADC variables; `Err` (why) when the project is not
    /// set. Panics on an impossible impersonation setting.
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
        let mut serve_env: Vec<(String, String)> = passed
            .iter()
            .filter_map(|k| var(k).map(|v| (k.to_string(), v)))
            .collect();
        if let Some(sa) = var("KINETIC_E2E_IMPERSONATE") {
            // A misconfiguration here fails the test (nothing exists yet); only a missing
            // project skips it.
            serve_env = impersonating(&sa, serve_env)
                .unwrap_or_else(|why| panic!("KINETIC_E2E_IMPERSONATE: {why}"));
        }
        serve_env.push(("KINETIC_ADMINS".into(), CALLER.into()));
        Ok(Config {
            project,
            zone: var("KINETIC_E2E_ZONE").unwrap_or_else(|| "us-central1-a".into()),
            accelerator: var("KINETIC_E2E_ACCELERATOR").unwrap_or_else(|| "nvidia-tesla-t4".into()),
            max_hourly_usd,
            serve_env,
            gcloud_env: Vec::new(),
            op_deadline: Duration::from_secs(45 * 60),
        })
    }
}

impl Config {
    /// The service account `serve` impersonates (`KINETIC_E2E_IMPERSONATE`), if any.
    pub fn impersonated(&self) -> Option<&str> {
        self.serve_env
            .iter()
            .find(|(k, _)| k == "CLOUDSDK_AUTH_IMPERSONATE_SERVICE_ACCOUNT")
            .map(|(_, v)| v.as_str())
    }
}

/// `serve`'s environment for calling Google as the service account `sa` through gcloud's
/// impersonation: the caller's gcloud configuration (their signed-in account mints the
/// tokens), an empty home instead of theirs, and nothing else that gcp_auth would pick
/// first (a key file, an ADC file).
fn impersonating(sa: &str, env: Vec<(String, String)>) -> Result<Vec<(String, String)>, String> {
    if !sa.ends_with(".iam.gserviceaccount.com") {
        return Err(format!(
            "KINETIC_E2E_IMPERSONATE={sa:?} is not a service account email"
        ));
    }
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if get("GOOGLE_APPLICATION_CREDENTIALS").is_some() {
        return Err(
            "KINETIC_E2E_IMPERSONATE and GOOGLE_APPLICATION_CREDENTIALS are both set: serve \
             would use the key file, not the service account; unset it"
                .into(),
        );
    }
    let gcloud_config = match (get("CLOUDSDK_CONFIG"), get("HOME")) {
        (Some(dir), _) => dir,
        (None, Some(home)) => format!("{home}/.config/gcloud"),
        (None, None) => return Err("neither CLOUDSDK_CONFIG nor HOME is set".into()),
    };
    let home = std::env::temp_dir().join(format!(
        "kineticd-e2e-home-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&home).map_err(|e| format!("{}: {e}", home.display()))?;
    let mut out: Vec<(String, String)> = env
        .into_iter()
        .filter(|(k, _)| k != "HOME" && k != "CLOUDSDK_CONFIG")
        .collect();
    out.push(("HOME".into(), home.display().to_string()));
    out.push(("CLOUDSDK_CONFIG".into(), gcloud_config));
    out.push((
        "CLOUDSDK_AUTH_IMPERSONATE_SERVICE_ACCOUNT".into(),
        sa.to_owned(),
    ));
    Ok(out)
}

/// With `KINETIC_E2E_IMPERSONATE` set: fails unless `serve`'s credentials (gcloud's,
/// with `serve`'s environment) are that service account's, as Google's tokeninfo says,
/// and unless no metadata server could answer first (gcp_auth asks it before gcloud).
pub async fn check_identity(cfg: &Config, http: &reqwest::Client) -> Result<(), String> {
    let Some(sa) = cfg.impersonated() else {
        return Ok(());
    };
    let lookup = tokio::time::timeout(
        Duration::from_secs(3),
        tokio::net::lookup_host("metadata.google.internal:80"),
    )
    .await;
    if matches!(lookup, Ok(Ok(_))) {
        return Err(
            "metadata.google.internal resolves here: serve would call Google as this \
             machine's service account, not KINETIC_E2E_IMPERSONATE's; run from a workstation"
                .into(),
        );
    }
    let out = tokio::process::Command::new("gcloud")
        .args(["auth", "print-access-token", "--quiet"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(cfg.serve_env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("gcloud auth print-access-token: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "gcloud auth print-access-token as {sa}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let info: Value = http
        .get("https://oauth2.googleapis.com/tokeninfo")
        .query(&[("access_token", token.as_str())])
        .send()
        .await
        .map_err(|e| format!("tokeninfo: {e}"))?
        .json()
        .await
        .map_err(|e| format!("tokeninfo: {e}"))?;
    match info["email"].as_str() {
        Some(email) if email == sa => {
            println!("e2e: serve calls Google as {email} (KINETIC_E2E_IMPERSONATE)");
            Ok(())
        }
        Some(other) => Err(format!(
            "serve's credentials are {other}'s, not KINETIC_E2E_IMPERSONATE={sa}"
        )),
        None => Err(format!(
            "tokeninfo does not name the account of serve's token ({info}); cannot check it is {sa}"
        )),
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

    /// The plan of a mutation: `method path?validateOnly=true` with `body`, which must
    /// answer 200.
    pub async fn preview(&self, method: Method, path: &str, body: &Value) -> Step<Value> {
        let preview = format!("{path}?validateOnly=true");
        self.expect(method, &preview, Some(body.clone()), 200).await
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
