//! One simulated cluster's API server state and its reconcile loop: node objects follow
//! the pools, pods on vanished nodes go back to Pending, the scheduler binds what fits,
//! the cluster autoscaler grows pools for what does not (after a virtual delay; in a
//! compute class's priority order for pods that select one, with its active migration
//! back to higher-priority pools), and the status controllers run.
//!
//! Invariant: reconcile runs whenever something changed (a write, a pool change) or a
//! timed transition is due, and repeats until nothing changes, so every handler sees a
//! settled cluster; the autoscaler counts capacity already on its way (planned
//! scale-ups) before planning more, so reconciling twice never scales twice.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Value, json};

use super::PoolNodes;
use super::ailments::Ailments;
use super::compute_class;
use super::controllers::{self, Observed};
use super::nodes;
use super::objects::{ApiStore, ObjKey, content};
use super::sched::{self, NodeView, Res};
use super::{provisioning_request, scale_up_events, workloads};
use crate::sim::clock::{Clock, SimTime};

/// Virtual time between the autoscaler deciding to add a node and the node being Ready.
pub const SCALE_UP_DELAY: Duration = Duration::from_secs(60);
/// After a spot reclaim the autoscaler leaves the pool alone this long (no capacity).
pub const RECLAIM_BACKOFF: Duration = Duration::from_secs(600);

/// Namespaces every cluster starts with.
const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Autoscaler state of one pool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRuntime {
    /// A planned scale-up: (when, node count per zone).
    pub scale_to: Option<(SimTime, u32)>,
    /// No scale-up before this time (after a spot reclaim).
    pub backoff_until: Option<SimTime>,
    /// Nodes per zone the region's Compute quota allows, and the bounding metric.
    pub quota_cap: Option<(u32, String)>,
}

/// What a spot reclaim removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reclaim {
    pub pool: String,
    pub nodes: Vec<String>,
    /// `namespace/name` of the pods that were running there.
    pub pods: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterKube {
    pub pools: BTreeMap<String, PoolNodes>,
    pub api: ApiStore,
    /// Answer aggregated discovery (what kube 5 asks for first); false: legacy only.
    pub aggregated_discovery: bool,
    /// `Authorization` headers received, one entry per change (tests check token refresh).
    #[serde(skip)]
    pub authorizations: Vec<String>,
    pub runtime: BTreeMap<String, PoolRuntime>,
    /// Objects held unhealthy by `/sim/v1/kube/{key}/ailments`.
    pub ailments: Ailments,
    #[serde(skip)]
    key: String,
    #[serde(skip)]
    observed: Observed,
    #[serde(skip)]
    dirty: bool,
    /// A reconcile changed a pool's node count since [`ClusterKube::take_counts_changed`]
    /// was last asked (the quota caps read those counts).
    #[serde(skip)]
    counts_changed: bool,
    #[serde(skip)]
    wake: Option<SimTime>,
}

impl Default for ClusterKube {
    fn default() -> Self {
        ClusterKube::new("")
    }
}

impl ClusterKube {
    /// An empty API server with the default namespaces.
    pub fn new(key: &str) -> ClusterKube {
        let mut api = ApiStore::default();
        for ns in DEFAULT_NAMESPACES {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            api.create(
                ObjKey::new("", "namespaces", "", ns),
                &body,
                "kube-apiserver",
                "Update",
                Some(json!({"phase": "Active"})),
            );
        }
        ClusterKube {
            pools: BTreeMap::new(),
            api,
            aggregated_discovery: true,
            authorizations: Vec::new(),
            runtime: BTreeMap::new(),
            ailments: Ailments::default(),
            key: key.to_owned(),
            observed: Observed::new(),
            dirty: true,
            counts_changed: false,
            wake: None,
        }
    }

    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// The most nodes per zone the region's quota lets `pool` reach, and the metric that
    /// bounds it (`None`: no limit); a change makes the autoscaler plan again.
    pub fn set_quota_cap(&mut self, pool: &str, cap: Option<(u32, String)>) {
        if !self.pools.contains_key(pool) {
            return;
        }
        let current = self.runtime.get(pool).and_then(|rt| rt.quota_cap.as_ref());
        if current != cap.as_ref() {
            self.runtime.entry(pool.to_owned()).or_default().quota_cap = cap;
            self.mark_dirty();
        }
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Remember the `Authorization` header of a request when it differs from the last
    /// one (at most 100 entries).
    pub fn record_authorization(&mut self, header: Option<&str>) {
        let h = header.unwrap_or("").to_owned();
        if self.authorizations.last() != Some(&h) && self.authorizations.len() < 100 {
            self.authorizations.push(h);
        }
    }

    /// The most recent `Authorization` header ("" when the request had none).
    pub fn last_authorization(&self) -> Option<&str> {
        self.authorizations.last().map(String::as_str)
    }

    /// Reconcile if something changed or a timed transition is due; whether it did.
    pub fn tick(&mut self, clock: &Clock) -> bool {
        let due = self.dirty || self.wake.is_some_and(|t| clock.is_due(t));
        if due {
            self.reconcile(clock);
        }
        due
    }

    /// Whether a reconcile changed a pool's node count since the last call.
    pub fn take_counts_changed(&mut self) -> bool {
        std::mem::take(&mut self.counts_changed)
    }

    pub fn reconcile(&mut self, clock: &Clock) {
        self.dirty = false;
        let counts = |pools: &BTreeMap<String, PoolNodes>| -> Vec<u32> {
            pools.values().map(|p| p.count).collect()
        };
        let before = counts(&self.pools);
        let mut wake = None;
        for _ in 0..16 {
            let mut changed = self.apply_due_scale_ups(clock);
            changed |= self.sync_nodes();
            changed |= self.evict_orphans();
            changed |= workloads::run(&mut self.api);
            changed |= provisioning_request::run(&mut self.api, &self.key, &mut self.pools);
            let (scheduled, unschedulable) = sched::schedule(&mut self.api);
            let (planned, backoff_wake) = self.autoscale(&unschedulable, clock);
            self.autoscaler_events(&unschedulable);
            let (migrated, migrate_wake) = self.migrate(clock);
            let (status, status_wake) =
                controllers::run(&mut self.api, &mut self.observed, clock, &self.ailments);
            changed |= scheduled || planned || migrated || status;
            wake = earliest([backoff_wake, migrate_wake, status_wake]);
            if !changed {
                break;
            }
        }
        let scale_wake = self
            .runtime
            .values()
            .filter_map(|r| r.scale_to.map(|(t, _)| t));
        self.wake = earliest(scale_wake.map(Some).chain([wake]));
        self.counts_changed |= counts(&self.pools) != before;
    }

    /// The autoscaler's events on the pods it could or could not help.
    fn autoscaler_events(&mut self, unschedulable: &[ObjKey]) {
        let planned: BTreeMap<String, u32> = self
            .runtime
            .iter()
            .filter_map(|(p, r)| Some((p.clone(), r.scale_to?.1)))
            .collect();
        let quota_caps: BTreeMap<String, (u32, String)> = self
            .runtime
            .iter()
            .filter_map(|(p, r)| Some((p.clone(), r.quota_cap.clone()?)))
            .collect();
        scale_up_events::record(
            &mut self.api,
            &self.key,
            &self.pools,
            &planned,
            &quota_caps,
            unschedulable,
        );
    }

    fn apply_due_scale_ups(&mut self, clock: &Clock) -> bool {
        let mut changed = false;
        for (name, rt) in self.runtime.iter_mut() {
            let Some((at, target)) = rt.scale_to else {
                continue;
            };
            if !clock.is_due(at) {
                continue;
            }
            rt.scale_to = None;
            if let Some(p) = self.pools.get_mut(name) {
                p.count = p.count.max(target.min(p.max));
            }
            changed = true;
        }
        changed
    }

    /// Make the node objects match the pools.
    fn sync_nodes(&mut self) -> bool {
        let desired = nodes::desired_nodes(&self.key, self.pools.values());
        let mut changed = false;
        for key in self.api.keys_of("", "nodes") {
            if !desired.contains_key(&key.name) {
                self.api.remove(&key);
                changed = true;
            }
        }
        for (name, mut obj) in desired {
            self.ailments.apply_to_node(&mut obj);
            let key = ObjKey::new("", "nodes", "", &name);
            match self.api.get(&key) {
                None => {
                    let status = obj["status"].clone();
                    self.api
                        .create(key, &obj, "kubelet", "Update", Some(status));
                    changed = true;
                }
                Some(cur) if content(cur) != content(&obj) || cur["status"] != obj["status"] => {
                    let mut new = obj;
                    for k in ["uid", "creationTimestamp", "generation", "managedFields"] {
                        new["metadata"][k] = cur["metadata"][k].clone();
                    }
                    self.api.put(key, new);
                    changed = true;
                }
                Some(_) => {}
            }
        }
        changed
    }

    /// Pods bound to nodes that no longer exist go back to Pending.
    fn evict_orphans(&mut self) -> bool {
        let live: BTreeSet<String> = self
            .api
            .keys_of("", "nodes")
            .into_iter()
            .map(|k| k.name)
            .collect();
        let mut changed = false;
        for key in self.api.keys_of("", "pods") {
            let Some(pod) = self.api.get(&key) else {
                continue;
            };
            let terminal = matches!(
                pod["status"]["phase"].as_str(),
                Some("Succeeded" | "Failed")
            );
            let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
            if terminal || node.is_empty() || live.contains(node) {
                continue;
            }
            let mut p = pod.clone();
            if let Some(spec) = p["spec"].as_object_mut() {
                spec.remove("nodeName");
            }
            p["status"] = sched::pending_status(None);
            self.api.put(key, p);
            changed = true;
        }
        changed
    }

    /// Plan scale-ups for unschedulable pods. Returns (planned anything, backoff wake-up).
    fn autoscale(&mut self, unschedulable: &[ObjKey], clock: &Clock) -> (bool, Option<SimTime>) {
        if unschedulable.is_empty() {
            return (false, None);
        }
        let now = clock.now();
        let zones = |p: &PoolNodes| u32::try_from(p.zones.len().max(1)).unwrap_or(1);
        // Capacity already on its way: empty template nodes for every planned node.
        let mut targets: BTreeMap<String, u32> = BTreeMap::new();
        let mut templates: BTreeMap<String, NodeView> = BTreeMap::new();
        let mut virtual_nodes: Vec<(NodeView, Res)> = Vec::new();
        for (name, p) in &self.pools {
            let tmpl = NodeView::from_json(&nodes::template(&self.key, p));
            let planned = self
                .runtime
                .get(name)
                .and_then(|r| r.scale_to)
                .map(|(_, t)| t);
            let target = planned.unwrap_or(p.count).max(p.count);
            for _ in 0..(target - p.count) * zones(p) {
                virtual_nodes.push((tmpl.clone(), Res::new()));
            }
            targets.insert(name.clone(), target);
            templates.insert(name.clone(), tmpl);
        }
        // Spot pools first (cheaper), then by name; a pod that selects a compute class
        // tries the class's pools in its priority order instead. Queued-provisioning
        // pools grow only for a ProvisioningRequest, never for pending pods.
        let mut order: Vec<(bool, String)> = self
            .pools
            .values()
            .filter(|p| !provisioning_request::is_queued(p))
            .map(|p| (!p.spot, p.pool.clone()))
            .collect();
        order.sort();
        let order: Vec<String> = order.into_iter().map(|(_, name)| name).collect();
        let classes = compute_class::classes(&self.api);
        let (mut planned_any, mut wake) = (false, None);
        for key in unschedulable {
            let Some(pod) = self.api.get(key) else {
                continue;
            };
            let (spec, req) = (&pod["spec"], sched::pod_requests(pod));
            if let Some((_, used)) = virtual_nodes
                .iter_mut()
                .find(|(n, used)| sched::check(spec, &req, n, used).is_ok())
            {
                sched::add(used, &req);
                continue;
            }
            let pools = match compute_class::selected(pod) {
                // A class that does not exist (yet) scales nothing up.
                Some(c) => classes
                    .get(c)
                    .map(|c| c.candidates(&self.pools))
                    .unwrap_or_default(),
                None => order.clone(),
            };
            for name in &pools {
                let (Some(p), Some(tmpl)) = (self.pools.get(name), templates.get(name)) else {
                    continue;
                };
                if provisioning_request::is_queued(p) {
                    continue;
                }
                let rt = self.runtime.entry(name.clone()).or_default();
                if let Some(until) = rt.backoff_until.filter(|t| !clock.is_due(*t)) {
                    wake = earliest([wake, Some(until)]);
                    continue;
                }
                let target = targets.get(name).copied().unwrap_or(p.count);
                let quota_full = rt.quota_cap.as_ref().is_some_and(|(cap, _)| target >= *cap);
                if target >= p.max
                    || quota_full
                    || sched::check(spec, &req, tmpl, &Res::new()).is_err()
                {
                    continue;
                }
                targets.insert(name.clone(), target + 1);
                virtual_nodes.push((tmpl.clone(), req.clone()));
                for _ in 1..zones(p) {
                    virtual_nodes.push((tmpl.clone(), Res::new()));
                }
                let at = rt.scale_to.map_or(now + SCALE_UP_DELAY, |(at, _)| at);
                rt.scale_to = Some((at, target + 1));
                tracing::debug!(cluster = %self.key, pool = %name, nodes = target + 1, "simulated autoscaler scale-up");
                planned_any = true;
                break;
            }
        }
        (planned_any, wake)
    }

    /// Active migration (`activeMigration.optimizeRulePriority`): a class's lower-priority
    /// pool gives up one node (per zone) once the pods on it fit on the nodes of a
    /// higher-priority pool that is not backed off; until they fit, that pool is grown
    /// by one node (per zone). Drained pods go back to Pending and the scheduler places
    /// them. Returns (changed, the earliest end of a backoff that holds a migration).
    fn migrate(&mut self, clock: &Clock) -> (bool, Option<SimTime>) {
        let classes = compute_class::classes(&self.api);
        let (mut changed, mut wake) = (false, None);
        for m in compute_class::migrations(&classes, &self.pools) {
            let Some(from) = self.pools.get(&m.from) else {
                continue;
            };
            let pods = compute_class::pods_on(&self.api, &nodes::last_nodes(&self.key, from));
            if pods.is_empty() {
                continue; // nothing to move (the simulator does not scale empty nodes down)
            }
            for to in &m.to {
                let rt = self.runtime.entry(to.clone()).or_default();
                if let Some(until) = rt.backoff_until.filter(|t| !clock.is_due(*t)) {
                    wake = earliest([wake, Some(until)]);
                    continue;
                }
                let Some(p) = self.pools.get(to) else {
                    continue;
                };
                let tmpl = NodeView::from_json(&nodes::template(&self.key, p));
                if !pods
                    .iter()
                    .all(|(spec, req)| sched::check(spec, req, &tmpl, &Res::new()).is_ok())
                {
                    continue;
                }
                if compute_class::fits_on(&self.api, to, &pods) {
                    if let Some(from) = self.pools.get_mut(&m.from) {
                        from.count -= 1;
                        tracing::debug!(cluster = %self.key, class = %m.class, from = %m.from, to = %to, "simulated active migration");
                        changed = true;
                    }
                } else if rt.scale_to.is_none() && p.count < p.max {
                    rt.scale_to = Some((clock.now() + SCALE_UP_DELAY, p.count + 1));
                    changed = true;
                }
                break;
            }
        }
        (changed, wake)
    }

    /// A spot reclaim: the pool's nodes vanish now and the autoscaler leaves it alone for
    /// [`RECLAIM_BACKOFF`]. Errors are (HTTP status, message).
    pub fn reclaim(&mut self, pool: &str, now: SimTime) -> Result<Reclaim, (u16, String)> {
        let Some(p) = self.pools.get_mut(pool) else {
            return Err((404, format!("node pool {pool} not found")));
        };
        if !p.spot {
            return Err((400, format!("node pool {pool} is not a spot pool")));
        }
        p.count = 0;
        let rt = self.runtime.entry(pool.to_owned()).or_default();
        rt.scale_to = None;
        rt.backoff_until = Some(now + RECLAIM_BACKOFF);
        let nodes: Vec<String> = self
            .api
            .list("", "nodes", None)
            .filter(|(_, n)| n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == pool)
            .map(|(k, _)| k.name.clone())
            .collect();
        let pods = self
            .api
            .list("", "pods", None)
            .filter(|(_, p)| {
                let node = p["spec"]["nodeName"].as_str().unwrap_or("");
                nodes.iter().any(|n| n == node)
            })
            .map(|(k, _)| format!("{}/{}", k.namespace, k.name))
            .collect();
        self.dirty = true;
        Ok(Reclaim {
            pool: pool.to_owned(),
            nodes,
            pods,
        })
    }

    /// Namespace `ns` exists.
    pub fn has_namespace(&self, ns: &str) -> bool {
        self.api
            .get(&ObjKey::new("", "namespaces", "", ns))
            .is_some()
    }
}

fn earliest(times: impl IntoIterator<Item = Option<SimTime>>) -> Option<SimTime> {
    times.into_iter().flatten().min()
}

/// Every object in namespace `ns` (for cascading deletes).
pub fn namespaced_keys(api: &ApiStore, ns: &str) -> Vec<ObjKey> {
    api.objects
        .keys()
        .filter(|k| k.namespace == ns)
        .cloned()
        .collect()
}

/// Initial status of a created object (controllers fill in the rest).
pub fn initial_status(kind: &str) -> Option<Value> {
    match kind {
        "Namespace" => Some(json!({"phase": "Active"})),
        "Pod" => Some(sched::pending_status(None)),
        _ => None,
    }
}
