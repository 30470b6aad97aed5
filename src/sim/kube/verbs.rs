//! The verbs on objects: list (label and field selectors; Tables on request; watches
//! are [`super::watch`]), get, create (POST,
//! with `generateName`), server-side apply and merge patches (PATCH), update (PUT) and
//! delete (cascading for namespaces and CRDs), with the API server's validation.
//!
//! Invariant: nothing is stored unless it passed validation (apiVersion and kind match
//! the path, name and namespace agree with the URL, the namespace exists, CRDs are
//! well-formed), and every successful write marks the cluster for reconciliation.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::cluster::{ClusterKube, initial_status, namespaced_keys};
use super::objects::{ObjKey, Outcome, Write, write_existing};
use super::rbac::validation::check_binding;
use super::request::{Reply, Req};
use super::resources::{CRD_GROUP, CRD_PLURAL, ResourceDef, crd_defs};
use super::selectors::selected;
use super::status::KStatus;
use super::table;
use super::validation::{field_validation, normalise_and_admit, parse_body, validate};

/// The field manager of a non-apply write.
fn client_manager(req: &Req) -> String {
    req.param("fieldManager")
        .unwrap_or("kube-client")
        .to_owned()
}

fn key(def: &ResourceDef, ns: Option<&str>, name: &str) -> ObjKey {
    ObjKey::new(&def.group, &def.plural, ns.unwrap_or(""), name)
}

/// The object a request names: its resource, namespace (`None`: cluster-scoped) and name.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub def: &'a ResourceDef,
    pub ns: Option<&'a str>,
    pub name: &'a str,
}

impl At<'_> {
    fn key(&self) -> ObjKey {
        key(self.def, self.ns, self.name)
    }
}

fn object(code: StatusCode, def: &ResourceDef, k: ObjKey) -> Reply {
    Reply::Object(code, k, def.api_version())
}

/// The objects a list request selects, with their apiVersion.
pub fn list_items(c: &ClusterKube, def: &ResourceDef, ns: Option<&str>, req: &Req) -> Vec<Value> {
    let labels = req.param("labelSelector").unwrap_or("");
    let fields = req.param("fieldSelector").unwrap_or("");
    c.api
        .list(&def.group, &def.plural, ns)
        .map(|(_, o)| o)
        .filter(|o| selected(labels, fields, o))
        .map(|o| {
            let mut o = o.clone();
            o["apiVersion"] = json!(def.api_version());
            o
        })
        .collect()
}

pub fn list(c: &ClusterKube, def: &ResourceDef, ns: Option<&str>, req: &Req) -> Reply {
    let items = list_items(c, def, ns, req);
    let rv = c.api.resource_version.to_string();
    if table::wants_table(&req.accept) {
        return Reply::Json(StatusCode::OK, table::table(&c.api, def, &items, &rv, true));
    }
    Reply::Json(
        StatusCode::OK,
        json!({
            "kind": format!("{}List", def.kind),
            "apiVersion": def.api_version(),
            "metadata": {"resourceVersion": rv},
            "items": items,
        }),
    )
}

pub fn get(c: &ClusterKube, at: At<'_>, req: &Req) -> Reply {
    let At { def, name, .. } = at;
    let k = at.key();
    let Some(obj) = c.api.get(&k) else {
        return def.not_found(name).into();
    };
    if table::wants_table(&req.accept) {
        let rv = c.api.resource_version.to_string();
        return Reply::Json(
            StatusCode::OK,
            table::table(&c.api, def, std::slice::from_ref(obj), &rv, true),
        );
    }
    object(StatusCode::OK, def, k)
}

pub fn create(c: &mut ClusterKube, def: &ResourceDef, ns: Option<&str>, req: &Req) -> Reply {
    answer(|| {
        let mut body = parse_body(req)?;
        field_validation(def, req, &body, false)?;
        let name = validate(c, def, ns, None, &mut body, false)?;
        let k = key(def, ns, &name);
        if c.api.get(&k).is_some() {
            return Err(KStatus::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", def.qualified()),
            ));
        }
        let manager = req.param("fieldManager").unwrap_or("kube-client");
        Ok(store_new(c, def, k, &body, manager, "Update"))
    })
}

/// Store `body` as the new object `k` (written by `manager` through `operation`,
/// `Update` or `Apply`) and answer 201 with it.
fn store_new(
    c: &mut ClusterKube,
    def: &ResourceDef,
    k: ObjKey,
    body: &Value,
    manager: &str,
    operation: &str,
) -> Reply {
    c.api.create(
        k.clone(),
        body,
        manager,
        operation,
        initial_status(&def.kind),
    );
    c.mark_dirty();
    object(StatusCode::CREATED, def, k)
}

/// The write a PATCH asks for, by its media type.
fn patch_write(def: &ResourceDef, name: &str, req: &Req) -> Result<Write, KStatus> {
    Ok(match req.media.as_str() {
        "application/apply-patch+yaml" => {
            let Some(manager) = req.param("fieldManager").filter(|m| !m.is_empty()) else {
                return Err(def.invalid(
                    name,
                    "fieldManager: Required value: is required for apply patch",
                ));
            };
            Write::Apply {
                manager: manager.to_owned(),
                force: req.param("force") == Some("true"),
            }
        }
        "application/merge-patch+json" => Write::Merge {
            manager: client_manager(req),
        },
        "application/strategic-merge-patch+json" => Write::Strategic {
            manager: client_manager(req),
        },
        other => {
            return Err(KStatus::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format ({other}) - accepted media types include: application/apply-patch+yaml, application/merge-patch+json, application/strategic-merge-patch+json"
                ),
            ));
        }
    })
}

pub fn patch(c: &mut ClusterKube, at: At<'_>, req: &Req) -> Reply {
    let At { def, ns, name } = at;
    answer(|| {
        let k = at.key();
        let write = patch_write(def, name, req)?;
        let mut body = parse_body(req)?;
        let apply = matches!(write, Write::Apply { .. });
        field_validation(def, req, &body, apply)?;
        let existing = c.api.get(&k).cloned();
        match (&write, existing) {
            (Write::Apply { manager, .. }, None) => {
                validate(c, def, ns, Some(name), &mut body, true)?;
                Ok(store_new(c, def, k, &body, manager, "Apply"))
            }
            (_, None) => Err(def.not_found(name)),
            (_, Some(existing)) => {
                if apply {
                    validate(c, def, ns, Some(name), &mut body, true)?;
                }
                store_write(c, def, k, &existing, &body, &write)
            }
        }
    })
}

/// A verb's answer: what `f` replies, or the Status it fails with.
fn answer(f: impl FnOnce() -> Result<Reply, KStatus>) -> Reply {
    f().unwrap_or_else(Reply::from)
}

fn store_write(
    c: &mut ClusterKube,
    def: &ResourceDef,
    k: ObjKey,
    existing: &Value,
    body: &Value,
    write: &Write,
) -> Result<Reply, KStatus> {
    let finish = |obj: &mut Value| normalise_and_admit(def, &k.name, obj);
    match write_existing(existing, body, write, &finish)? {
        Outcome::Unchanged => {}
        Outcome::Changed(obj) => {
            check_binding(def, &k.name, &obj, Some(existing))?;
            c.api.put(k.clone(), obj);
            c.mark_dirty();
        }
    }
    Ok(object(StatusCode::OK, def, k))
}

pub fn update(c: &mut ClusterKube, at: At<'_>, req: &Req) -> Reply {
    let At { def, ns, name } = at;
    answer(|| {
        let k = at.key();
        let mut body = parse_body(req)?;
        let Some(existing) = c.api.get(&k).cloned() else {
            return Err(def.not_found(name));
        };
        field_validation(def, req, &body, false)?;
        validate(c, def, ns, Some(name), &mut body, false)?;
        if let Some(rv) = body["metadata"]["resourceVersion"].as_str()
            && Some(rv) != existing["metadata"]["resourceVersion"].as_str()
        {
            return Err(KStatus::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                    def.qualified()
                ),
            ));
        }
        let manager = client_manager(req);
        store_write(c, def, k, &existing, &body, &Write::Update { manager })
    })
}

pub fn delete(c: &mut ClusterKube, at: At<'_>) -> Reply {
    let At { def, name, .. } = at;
    let k = at.key();
    let Some(removed) = c.api.remove(&k) else {
        return def.not_found(name).into();
    };
    if def.group.is_empty() && def.plural == "namespaces" {
        for k in namespaced_keys(&c.api, name) {
            c.api.remove(&k);
        }
    }
    if def.group == CRD_GROUP && def.plural == CRD_PLURAL {
        for d in crd_defs(&removed) {
            for k in c.api.keys_of(&d.group, &d.plural) {
                c.api.remove(&k);
            }
        }
    }
    c.mark_dirty();
    let mut removed = removed;
    removed["apiVersion"] = json!(def.api_version());
    Reply::Json(StatusCode::OK, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::clock::{Clock, ClockMode};
    use crate::sim::kube::PoolNodes;
    use axum::http::Method;

    fn post(body: Value) -> Req {
        Req {
            method: Method::POST,
            query: vec![("fieldValidation".into(), "Strict".into())],
            accept: "application/json".into(),
            media: "application/json".into(),
            body: body.to_string().into(),
        }
    }

    fn pool(name: &str, machine: &str, gpus: Option<&str>) -> PoolNodes {
        let mut p = PoolNodes {
            pool: name.into(),
            machine_type: machine.into(),
            zones: vec!["us-central1-a".into()],
            count: 1,
            max: 1,
            ..PoolNodes::default()
        };
        if let Some(n) = gpus {
            p.allocatable.insert("nvidia.com/gpu".into(), n.into());
            p.taints.push((
                "nvidia.com/gpu".into(),
                "present".into(),
                "NoSchedule".into(),
            ));
        }
        p
    }

    /// Regression: `nvidia.com/gpu: 1` as a JSON number used to read as "asks for
    /// nothing", and the pod landed on the CPU node.
    #[test]
    fn a_gpu_count_written_as_a_number_lands_on_a_gpu_node() {
        let clock = Clock::new(ClockMode::Explicit);
        let mut c = ClusterKube::new("k");
        c.pools
            .insert("cpu".into(), pool("cpu", "e2-standard-4", None));
        c.pools
            .insert("gpu".into(), pool("gpu", "g2-standard-4", Some("1")));
        c.reconcile(&clock);
        let defs = super::super::resources::all(&c.api);
        let def = super::super::resources::find(&defs, "", "v1", "pods").unwrap();
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i",
                "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": 0.5}}}]}});
        assert!(matches!(
            create(&mut c, &def, Some("default"), &post(pod)),
            Reply::Object(..)
        ));
        c.reconcile(&clock);
        let stored = c.api.get(&ObjKey::new("", "pods", "default", "p")).unwrap();
        let res = &stored["spec"]["containers"][0]["resources"];
        assert_eq!(res["limits"], json!({"nvidia.com/gpu": "1", "cpu": "500m"}));
        assert_eq!(res["requests"], res["limits"], "requests default to limits");
        let node = stored["spec"]["nodeName"].as_str().unwrap();
        assert!(node.starts_with("gke-gpu-"), "{node}");

        let bad = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "half"}}}]}});
        let Reply::Error(e) = create(&mut c, &def, Some("default"), &post(bad)) else {
            panic!("accepted")
        };
        assert_eq!((e.code, e.reason), (400, "BadRequest"), "{}", e.message);
        let typo = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "r"},
            "spec": {"containers": [{"name": "c", "imagePullPolcy": "Always"}]}});
        let Reply::Error(e) = create(&mut c, &def, Some("default"), &post(typo)) else {
            panic!("accepted")
        };
        assert!(
            e.message.ends_with(
                r#"strict decoding error: unknown field "spec.containers[0].imagePullPolcy""#
            ),
            "{}",
            e.message
        );
    }
}
