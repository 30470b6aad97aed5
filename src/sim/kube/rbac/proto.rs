//! The protobuf form of a `SelfSubjectAccessReview` request body, which kubectl sends
//! (`application/vnd.kubernetes.protobuf`): the `k8s\0` envelope (`runtime.Unknown`, the
//! object's bytes in field 2), the review's `spec` (field 2) with `resourceAttributes`
//! (1: namespace, verb, group, version, resource, subresource, name as fields 1-7) or
//! `nonResourceAttributes` (2: path, verb), read into the JSON `spec` the review reads;
//! a `SelfSubjectRulesReview`'s spec is its `namespace` (field 1).
//!
//! Invariant: only what a review needs is read; a body that is not well-formed
//! protobuf is refused (`None`), never guessed at.

use serde_json::{Map, Value, json};

const MAGIC: &[u8] = b"k8s\0";

/// One varint at the start of `b`, and the bytes after it.
fn varint(b: &[u8]) -> Option<(u64, &[u8])> {
    let mut v = 0u64;
    for (i, byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, &b[i + 1..]));
        }
    }
    None
}

/// The length-delimited fields of a message, as (field number, bytes); other wire
/// types are skipped.
fn fields(mut b: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let (key, rest) = varint(b)?;
        b = match key & 7 {
            0 => varint(rest)?.1,
            1 => rest.get(8..)?,
            5 => rest.get(4..)?,
            2 => {
                let (len, rest) = varint(rest)?;
                let len = usize::try_from(len).ok()?;
                out.push((key >> 3, rest.get(..len)?));
                rest.get(len..)?
            }
            _ => return None,
        };
    }
    Some(out)
}

fn field<'a>(fs: &[(u64, &'a [u8])], n: u64) -> Option<&'a [u8]> {
    fs.iter().rev().find(|(k, _)| *k == n).map(|(_, v)| *v)
}

/// The string fields `names` (numbered from 1) of a message, as a JSON object.
fn strings(b: &[u8], names: &[&str]) -> Option<Value> {
    let fs = fields(b)?;
    let mut obj = Map::new();
    for (n, name) in (1u64..).zip(names) {
        if let Some(v) = field(&fs, n) {
            obj.insert((*name).to_owned(), json!(std::str::from_utf8(v).ok()?));
        }
    }
    Some(Value::Object(obj))
}

/// The review's `spec` from a protobuf body.
pub fn review_spec(body: &[u8]) -> Option<Value> {
    let unknown = fields(body.strip_prefix(MAGIC)?)?;
    let review = fields(field(&unknown, 2)?)?;
    let spec = fields(field(&review, 2)?)?;
    let mut out = Map::new();
    if let Some(r) = field(&spec, 1) {
        let names = [
            "namespace",
            "verb",
            "group",
            "version",
            "resource",
            "subresource",
            "name",
        ];
        out.insert("resourceAttributes".into(), strings(r, &names)?);
    }
    if let Some(n) = field(&spec, 2) {
        out.insert(
            "nonResourceAttributes".into(),
            strings(n, &["path", "verb"])?,
        );
    }
    Some(Value::Object(out))
}

/// A rules review's `spec` (`namespace`, field 1) from a protobuf body.
pub fn rules_review_spec(body: &[u8]) -> Option<Value> {
    let unknown = fields(body.strip_prefix(MAGIC)?)?;
    let review = fields(field(&unknown, 2)?)?;
    match field(&review, 2) {
        Some(spec) => strings(spec, &["namespace"]),
        None => Some(json!({})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_review() {
        // What kubectl 1.33 sends for `auth can-i create jobs.batch -n team`.
        let body = b"k8s\x00\n2\n\x17authorization.k8s.io/v1\x12\x17SelfSubjectAccessReview\x12B\n\x10\n\x00\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12$\n\"\n\x04team\x12\x06create\x1a\x00\"\x00*\njobs.batch2\x00:\x00\x1a\x08\x08\x00\x12\x00\x1a\x00 \x00\x1a\x00\"\x00";
        let spec = review_spec(body).expect("spec");
        assert_eq!(
            spec,
            json!({"resourceAttributes": {
                "namespace": "team", "verb": "create", "group": "", "version": "",
                "resource": "jobs.batch", "subresource": "", "name": "",
            }})
        );
        assert_eq!(review_spec(b"{}"), None);
        assert_eq!(review_spec(b"k8s\x00\x0a\x05ab"), None);
    }
}
