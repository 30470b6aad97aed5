//! Strict request bodies: like Google's front ends, the simulator rejects JSON fields the
//! real API does not know (400 "Unknown name"), while the shared wire structs stay
//! tolerant for the clients. Unknown fields are found with `serde_ignored`.

use axum::body::Bytes;
use serde::de::DeserializeOwned;

use super::error::{Flavor, SimError};

/// Parse `body` as `T`, refusing unknown fields and malformed JSON.
pub fn strict<T: DeserializeOwned>(flavor: Flavor, body: &Bytes) -> Result<T, SimError> {
    let text = if body.is_empty() {
        b"{}".as_slice()
    } else {
        body.as_ref()
    };
    let mut de = serde_json::Deserializer::from_slice(text);
    let mut unknown = Vec::new();
    let v: T = serde_ignored::deserialize(&mut de, |path| unknown.push(path.to_string()))
        .map_err(|e| SimError::invalid(flavor, format!("Invalid JSON payload received. {e}")))?;
    if let Some(path) = unknown.first() {
        let (parent, name) = match path.rsplit_once('.') {
            Some((p, n)) => (p.to_owned(), n.to_owned()),
            None => (String::new(), path.clone()),
        };
        return Err(SimError::invalid(
            flavor,
            format!(
                "Invalid JSON payload received. Unknown name \"{name}\" at '{parent}': Cannot find field."
            ),
        ));
    }
    Ok(v)
}
