//! What must hold once every operation ended: the simulator's journal shows no resource
//! created twice, and the simulated cloud holds exactly what kineticd's records say.
//!
//! Invariant: the cloud is read through the simulator's Google API (plain HTTP, faults
//! disarmed first) and the records through SQL; neither is changed here.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::script::PROJECT;
use crate::serve_process::journal::sim_journal;

/// Methods that create a resource, and those that delete one.
const CREATES: [&str; 7] = [
    "clusters.create",
    "nodePools.create",
    "buckets.insert",
    "networks.insert",
    "routers.insert",
    "serviceAccounts.create",
    "repositories.create",
];
const DELETES: [&str; 7] = [
    "clusters.delete",
    "nodePools.delete",
    "buckets.delete",
    "networks.delete",
    "routers.delete",
    "serviceAccounts.delete",
    "repositories.delete",
];

/// A journal entry's resource: (collection, name). Collections are paths
/// (`/container/v1/projects/p/locations/z/clusters`) except service accounts, which are
/// named by their email's local part however the path spells the project.
fn resource(e: &Value) -> Option<(String, String)> {
    let method = e["method"].as_str()?;
    let path = e["path"].as_str()?.trim_end_matches('/');
    let body = &e["body"];
    if CREATES.contains(&method) {
        let name = match method {
            "clusters.create" => body["cluster"]["name"].as_str(),
            "nodePools.create" => body["nodePool"]["name"].as_str(),
            "serviceAccounts.create" => body["accountId"].as_str(),
            "repositories.create" => e["query"]
                .as_str()?
                .split('&')
                .find_map(|kv| kv.strip_prefix("repositoryId=")),
            _ => body["name"].as_str(),
        }?;
        let collection = if method == "serviceAccounts.create" {
            "serviceAccounts".to_owned()
        } else {
            path.to_owned()
        };
        return Some((collection, name.to_owned()));
    }
    let (collection, name) = path.rsplit_once('/')?;
    let name = percent_decode(name);
    if method == "serviceAccounts.delete" {
        let local = name.split('@').next().unwrap_or(&name).to_owned();
        return Some(("serviceAccounts".to_owned(), local));
    }
    Some((collection.to_owned(), name))
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_owned())
}

/// What the journal says was created and deleted, in order.
pub struct Lifecycle {
    /// Resources a successful create found already existing (created before and not
    /// deleted since): duplicates.
    pub duplicates: Vec<String>,
    /// Successful creates, by method.
    pub creates: BTreeMap<String, usize>,
    /// Names of the GKE clusters and node pools ever created.
    pub gke_clusters: BTreeSet<String>,
    pub gke_pools: BTreeSet<(String, String)>,
}

/// Read the journal's successful creates and deletes and replay them.
pub async fn lifecycle(http: &reqwest::Client, sim_url: &str) -> Lifecycle {
    let mut entries = Vec::new();
    for m in CREATES.iter().chain(DELETES.iter()) {
        entries.extend(sim_journal(http, sim_url, &[("method", *m)]).await);
    }
    entries.retain(|e| {
        e["status"]
            .as_u64()
            .is_some_and(|s| (200..300).contains(&s))
    });
    // The journal is in arrival order and its times are RFC 3339 with a fixed width.
    entries.sort_by(|a, b| a["time"].as_str().cmp(&b["time"].as_str()));
    let mut live: BTreeSet<(String, String)> = BTreeSet::new();
    let mut out = Lifecycle {
        duplicates: Vec::new(),
        creates: BTreeMap::new(),
        gke_clusters: BTreeSet::new(),
        gke_pools: BTreeSet::new(),
    };
    for e in &entries {
        let method = e["method"].as_str().unwrap_or("");
        let Some(key) = resource(e) else {
            panic!("journal entry names no resource: {e}");
        };
        if CREATES.contains(&method) {
            *out.creates.entry(method.to_owned()).or_default() += 1;
            if method == "clusters.create" {
                out.gke_clusters.insert(key.1.clone());
            }
            if method == "nodePools.create" {
                let cluster = key.0.rsplit('/').nth(1).unwrap_or("").to_owned();
                out.gke_pools.insert((cluster, key.1.clone()));
            }
            if !live.insert(key.clone()) {
                out.duplicates
                    .push(format!("{method} {}/{} at {}", key.0, key.1, e["time"]));
            }
        } else {
            live.remove(&key);
            if method == "clusters.delete" {
                // The cluster's pools go with it.
                let pools = format!("{}/{}/nodePools", key.0, key.1);
                live.retain(|(c, _)| *c != pools);
            }
        }
    }
    out
}

/// A cluster as the cloud or the records hold it: its node pools with their
/// autoscaling bounds.
pub type Pools = BTreeMap<String, (i64, i64)>;

/// The GKE clusters of the project in the simulator: name -> (zone, status, pools).
pub async fn cloud_clusters(
    http: &reqwest::Client,
    sim_url: &str,
) -> BTreeMap<String, (String, String, Pools)> {
    let url = format!("{sim_url}/container/v1/projects/{PROJECT}/locations/-/clusters");
    let list: Value = http
        .get(url)
        .send()
        .await
        .expect("clusters.list")
        .json()
        .await
        .expect("clusters.list body");
    let mut out = BTreeMap::new();
    for c in list["clusters"].as_array().cloned().unwrap_or_default() {
        let pools = c["nodePools"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|p| {
                let a = &p["autoscaling"];
                (
                    p["name"].as_str().unwrap_or("?").to_owned(),
                    (
                        a["minNodeCount"].as_i64().unwrap_or(-1),
                        a["maxNodeCount"].as_i64().unwrap_or(-1),
                    ),
                )
            })
            .collect();
        out.insert(
            c["name"].as_str().unwrap_or("?").to_owned(),
            (
                c["location"].as_str().unwrap_or("?").to_owned(),
                c["status"].as_str().unwrap_or("?").to_owned(),
                pools,
            ),
        );
    }
    out
}

/// The clusters the records hold (not DELETED): name -> (zone, state, pools not DELETED).
pub async fn recorded_clusters(
    db: &kineticd::store::Db,
) -> BTreeMap<String, (String, String, Pools)> {
    type Row = (String, String, String, Option<String>, Option<Value>);
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT c.name, c.zone, c.state, p.pool_id, p.spec FROM clusters c \
         LEFT JOIN node_pools p ON p.cluster_id = c.id AND p.state <> 'DELETED' \
         WHERE c.project_id = $1 AND c.state <> 'DELETED' ORDER BY c.name, p.pool_id",
    )
    .bind(PROJECT)
    .fetch_all(db)
    .await
    .expect("read records");
    let mut out: BTreeMap<String, (String, String, Pools)> = BTreeMap::new();
    for (name, zone, state, pool, spec) in rows {
        let e = out
            .entry(name)
            .or_insert_with(|| (zone, state, Pools::new()));
        if let (Some(pool), Some(spec)) = (pool, spec) {
            let bound = |k: &str| spec[k].as_i64().unwrap_or(-1);
            e.2.insert(pool, (bound("minNodes"), bound("maxNodes")));
        }
    }
    out
}
