//! The HTTP face of the simulated API servers: `/kube/{key}/...` paths as the kube crate
//! builds them (`/version`, discovery under `/api` and `/apis`, legacy or aggregated by
//! `Accept`, and object paths, parsed in `request`), Kubernetes `Status` errors,
//! injected faults, and a user's requests authorised by RBAC (`rbac`).
//!
//! Invariant: a request is parsed and checked for faults before the world lock is taken;
//! a user's request is authorised under one short hold of the lock before anything else
//! (watches included); the lock is held for the whole (synchronous) state change plus reconcile, so the
//! response shows the settled object, and it is never held across an `.await`.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde_json::{Value, json};

use super::cluster::ClusterKube;
use super::objects::ApiStore;
use super::rbac::{self, Caller};
use super::request::{Reply, Req, Target, parse, resolve};
use super::resources;
use super::status::KStatus;
use super::{openapi, verbs, watch};
use crate::sim::faults::FaultKind;
use crate::sim::{Sim, tag};

pub fn routes() -> Router<Sim> {
    Router::new()
        .route("/kube/{key}", any(root))
        .route("/kube/{key}/{*rest}", any(handle))
}

/// The media type of a request body, without parameters.
fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The journal/fault method name of a request.
fn method_name(method: &Method, target: &Target, media: &str) -> &'static str {
    match target {
        Target::Version => "kube.version",
        Target::OpenApiV2 | Target::OpenApiV3(_) => "kube.openapi",
        Target::CoreVersions | Target::Groups | Target::Group(_) | Target::Resources { .. } => {
            "kube.discovery"
        }
        Target::Collection { .. } => match *method {
            Method::GET => "kube.list",
            Method::POST => "kube.create",
            _ => "kube.other",
        },
        Target::Object { .. } => match *method {
            Method::GET => "kube.get",
            Method::PATCH if media == "application/apply-patch+yaml" => "kube.apply",
            Method::PATCH => "kube.patch",
            Method::PUT => "kube.update",
            Method::DELETE => "kube.delete",
            _ => "kube.other",
        },
    }
}

/// An armed fault, rendered as an API server would fail.
async fn fault(kind: FaultKind) -> Response {
    let s = match kind {
        FaultKind::Http429 => KStatus::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later (simulated)",
        ),
        FaultKind::Http500 => KStatus::new(
            500,
            "InternalError",
            "an error on the server (\"simulated\") has prevented the request from succeeding",
        ),
        FaultKind::Http503 | FaultKind::Stockout => KStatus::new(
            503,
            "ServiceUnavailable",
            "the server is currently unable to handle the request (simulated)",
        ),
        FaultKind::Timeout => {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
            KStatus::new(
                504,
                "Timeout",
                "the server was unable to return a response in the time allotted (simulated)",
            )
        }
        FaultKind::GkeBusy => KStatus::new(
            409,
            "Conflict",
            "the object has been modified; please apply your changes to the latest version and try again (simulated)",
        ),
        FaultKind::QuotaExceeded => KStatus::new(403, "Forbidden", "exceeded quota (simulated)"),
        FaultKind::Http401 => KStatus::new(401, "Unauthorized", "Unauthorized (simulated)"),
        FaultKind::Http403 => KStatus::new(
            403,
            "Forbidden",
            "the caller is forbidden to do this (simulated)",
        ),
    };
    s.into_response()
}

fn unknown_cluster(key: &str) -> Response {
    KStatus::new(404, "NotFound", format!("cluster {key:?} not found")).into_response()
}

async fn root(State(sim): State<Sim>, Path(key): Path<String>) -> Response {
    let exists = sim.world().kube.clusters.contains_key(&key);
    let resp = if exists {
        KStatus::no_resource().into_response()
    } else {
        unknown_cluster(&key)
    };
    tag("kube.other", resp)
}

async fn handle(
    State(sim): State<Sim>,
    Path((key, rest)): Path<(String, String)>,
    method: Method,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(target) = parse(&rest) else {
        return tag("kube.other", KStatus::no_resource());
    };
    let media = media_type(&headers);
    let name = method_name(&method, &target, &media);
    if let Some(kind) = sim.faults().take("kube", name) {
        return tag(name, fault(kind).await);
    }
    let req = Req {
        method,
        query: url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect(),
        accept: headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned(),
        media,
        body,
    };
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let caller = match rbac::authenticate(auth.as_deref()) {
        Ok(caller) => caller,
        Err(s) => return tag(name, s.into_response()),
    };
    if let Some(caller) = &caller {
        let attrs = rbac::attributes(&target, &rest, &req);
        let denied = {
            let world = sim.world();
            let c = world.kube.clusters.get(&key);
            c.and_then(|c| rbac::authorize(&c.api, caller, &attrs).err())
        };
        if let Some(s) = denied {
            return tag(name, s.into_response());
        }
    }
    if req.method == Method::GET && watch::is_watch(&req) {
        return tag("kube.watch", watch::serve(sim.clone(), key, &target, &req));
    }
    let resp = {
        let mut world = sim.world();
        match world.kube_mut().clusters.get_mut(&key) {
            None => unknown_cluster(&key),
            Some(c) => {
                c.record_authorization(auth.as_deref());
                let reply = serve(c, &target, &req, caller.as_ref());
                if c.is_dirty() {
                    c.reconcile(sim.clock());
                }
                render(c, reply)
            }
        }
    };
    tag(name, resp)
}

fn render(c: &ClusterKube, reply: Reply) -> Response {
    match reply {
        Reply::Json(code, v) => (code, axum::Json(v)).into_response(),
        Reply::Aggregated(v) => (
            [(header::CONTENT_TYPE, resources::AGGREGATED_CONTENT_TYPE)],
            v.to_string(),
        )
            .into_response(),
        Reply::Object(code, key, api_version) => match c.api.get(&key) {
            Some(obj) => {
                let mut obj = obj.clone();
                obj["apiVersion"] = json!(api_version);
                (code, axum::Json(obj)).into_response()
            }
            None => {
                KStatus::new(404, "NotFound", format!("\"{}\" not found", key.name)).into_response()
            }
        },
        Reply::Error(s) => s.into_response(),
    }
}

/// `/openapi/v2`: JSON for clients that accept it; kubectl's client asks for protobuf
/// only (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and is told 406,
/// after which it uses OpenAPI v3 (field validation, explain, apply), as it does first.
fn openapi_v2(accept: &str, store: &ApiStore) -> Reply {
    let json_ok = accept.trim().is_empty()
        || accept
            .split(',')
            .map(|m| m.split(';').next().unwrap_or("").trim())
            .any(|m| matches!(m, "application/json" | "application/*" | "*/*"));
    if json_ok {
        return Reply::Json(StatusCode::OK, openapi::v2(store));
    }
    KStatus::new(
        406,
        "NotAcceptable",
        format!("the simulator serves /openapi/v2 as application/json only, not {accept:?}; /openapi/v3 is served too"),
    )
    .into()
}

fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.5-gke.1000",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-10-01T00:00:00Z",
        "goVersion": "go1.24.6",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

fn serve(c: &mut ClusterKube, target: &Target, req: &Req, caller: Option<&Caller>) -> Reply {
    if req.method == Method::POST
        && let Some(reply) = rbac::review::serve(&c.api, caller, target, req)
    {
        return reply;
    }
    let discovery = !matches!(target, Target::Collection { .. } | Target::Object { .. });
    if discovery && req.method != Method::GET {
        return KStatus::method_not_allowed(&format!("{} on discovery", req.method)).into();
    }
    let defs = resources::all(&c.api);
    let aggregated = c.aggregated_discovery && resources::wants_aggregated(&req.accept);
    let ok = |v: Value| Reply::Json(StatusCode::OK, v);
    match target {
        Target::Version => ok(version()),
        Target::OpenApiV2 => openapi_v2(&req.accept, &c.api),
        Target::OpenApiV3(None) => ok(openapi::root(&c.api)),
        Target::OpenApiV3(Some(gv)) => {
            openapi::group_version(&c.api, gv).map_or(KStatus::no_resource().into(), ok)
        }
        Target::CoreVersions if aggregated => Reply::Aggregated(resources::aggregated(&defs, true)),
        Target::CoreVersions => ok(resources::api_versions()),
        Target::Groups if aggregated => Reply::Aggregated(resources::aggregated(&defs, false)),
        Target::Groups => ok(resources::group_list(&defs)),
        Target::Group(g) => resources::group(&defs, g).map_or(KStatus::no_resource().into(), ok),
        Target::Resources { group, version } => resources::resource_list(&defs, group, version)
            .map_or(KStatus::no_resource().into(), ok),
        Target::Collection {
            group,
            version,
            plural,
            namespace,
        } => {
            let Some(def) = resolve(&defs, group, version, plural, namespace.as_deref(), true)
            else {
                return KStatus::no_resource().into();
            };
            match req.method {
                Method::GET => verbs::list(c, &def, namespace.as_deref(), req),
                Method::POST if namespace.is_some() || !def.namespaced => {
                    verbs::create(c, &def, namespace.as_deref(), req)
                }
                _ => KStatus::method_not_allowed(&format!("{} on a collection", req.method)).into(),
            }
        }
        Target::Object {
            group,
            version,
            plural,
            namespace,
            name,
            sub,
        } => {
            let ns = namespace.as_deref();
            let Some(def) = resolve(&defs, group, version, plural, ns, false) else {
                return KStatus::no_resource().into();
            };
            let at = verbs::At {
                def: &def,
                ns,
                name,
            };
            match (sub.as_deref(), &req.method) {
                (None | Some("status"), &Method::GET) => verbs::get(c, at, req),
                (Some(_), _) => KStatus::method_not_allowed("writing a subresource").into(),
                (None, &Method::PATCH) => verbs::patch(c, at, req),
                (None, &Method::PUT) => verbs::update(c, at, req),
                (None, &Method::DELETE) => verbs::delete(c, at),
                (None, m) => KStatus::method_not_allowed(m.as_str()).into(),
            }
        }
    }
}
