//! Label selectors (`app=web,tier in (a,b),!canary`) and field selectors
//! (`involvedObject.name=x,spec.nodeName!=`) as list and watch requests use them.
//!
//! Invariant: an empty selector selects everything; a field missing from the object
//! reads as the empty string.

use serde_json::Value;

/// One requirement of a label selector (`k=v`, `k==v`, `k!=v`, `k`, `!k`,
/// `k in (a,b)`, `k notin (a,b)`).
fn requirement_matches(req: &str, labels: &Value) -> bool {
    let req = req.trim();
    let get = |k: &str| labels[k.trim()].as_str();
    let set = |rest: &str| -> Vec<String> {
        rest.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|s| s.trim().to_owned())
            .collect()
    };
    if let Some((k, rest)) = req.split_once(" notin ") {
        return get(k).is_none_or(|v| !set(rest).iter().any(|s| s == v));
    }
    if let Some((k, rest)) = req.split_once(" in ") {
        return get(k).is_some_and(|v| set(rest).iter().any(|s| s == v));
    }
    if let Some((k, v)) = req.split_once("!=") {
        return get(k) != Some(v.trim());
    }
    if let Some((k, v)) = req.split_once("==").or_else(|| req.split_once('=')) {
        return get(k) == Some(v.trim());
    }
    match req.strip_prefix('!') {
        Some(k) => get(k).is_none(),
        None => req.is_empty() || get(req).is_some(),
    }
}

/// Split a selector on commas outside parentheses.
fn requirements(sel: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for ch in sel.chars() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(ch);
    }
    out.push(cur);
    out
}

/// `metadata.name=x,spec.nodeName!=y`: a missing field reads as "".
fn field_matches(sel: &str, obj: &Value) -> bool {
    sel.split(',').filter(|r| !r.trim().is_empty()).all(|r| {
        let (path, want, negate) = match r.split_once("!=") {
            Some((p, v)) => (p, v, true),
            None => match r.split_once("==").or_else(|| r.split_once('=')) {
                Some((p, v)) => (p, v, false),
                None => return false,
            },
        };
        let mut cur = obj;
        for seg in path.trim().split('.') {
            cur = &cur[seg];
        }
        let got = match cur {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        (got == want.trim()) != negate
    })
}

/// Whether `o` matches a label selector and a field selector (both may be "").
pub fn selected(labels: &str, fields: &str, o: &Value) -> bool {
    requirements(labels)
        .iter()
        .all(|r| requirement_matches(r, &o["metadata"]["labels"]))
        && field_matches(fields, o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors() {
        let labels = json!({"app": "x", "tier": "web"});
        let all = |s: &str| {
            requirements(s)
                .iter()
                .all(|r| requirement_matches(r, &labels))
        };
        assert!(all("app=x,tier"));
        assert!(all("app in (x, y),!missing"));
        assert!(!all("app notin (x)"));
        assert!(!all("tier!=web"));
        assert!(all(""));
        let pod = json!({"metadata": {"name": "p"}, "status": {"phase": "Pending"}});
        assert!(field_matches("status.phase=Pending,spec.nodeName=", &pod));
        assert!(!field_matches("metadata.name!=p", &pod));
    }
}
