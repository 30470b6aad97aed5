//! Read-only health reads of a cluster (what `:diagnose` looks at): single objects by
//! name (`None` on the API server's 404), node conditions (Ready and the pressures) and
//! Warning events.
//!
//! Invariant: only GET and LIST requests; `Ok(None)` only on a 404, any other failure
//! is an error, so a caller never takes "could not read" for "missing".

use std::fmt::Debug;

use chrono::{DateTime, Utc};
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Event, Node, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::ListParams;
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use super::inventory::NodeInfo;
use super::wait::status_conditions;
use super::{KubeCluster, KubeError};

/// Node conditions that mean pressure when True.
pub const PRESSURES: [&str; 3] = ["MemoryPressure", "DiskPressure", "PIDPressure"];

/// A node with what its conditions say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeHealth {
    pub info: NodeInfo,
    /// The pressure conditions that are True (`MemoryPressure`, ...).
    pub pressures: Vec<String>,
    /// The Ready condition's reason and message when it is not True.
    pub not_ready: Option<String>,
}

impl NodeHealth {
    pub fn from_node(n: &Node) -> NodeHealth {
        let conds = status_conditions(n.status.as_ref(), |s| s.conditions.as_ref());
        let pressures = conds
            .iter()
            .filter(|c| PRESSURES.contains(&c.type_.as_str()) && c.status == "True")
            .map(|c| c.type_.clone())
            .collect();
        let info = NodeInfo::from_node(n);
        let not_ready = (!info.ready).then(|| {
            conds
                .iter()
                .find(|c| c.type_ == "Ready")
                .map(|c| {
                    let why = [c.reason.clone(), c.message.clone()]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(": ");
                    format!(
                        "Ready={}{}",
                        c.status,
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(" ({why})")
                        }
                    )
                })
                .unwrap_or_else(|| "no Ready condition".to_owned())
        });
        NodeHealth {
            info,
            pressures,
            not_ready,
        }
    }
}

/// A Warning event: the object it is about, why, how often, when last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarningEvent {
    pub namespace: String,
    /// `Kind/name` of the object.
    pub object: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
    pub last_seen: Option<DateTime<Utc>>,
}

impl WarningEvent {
    pub fn from_event(e: &Event) -> WarningEvent {
        let o = &e.involved_object;
        let last_seen = e
            .last_timestamp
            .as_ref()
            .map(|t| t.0)
            .or_else(|| e.event_time.as_ref().map(|t| t.0))
            .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
            .or_else(|| e.metadata.creation_timestamp.as_ref().map(|t| t.0));
        let last_seen = last_seen.and_then(|t| {
            DateTime::<Utc>::from_timestamp(
                t.as_second(),
                u32::try_from(t.subsec_nanosecond()).unwrap_or(0),
            )
        });
        WarningEvent {
            namespace: e.metadata.namespace.clone().unwrap_or_default(),
            object: format!(
                "{}/{}",
                o.kind.clone().unwrap_or_default(),
                o.name.clone().unwrap_or_default()
            ),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default(),
            count: e.count.unwrap_or(1),
            last_seen,
        }
    }
}

impl KubeCluster {
    /// `api`'s object `name`, `None` on the API server's 404; any other failure is
    /// classified for `action`.
    pub(crate) async fn get_opt<K>(
        &self,
        api: Api<K>,
        name: &str,
        action: String,
    ) -> Result<Option<K>, KubeError>
    where
        K: Clone + DeserializeOwned + Debug,
    {
        match api.get_opt(name).await {
            Ok(o) => Ok(o),
            Err(e) => Err(self.fail(action, e).await),
        }
    }

    /// The namespaced object `namespace/name` (`kind` names it in errors), `None` when
    /// absent.
    pub(crate) async fn get_namespaced<K>(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<K>, KubeError>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        let api = Api::<K>::namespaced(self.client().await?, namespace);
        let action = format!("get {kind} {namespace}/{name}");
        self.get_opt(api, name, action).await
    }

    /// CustomResourceDefinition `name`, `None` when absent.
    pub async fn get_crd(&self, name: &str) -> Result<Option<CustomResourceDefinition>, KubeError> {
        let api = Api::<CustomResourceDefinition>::all(self.client().await?);
        self.get_opt(api, name, format!("get crd {name}")).await
    }

    /// ServiceAccount `namespace/name`, `None` when absent.
    pub async fn get_service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<ServiceAccount>, KubeError> {
        self.get_namespaced("serviceaccount", namespace, name).await
    }

    /// Every node with its Ready and pressure conditions.
    pub async fn node_health(&self) -> Result<Vec<NodeHealth>, KubeError> {
        let api = Api::<Node>::all(self.client().await?);
        match api.list(&ListParams::default()).await {
            Ok(l) => Ok(l.items.iter().map(NodeHealth::from_node).collect()),
            Err(e) => Err(self.fail("list nodes", e).await),
        }
    }

    /// Warning events of every namespace (`fieldSelector=type=Warning`).
    pub async fn warning_events(&self) -> Result<Vec<WarningEvent>, KubeError> {
        let api = Api::<Event>::all(self.client().await?);
        match api
            .list(&ListParams::default().fields("type=Warning"))
            .await
        {
            Ok(l) => Ok(l
                .items
                .iter()
                .filter(|e| e.type_.as_deref() == Some("Warning"))
                .map(WarningEvent::from_event)
                .collect()),
            Err(e) => Err(self.fail("list events", e).await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn node_conditions() {
        let n: Node = serde_json::from_value(json!({
            "metadata": {"name": "n1", "labels": {"cloud.google.com/gke-nodepool": "p"}},
            "status": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "PLEG is not healthy"},
                {"type": "MemoryPressure", "status": "True"},
                {"type": "DiskPressure", "status": "False"},
            ]}
        }))
        .unwrap();
        let h = NodeHealth::from_node(&n);
        assert_eq!(h.pressures, ["MemoryPressure"]);
        assert_eq!(
            h.not_ready.as_deref(),
            Some("Ready=False (KubeletNotReady: PLEG is not healthy)")
        );
        assert_eq!(h.info.pool.as_deref(), Some("p"));
    }
}
