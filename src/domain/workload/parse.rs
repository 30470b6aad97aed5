//! A workload manifest (already decoded from JSON or YAML) -> its pod templates and how
//! many pods each makes.
//!
//! Invariant: every supported kind reaches its pod template by the path its API
//! defines, and every quantity is read as the API server reads it: a number
//! (`nvidia.com/gpu: 1`) is the same quantity as the string `"1"`.

use serde_json::Value;

use super::{Amounts, Container, PodFacts, PodGroup, Requirement, Toleration, Workload};

/// Kinds the check understands, with the API group they belong to.
pub const SUPPORTED_KINDS: [(&str, &str); 6] = [
    ("Pod", "v1"),
    ("Deployment", "apps/v1"),
    ("StatefulSet", "apps/v1"),
    ("Job", "batch/v1"),
    ("JobSet", "jobset.x-k8s.io/v1alpha2"),
    ("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"),
];

/// Parses a quantity string into thousandths of a unit (the cloud layer's parser).
pub type MilliFn = fn(&str) -> Option<i128>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("the workload must be an object with apiVersion, kind and spec")]
    NotObject,
    #[error("kind {0:?} is not supported; send one of: {kinds}", kinds = kinds_list())]
    UnknownKind(String),
    #[error("{path}: {message}")]
    Field { path: String, message: String },
}

fn kinds_list() -> String {
    SUPPORTED_KINDS
        .iter()
        .map(|(k, v)| format!("{k} ({v})"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn field(path: &str, message: impl Into<String>) -> ParseError {
    ParseError::Field {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// The object at `path` below `v` (absent is `None`; present but not an object is an
/// error).
fn object<'a>(v: &'a Value, key: &str, path: &str) -> Result<Option<&'a Value>, ParseError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(o @ Value::Object(_)) => Ok(Some(o)),
        Some(_) => Err(field(&format!("{path}.{key}"), "must be an object")),
    }
}

fn required<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a Value, ParseError> {
    object(v, key, path)?.ok_or_else(|| field(&format!("{path}.{key}"), "is required"))
}

/// A non-negative count, default `default` when absent.
fn count(v: &Value, key: &str, path: &str, default: u32) -> Result<u32, ParseError> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| field(&format!("{path}.{key}"), "must be a non-negative integer")),
    }
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Parse a workload manifest.
pub fn parse(v: &Value, milli: MilliFn) -> Result<Workload, ParseError> {
    if !v.is_object() {
        return Err(ParseError::NotObject);
    }
    let kind = string(v, "kind").unwrap_or_default();
    let Some((_, api)) = SUPPORTED_KINDS.iter().find(|(k, _)| *k == kind) else {
        return Err(ParseError::UnknownKind(kind));
    };
    if let Some(given) = string(v, "apiVersion")
        && given != *api
    {
        return Err(field(
            "apiVersion",
            format!("{kind} is {api}, not {given:?}"),
        ));
    }
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let spec = required(v, "spec", "")?;
    let pod = |t: &Value, path: &str| -> Result<PodFacts, ParseError> {
        let tspec = required(t, "spec", path)?;
        pod_facts(tspec, &format!("{path}.spec"), milli)
    };
    let one = |role: &str, replicas: u32, facts: PodFacts| PodGroup {
        role: role.to_owned(),
        replicas,
        pod: facts,
    };
    let groups = match kind.as_str() {
        "Pod" => vec![one("pod", 1, pod_facts(spec, "spec", milli)?)],
        "Deployment" | "StatefulSet" => {
            let t = required(spec, "template", "spec")?;
            vec![one(
                "pod",
                count(spec, "replicas", "spec", 1)?,
                pod(t, "spec.template")?,
            )]
        }
        "Job" => vec![job_group("pod", 1, spec, "spec", &pod)?],
        "JobSet" => jobset(spec, &pod)?,
        _ => lws(spec, &pod)?,
    };
    Ok(Workload { kind, name, groups })
}

type PodOf<'a> = dyn Fn(&Value, &str) -> Result<PodFacts, ParseError> + 'a;

/// A Job spec's pods: `parallelism` at once (at most `completions`), times `times`.
fn job_group(
    role: &str,
    times: u32,
    spec: &Value,
    path: &str,
    pod: &PodOf<'_>,
) -> Result<PodGroup, ParseError> {
    let parallelism = count(spec, "parallelism", path, 1)?;
    let completions = count(spec, "completions", path, parallelism)?;
    let t = required(spec, "template", path)?;
    Ok(PodGroup {
        role: role.to_owned(),
        replicas: parallelism.min(completions).saturating_mul(times),
        pod: pod(t, &format!("{path}.template"))?,
    })
}

fn jobset(spec: &Value, pod: &PodOf<'_>) -> Result<Vec<PodGroup>, ParseError> {
    let jobs = spec
        .get("replicatedJobs")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| field("spec.replicatedJobs", "must list at least one job"))?;
    let mut out = Vec::new();
    for (i, rj) in jobs.iter().enumerate() {
        let path = format!("spec.replicatedJobs[{i}]");
        let name = string(rj, "name").unwrap_or_else(|| format!("job-{i}"));
        let times = count(rj, "replicas", &path, 1)?;
        let template = required(rj, "template", &path)?;
        let jspec = required(template, "spec", &format!("{path}.template"))?;
        out.push(job_group(
            &name,
            times,
            jspec,
            &format!("{path}.template.spec"),
            pod,
        )?);
    }
    Ok(out)
}

fn lws(spec: &Value, pod: &PodOf<'_>) -> Result<Vec<PodGroup>, ParseError> {
    let groups = count(spec, "replicas", "spec", 1)?;
    let path = "spec.leaderWorkerTemplate";
    let lwt = required(spec, "leaderWorkerTemplate", "spec")?;
    let size = count(lwt, "size", path, 1)?.max(1);
    let worker = pod(
        required(lwt, "workerTemplate", path)?,
        &format!("{path}.workerTemplate"),
    )?;
    let leader = match object(lwt, "leaderTemplate", path)? {
        Some(t) => pod(t, &format!("{path}.leaderTemplate"))?,
        None => worker.clone(),
    };
    let mut out = vec![PodGroup {
        role: "leader".into(),
        replicas: groups,
        pod: leader,
    }];
    if size > 1 {
        out.push(PodGroup {
            role: "worker".into(),
            replicas: groups.saturating_mul(size - 1),
            pod: worker,
        });
    }
    Ok(out)
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A PodSpec's scheduling facts.
pub fn pod_facts(spec: &Value, path: &str, milli: MilliFn) -> Result<PodFacts, ParseError> {
    let node_selector = match spec.get("nodeSelector") {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), scalar(v))).collect(),
        _ => Default::default(),
    };
    let containers = |key: &str| -> Result<Vec<Container>, ParseError> {
        array(spec, key)
            .iter()
            .enumerate()
            .map(|(i, c)| container(c, &format!("{path}.{key}[{i}]"), milli))
            .collect()
    };
    let facts = PodFacts {
        node_selector,
        affinity: affinity(spec),
        tolerations: array(spec, "tolerations")
            .iter()
            .map(|t| Toleration {
                key: string(t, "key"),
                operator: string(t, "operator"),
                value: t.get("value").map(scalar),
                effect: string(t, "effect"),
            })
            .collect(),
        containers: containers("containers")?,
        init_containers: containers("initContainers")?,
    };
    if facts.containers.is_empty() {
        return Err(field(
            &format!("{path}.containers"),
            "must list a container",
        ));
    }
    Ok(facts)
}

/// A label or toleration value as Kubernetes would read it (`true`, `1` unquoted in
/// YAML are strings there).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn container(c: &Value, path: &str, milli: MilliFn) -> Result<Container, ParseError> {
    let amounts = |key: &str| -> Result<Amounts, ParseError> {
        let mut out = Amounts::new();
        if let Some(Value::Object(m)) = c.pointer(&format!("/resources/{key}")) {
            for (k, v) in m {
                let q = match v {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => s.clone(),
                    _ => String::new(),
                };
                let m = milli(&q).filter(|m| *m >= 0).ok_or_else(|| {
                    field(
                        &format!("{path}.resources.{key}.{k}"),
                        format!("{v} is not a quantity (for example 1, 500m, 16Gi)"),
                    )
                })?;
                out.insert(k.clone(), m);
            }
        }
        Ok(out)
    };
    Ok(Container {
        name: string(c, "name").unwrap_or_default(),
        image: string(c, "image").unwrap_or_default(),
        requests: amounts("requests")?,
        limits: amounts("limits")?,
    })
}

/// `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
fn affinity(spec: &Value) -> Vec<Vec<Requirement>> {
    let terms = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    terms
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    array(t, "matchExpressions")
                        .iter()
                        .map(|e| Requirement {
                            key: string(e, "key").unwrap_or_default(),
                            operator: string(e, "operator").unwrap_or_else(|| "In".into()),
                            values: array(e, "values").iter().map(scalar).collect(),
                        })
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

impl super::Container {
    /// Whether `resource` appears in requests but not limits (the API server refuses
    /// such a pod for an extended resource).
    pub fn request_without_limit(&self, resource: &str) -> bool {
        self.requests.contains_key(resource) && !self.limits.contains_key(resource)
    }
}

impl PodFacts {
    /// Containers (init too) asking for `resource` by request without a limit.
    pub fn missing_limits(&self, resource: &str) -> Vec<String> {
        self.all_containers()
            .filter(|c| c.request_without_limit(resource))
            .map(|c| c.name.clone())
            .collect()
    }

    /// Container images, init containers included.
    pub fn images(&self) -> impl Iterator<Item = &str> {
        self.all_containers().map(|c| c.image.as_str())
    }
}
