//! uint64 ids (`id`, `targetId`) kept as opaque strings: Google sends a string, a
//! number is accepted too. Use with `#[serde(deserialize_with = "id_string")]` on an
//! `Option<String>`.
//!
//! Invariant: an id is never parsed as a number kineticd computes with; a number on the
//! wire becomes its decimal string, a string is kept as sent.

use serde::{Deserialize, Deserializer};

/// A uint64 id kept as an opaque string (Google sends a string; accept a number too).
pub fn id_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Str(String),
        Num(u64),
    }
    Ok(Option::<Raw>::deserialize(d)?.map(|r| match r {
        Raw::Str(s) => s,
        Raw::Num(n) => n.to_string(),
    }))
}
