//! Server-side apply (field manager `kineticd`, forced) of multi-document YAML, and the
//! delete of one object by kind and name.
//!
//! Invariant: Namespaces are applied first, then CustomResourceDefinitions, then
//! everything else in manifest order; every kind is resolved through discovery (re-run,
//! for a bounded time, until the custom kinds of freshly applied CRDs are served), so a
//! namespaced object without a namespace lands in `default` and a cluster-scoped one
//! never carries a namespace. Applying the same manifest twice changes nothing, so one
//! object's apply that fails with a retryable error (429, 5xx, a timeout) is sent again
//! after a short backoff, a few times ([`APPLY_TRIES`], through
//! [`KubeCluster::idempotent`]): a manifest of many
//! objects is not started over for one transient error (the crash soak, tests/soak.rs,
//! found the LeaderWorkerSet step needing a dozen attempts at 25% transient faults).

use std::time::{Duration, Instant};

use kube::Api;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};
use serde_json::Value;

use super::{KubeCluster, KubeError};

/// The field manager of every apply kineticd makes.
pub const FIELD_MANAGER: &str = "kineticd";

/// How long to wait for the kinds of freshly applied CRDs to be served.
const CUSTOM_KIND_WAIT: Duration = Duration::from_secs(30);

/// Tries of one object's apply when it fails with a retryable error (every idempotent
/// call's, [`super::CALL_TRIES`]).
pub const APPLY_TRIES: u32 = super::CALL_TRIES;

/// One applied object, as the API server returned it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub api_version: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
    pub resource_version: Option<String>,
    pub generation: Option<i64>,
}

impl Applied {
    /// `Kind namespace/name` (or `Kind name`), for progress messages.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.kind, self.name),
            None => format!("{} {}", self.kind, self.name),
        }
    }
}

/// Parse multi-document YAML (or JSON) into objects; empty documents are skipped and
/// `kind: List` documents are expanded. Every object needs apiVersion, kind and a name.
pub fn parse_manifest(text: &str) -> Result<Vec<DynamicObject>, KubeError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| KubeError::Manifest(format!("not valid YAML: {e}")))?;
    let mut values = Vec::new();
    for doc in docs {
        match doc {
            Value::Null => {}
            Value::Object(ref m) if m.get("kind").and_then(Value::as_str) == Some("List") => {
                if let Some(items) = m.get("items").and_then(Value::as_array) {
                    values.extend(items.iter().cloned());
                }
            }
            Value::Object(_) => values.push(doc),
            other => {
                return Err(KubeError::Manifest(format!(
                    "a document is not a mapping: {}",
                    truncate(&other.to_string())
                )));
            }
        }
    }
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| to_object(i, v))
        .collect()
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

fn to_object(index: usize, v: Value) -> Result<DynamicObject, KubeError> {
    let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    if api_version.is_empty() || kind.is_empty() {
        return Err(KubeError::Manifest(format!(
            "object #{} has no apiVersion or kind",
            index + 1
        )));
    }
    let obj: DynamicObject = serde_json::from_value(v)
        .map_err(|e| KubeError::Manifest(format!("{kind} #{}: {e}", index + 1)))?;
    if obj.metadata.name.as_deref().unwrap_or("").is_empty() {
        return Err(KubeError::Manifest(format!(
            "{kind} #{} has no metadata.name (server-side apply needs one)",
            index + 1
        )));
    }
    Ok(obj)
}

/// Apply order: 0 Namespaces, 1 CRDs, 2 everything else.
fn phase(obj: &DynamicObject) -> u8 {
    let Some(t) = obj.types.as_ref() else {
        return 2;
    };
    match (t.api_version.as_str(), t.kind.as_str()) {
        ("v1", "Namespace") => 0,
        (av, "CustomResourceDefinition") if av.starts_with("apiextensions.k8s.io/") => 1,
        _ => 2,
    }
}

fn gvk_of(obj: &DynamicObject) -> Result<GroupVersionKind, KubeError> {
    let t = obj
        .types
        .as_ref()
        .ok_or_else(|| KubeError::Manifest("an object has no apiVersion/kind".into()))?;
    GroupVersionKind::try_from(t)
        .map_err(|e| KubeError::Manifest(format!("apiVersion {:?}: {e}", t.api_version)))
}

fn resolve(
    disc: &Discovery,
    obj: &DynamicObject,
) -> Result<Option<(ApiResource, ApiCapabilities)>, KubeError> {
    Ok(disc.resolve_gvk(&gvk_of(obj)?))
}

impl KubeCluster {
    /// Discovery through the aggregated API, falling back to per-group discovery when the
    /// server does not offer it (an old server answers the aggregated request with the
    /// plain document, which parses as an empty list: no core group).
    pub async fn discover(&self) -> Result<Discovery, KubeError> {
        let client = self.client().await?;
        match Discovery::new(client.clone()).run_aggregated().await {
            Ok(d) if d.has_group("") => return Ok(d),
            Ok(_) => tracing::debug!(cluster = %self.access().key, "no aggregated discovery"),
            Err(e) => {
                let err = self.fail("aggregated discovery", e).await;
                if matches!(
                    err,
                    KubeError::Transport { .. } | KubeError::Token(_) | KubeError::Config(_)
                ) {
                    return Err(err);
                }
                tracing::debug!(cluster = %self.access().key, error = %err, "aggregated discovery failed");
            }
        }
        match Discovery::new(client).run().await {
            Ok(d) => Ok(d),
            Err(e) => Err(self.fail("discovery", e).await),
        }
    }

    /// Parse `yaml` and apply every object (see the module invariant).
    pub async fn apply_yaml(&self, yaml: &str) -> Result<Vec<Applied>, KubeError> {
        self.apply_objects(parse_manifest(yaml)?).await
    }

    /// Apply `objects`: Namespaces, then CRDs, then the rest in the given order.
    pub async fn apply_objects(
        &self,
        mut objects: Vec<DynamicObject>,
    ) -> Result<Vec<Applied>, KubeError> {
        objects.sort_by_key(phase); // stable: manifest order within a phase
        let split = objects
            .iter()
            .position(|o| phase(o) == 2)
            .unwrap_or(objects.len());
        let rest = objects.split_off(split);
        let crds_applied = objects.iter().any(|o| phase(o) == 1);
        let mut disc = self.discover().await?;
        let mut out = Vec::with_capacity(objects.len() + rest.len());
        for obj in objects {
            out.push(self.apply_one(&disc, obj).await?);
        }
        let started = Instant::now();
        loop {
            let mut missing = None;
            for obj in &rest {
                if resolve(&disc, obj)?.is_none() {
                    missing = Some(gvk_of(obj)?);
                    break;
                }
            }
            let Some(gvk) = missing else { break };
            if !crds_applied || started.elapsed() >= CUSTOM_KIND_WAIT {
                // No CRD was applied that could add the kind, or it never came (to apply
                // custom resources alone, wait for their CRD to be Established first).
                return Err(KubeError::UnknownKind {
                    api_version: gvk.api_version(),
                    kind: gvk.kind,
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            disc = self.discover().await?;
        }
        for obj in rest {
            out.push(self.apply_one(&disc, obj).await?);
        }
        Ok(out)
    }

    /// Delete the object `name` of `api_version`/`kind` (in `namespace` when the kind
    /// is namespaced): true when it was there, false when it was not or its kind is not
    /// served (then no such object can exist).
    pub async fn delete_object(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<bool, KubeError> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let Some((ar, caps)) = self.discover().await?.resolve_gvk(&gvk) else {
            return Ok(false);
        };
        let client = self.client().await?;
        let api: Api<DynamicObject> = match (caps.scope, namespace) {
            (Scope::Namespaced, ns) => Api::namespaced_with(client, ns.unwrap_or("default"), &ar),
            (Scope::Cluster, _) => Api::all_with(client, &ar),
        };
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(true),
            Err(e) => {
                let err = self
                    .fail(format!("delete {api_version} {kind} {name}"), e)
                    .await;
                if err.is_not_found() {
                    Ok(false)
                } else {
                    Err(err)
                }
            }
        }
    }

    async fn apply_one(
        &self,
        disc: &Discovery,
        mut obj: DynamicObject,
    ) -> Result<Applied, KubeError> {
        let gvk = gvk_of(&obj)?;
        let (ar, caps) = disc
            .resolve_gvk(&gvk)
            .ok_or_else(|| KubeError::UnknownKind {
                api_version: gvk.api_version(),
                kind: gvk.kind.clone(),
            })?;
        let name = obj.metadata.name.clone().unwrap_or_default();
        // Server-owned metadata in a manifest would be a precondition or rejected.
        obj.metadata.managed_fields = None;
        obj.metadata.resource_version = None;
        obj.metadata.uid = None;
        obj.metadata.creation_timestamp = None;
        let client = self.client().await?;
        let (api, namespace): (Api<DynamicObject>, _) = match caps.scope {
            Scope::Namespaced => {
                let ns = obj
                    .metadata
                    .namespace
                    .get_or_insert_with(|| "default".to_owned())
                    .clone();
                (Api::namespaced_with(client, &ns, &ar), Some(ns))
            }
            Scope::Cluster => {
                obj.metadata.namespace = None;
                (Api::all_with(client, &ar), None)
            }
        };
        let action = match &namespace {
            Some(ns) => format!("apply {} {} {ns}/{name}", ar.api_version, ar.kind),
            None => format!("apply {} {} {name}", ar.api_version, ar.kind),
        };
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let patch = Patch::Apply(&obj);
        let applied = self
            .idempotent("objects.apply", &action, || {
                api.patch(&name, &params, &patch)
            })
            .await?;
        Ok(Applied {
            api_version: ar.api_version.clone(),
            kind: ar.kind.clone(),
            namespace,
            name,
            resource_version: applied.metadata.resource_version,
            generation: applied.metadata.generation,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_orders() {
        let yaml = "\
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
---
# only a comment
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: ns1}
";
        let mut objs = parse_manifest(yaml).unwrap();
        assert_eq!(objs.len(), 3);
        objs.sort_by_key(phase);
        let kinds: Vec<_> = objs
            .iter()
            .map(|o| o.types.as_ref().unwrap().kind.clone())
            .collect();
        assert_eq!(
            kinds,
            ["Namespace", "CustomResourceDefinition", "Deployment"]
        );
    }

    #[test]
    fn rejects_bad_documents() {
        for bad in [
            "kind: Pod\nmetadata: {name: x}\n",
            "apiVersion: v1\nkind: Pod\nmetadata: {generateName: x-}\n",
            "- 1\n- 2\n",
            "a: [\n",
        ] {
            let got = parse_manifest(bad);
            assert!(
                matches!(got, Err(KubeError::Manifest(_))),
                "{bad:?}: {got:?}"
            );
        }
    }
}
