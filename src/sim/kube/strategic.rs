//! Strategic merge patches (`application/strategic-merge-patch+json`, what client-side
//! `kubectl apply` and `kubectl edit` send): like a JSON merge patch, except that lists
//! of named things (containers, volumes, env, ports, ...) merge item by item on their
//! merge key, and the patch directives `$setElementOrder/`, `$deleteFromPrimitiveList/`,
//! `$patch: delete|replace` and `$retainKeys` are obeyed instead of stored.
//!
//! Invariant: no directive key (starting with `$`) is ever left in the result; a list
//! without a known merge key is replaced whole, as the API server does for lists whose
//! patch strategy is not `merge`.

use serde_json::{Map, Value};

/// The merge key of a list field (the `patchMergeKey` of the core types), if it merges.
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "readinessGates"
        | "resourceClaims" => "name",
        "volumeMounts" => "mountPath",
        "volumeDevices" => "devicePath",
        "ports" => "containerPort",
        "hostAliases" => "ip",
        "topologySpreadConstraints" => "topologyKey",
        _ => return None,
    })
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// Merge the items of `patch` into the list `target` on `key`.
fn merge_list(target: &mut Vec<Value>, patch: &[Value], key: &str, order: Option<&Vec<Value>>) {
    for item in patch {
        let id = &item[key];
        let pos = target.iter().position(|t| &t[key] == id);
        match (item["$patch"].as_str(), pos) {
            (Some("delete"), Some(i)) => {
                target.remove(i);
            }
            (Some("delete"), None) => {}
            (Some("replace"), Some(i)) => target[i] = strip_directives(item),
            (_, Some(i)) => apply(&mut target[i], item),
            (_, None) => target.push(strip_directives(item)),
        }
    }
    if let Some(order) = order {
        let rank = |v: &Value| {
            order
                .iter()
                .position(|o| o[key] == v[key])
                .unwrap_or(usize::MAX)
        };
        target.sort_by_key(rank);
    }
}

/// Apply a strategic merge patch to `target` in place.
pub fn apply(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        *target = strip_directives(patch);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(t) = target.as_object_mut() else {
        return;
    };
    for (k, v) in p {
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            if let Some(list) = t.get_mut(field).and_then(Value::as_array_mut) {
                let gone = v.as_array().cloned().unwrap_or_default();
                list.retain(|x| !gone.contains(x));
            }
            continue;
        }
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            t.remove(k);
            continue;
        }
        match (v, merge_key(k)) {
            (Value::Array(items), Some(key)) if t.get(k).is_some_and(Value::is_array) => {
                let order = p
                    .get(&format!("$setElementOrder/{k}"))
                    .and_then(Value::as_array);
                if let Some(Value::Array(list)) = t.get_mut(k) {
                    merge_list(list, items, key, order);
                }
            }
            (Value::Object(_), _) => apply(t.entry(k.clone()).or_insert(Value::Null), v),
            _ => {
                t.insert(k.clone(), strip_directives(v));
            }
        }
    }
    if let Some(keep) = p.get("$retainKeys").and_then(Value::as_array) {
        t.retain(|k, _| keep.iter().any(|x| x == k.as_str()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_merge_by_name_and_directives_vanish() {
        let mut d = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "a", "image": "1", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                           {"name": "b", "image": "x"}],
            "tolerations": [{"key": "t"}],
            "finalizers": ["f1", "f2"]}}}});
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
            "containers": [{"name": "a", "image": "2"}, {"name": "b", "$patch": "delete"}],
            "tolerations": [{"key": "u"}],
            "$deleteFromPrimitiveList/finalizers": ["f1"]}}}});
        apply(&mut d, &patch);
        assert_eq!(
            d,
            json!({"spec": {"template": {"spec": {
                "containers": [{"name": "a", "image": "2", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                "tolerations": [{"key": "u"}],
                "finalizers": ["f2"]}}}})
        );
        let mut m = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        apply(
            &mut m,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
        );
        assert_eq!(m, json!({"metadata": {"labels": {"b": "2", "c": "3"}}}));
        let mut r = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        apply(
            &mut r,
            &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        );
        assert_eq!(r, json!({"spec": {"strategy": {"type": "Recreate"}}}));
    }
}
