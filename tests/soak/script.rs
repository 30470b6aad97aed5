//! What the soak asks of each cluster: rounds of up, pool add (a spot pool with an
//! on-demand fallback), resize, failover drill, pool remove and down, then a last up
//! and pool add on every other cluster so that the end state has clusters standing and
//! clusters gone. Each request is sent as the API's clients send it, with a request id
//! kept until an answer arrives, so a request lost to a SIGKILL is repeated safely.
//!
//! Invariant: a cluster's next request is sent only after its previous operation ended,
//! and a request id is reused exactly until the request was answered (202 or a refusal).

use std::collections::BTreeMap;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::serve_process::chaos::Rng;

pub const OWNER: &str = "soak-owner@example.com";
pub const TEAM: &str = "soak-team";
pub const PROJECT: &str = "soak-proj";

/// One zone per cluster, each in its own region (regional quotas stay apart).
const ZONES: [&str; 12] = [
    "us-central1-a",
    "us-east1-b",
    "us-east4-a",
    "us-east5-a",
    "us-south1-a",
    "us-west1-a",
    "us-west4-a",
    "europe-west1-b",
    "europe-west4-a",
    "asia-east1-a",
    "asia-northeast1-a",
    "asia-southeast1-a",
];

/// The mutating operation types, as the API names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Up,
    AddPool,
    Resize,
    Drill,
    RemovePool,
    Down,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Up,
        Kind::AddPool,
        Kind::Resize,
        Kind::Drill,
        Kind::RemovePool,
        Kind::Down,
    ];

    pub fn op_type(self) -> &'static str {
        match self {
            Kind::Up => "UP_CLUSTER",
            Kind::AddPool => "ADD_NODE_POOL",
            Kind::Resize => "UPDATE_NODE_POOL",
            Kind::Drill => "FAILOVER_DRILL",
            Kind::RemovePool => "REMOVE_NODE_POOL",
            Kind::Down => "DOWN_CLUSTER",
        }
    }

    /// Whether it acts on the round's spot pool (skipped when the round has none).
    fn needs_pool(self) -> bool {
        matches!(self, Kind::Resize | Kind::Drill | Kind::RemovePool)
    }
}

/// How one request of a script ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Accepted; the operation ended in `state` (SUCCEEDED, FAILED, CANCELLED) with
    /// `error` (the operation's `error`, for a failure).
    Ran {
        op: String,
        state: String,
        error: Value,
    },
    /// Refused at once (4xx): status and reason.
    Refused { status: u16, reason: String },
    /// Not sent: the round has no spot pool (its pool add did not succeed).
    Skipped,
}

/// One request to send.
#[derive(Debug, Clone)]
struct Request {
    kind: Kind,
    /// Drawn when the request is first built; sent until it is answered.
    request_id: String,
    body: Value,
}

/// One cluster's script and where it stands.
pub struct Script {
    pub cluster: String,
    pub zone: &'static str,
    todo: Vec<(Kind, Value)>,
    next: usize,
    /// The request being sent (no answer yet).
    sending: Option<Request>,
    /// The accepted operation being waited for.
    running: Option<(Kind, String)>,
    /// The current round's spot pool (from the pool list after a pool add).
    spot_pool: Option<String>,
    pub outcomes: Vec<(Kind, Outcome)>,
}

fn path(zone: &str, cluster: &str) -> String {
    format!("/v1/projects/{PROJECT}/zones/{zone}/clusters/{cluster}")
}

/// A request id drawn from the seeded source (a UUID's shape).
fn request_id(rng: &mut Rng) -> String {
    uuid::Uuid::from_u64_pair(rng.next(), rng.next()).to_string()
}

impl Script {
    /// Cluster `index`'s script: `rounds` full rounds, then (even clusters) an up and a
    /// pool add that stay.
    pub fn new(index: usize, rounds: usize, rng: &mut Rng) -> Script {
        let mut todo = Vec::new();
        for round in 0..rounds {
            let keep = round + 1 == rounds && index.is_multiple_of(2);
            todo.push((Kind::Up, json!({"accelerator": "cpu"})));
            todo.push((
                Kind::AddPool,
                json!({"accelerator": "l4", "failover": true, "minNodes": 1}),
            ));
            let max = rng.range(2, 4);
            todo.push((Kind::Resize, json!({"minNodes": 1, "maxNodes": max})));
            if keep {
                break;
            }
            todo.push((Kind::Drill, json!({"deadline": "60s"})));
            todo.push((Kind::RemovePool, Value::Null));
            todo.push((Kind::Down, Value::Null));
        }
        Script {
            cluster: format!("soak-{index}"),
            zone: ZONES[index % ZONES.len()],
            todo,
            next: 0,
            sending: None,
            running: None,
            spot_pool: None,
            outcomes: Vec::new(),
        }
    }

    pub fn done(&self) -> bool {
        self.next >= self.todo.len() && self.sending.is_none() && self.running.is_none()
    }

    /// Requests of each kind this script sends when every pool add succeeds.
    pub fn planned(&self) -> BTreeMap<Kind, usize> {
        let mut m = BTreeMap::new();
        for (k, _) in &self.todo {
            *m.entry(*k).or_default() += 1;
        }
        m
    }

    /// Move on by one request or one look at the running operation, against the
    /// server at `base`. Every state change follows an answer, so dropping this future
    /// (the process is being killed) loses nothing: the same request id is sent again.
    pub async fn step(&mut self, http: &reqwest::Client, base: &str, rng: &mut Rng) {
        if let Some((kind, op)) = self.running.clone() {
            let Some(o) = get(http, &format!("{base}/v1/{op}")).await else {
                return;
            };
            if o["done"] != true {
                return;
            }
            let state = o["metadata"]["state"].as_str().unwrap_or("?").to_owned();
            if kind == Kind::AddPool && state == "SUCCEEDED" {
                self.spot_pool = self.find_spot_pool(http, base).await;
                if self.spot_pool.is_none() {
                    return; // the list failed: look again
                }
            }
            self.running = None;
            self.outcomes.push((
                kind,
                Outcome::Ran {
                    op,
                    state,
                    error: o["error"].clone(),
                },
            ));
            return;
        }
        if self.sending.is_none() {
            let Some((kind, body)) = self.todo.get(self.next).cloned() else {
                return;
            };
            self.next += 1;
            if kind == Kind::Up {
                self.spot_pool = None;
            }
            if kind.needs_pool() && self.spot_pool.is_none() {
                self.outcomes.push((kind, Outcome::Skipped));
                return;
            }
            self.sending = Some(Request {
                kind,
                request_id: request_id(rng),
                body,
            });
        }
        let req = self.sending.clone().expect("a request to send");
        let (method, url) = self.target(base, &req);
        let mut call = http
            .request(method, url)
            .query(&[("requestId", req.request_id.as_str())])
            .header("x-kinetic-user", OWNER);
        if !req.body.is_null() {
            call = call.json(&req.body);
        }
        let Ok(resp) = call.send().await else {
            return; // the process died: send again to the next one
        };
        let status = resp.status();
        let Ok(body) = resp.json::<Value>().await else {
            return;
        };
        // 202, or the original operation again for a repeated request id.
        if status.is_success() {
            let op = body["name"].as_str().expect("operation name").to_owned();
            self.running = Some((req.kind, op));
            self.sending = None;
        } else if status.is_client_error() && status != StatusCode::TOO_MANY_REQUESTS {
            let reason = body["error"]["details"][0]["reason"]
                .as_str()
                .unwrap_or("?")
                .to_owned();
            self.outcomes.push((
                req.kind,
                Outcome::Refused {
                    status: status.as_u16(),
                    reason,
                },
            ));
            self.sending = None;
        }
        // 5xx or 429: send the same request again.
    }

    fn target(&self, base: &str, req: &Request) -> (Method, String) {
        let cluster = format!("{base}{}", path(self.zone, &self.cluster));
        let pool = || {
            format!(
                "{cluster}/nodePools/{}",
                self.spot_pool.as_deref().unwrap_or("-")
            )
        };
        match req.kind {
            Kind::Up => (Method::PUT, cluster),
            Kind::Down => (Method::DELETE, cluster),
            Kind::AddPool => (Method::POST, format!("{cluster}/nodePools")),
            Kind::Resize => (
                Method::PATCH,
                format!("{}?updateMask=minNodes,maxNodes", pool()),
            ),
            Kind::Drill => (Method::POST, format!("{}:drill", pool())),
            Kind::RemovePool => (Method::DELETE, pool()),
        }
    }

    /// The spot pool of the cluster's failover pair, from its pool list.
    async fn find_spot_pool(&self, http: &reqwest::Client, base: &str) -> Option<String> {
        let url = format!("{base}{}/nodePools", path(self.zone, &self.cluster));
        let list = get(http, &url).await?;
        list["nodePools"]
            .as_array()?
            .iter()
            .find(|p| p["failover"]["role"] == "SPOT")
            .and_then(|p| p["poolId"].as_str())
            .map(str::to_owned)
    }
}

/// GET as the owner; `None` when the process is gone or the answer is not a 200.
async fn get(http: &reqwest::Client, url: &str) -> Option<Value> {
    let r = http
        .get(url)
        .header("x-kinetic-user", OWNER)
        .send()
        .await
        .ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.json().await.ok()
}
