//! `GET /v1/operations/{id}` as JSON text: a finished operation is rendered once by
//! [`render`] and its text kept in its row (stored lazily by the first read that
//! renders it), then served as stored; an unfinished one is rendered on every read.
//!
//! Invariants: the kept text is exactly what [`render`] and `serde_json` produce for the
//! finished row, in the current [`render_format`]; a rendering of another format (an
//! older or newer kineticd) is never served, but rendered again and kept anew. The
//! caller's visibility is checked on every read, from the same statement that reads the
//! operation. A failure to keep a rendering is logged and never fails the read.

use std::sync::LazyLock;

use utoipa::{PartialSchema, ToSchema};

use crate::domain::Role;
use crate::domain::hash::fnv1a;
use crate::model::Operation;
use crate::store::Db;
use crate::store::rendered::{self, Body};

use super::super::access::Caller;
use super::super::{Error, Result};
use super::{Seen, not_found, parse_id, render};

/// Bump when what [`render`] writes for a finished operation changes while the
/// Operation schema stays the same (a computed value, a timestamp's form).
const RENDER_REVISION: u32 = 2;

/// The format of a kept rendering: [`RENDER_REVISION`] and a hash of the OpenAPI
/// schema of `Operation` with every schema it refers to, computed once per process.
/// A field added to, removed from or retyped in the model changes it, so renderings
/// kept by another version are not served by this one.
pub fn render_format() -> &'static str {
    static FORMAT: LazyLock<String> =
        LazyLock::new(|| format!("r{RENDER_REVISION}-{:016x}", fnv1a(schema_text().bytes())));
    &FORMAT
}

/// The OpenAPI schemas of `Operation` and of every schema it refers to, the kinds'
/// response schemas (the members of its `response` union) included, as JSON text.
fn schema_text() -> String {
    let mut schemas = vec![(
        "Operation".to_owned(),
        <Operation as PartialSchema>::schema(),
    )];
    <Operation as ToSchema>::schemas(&mut schemas);
    for r in crate::service::operation_response::response_schemas() {
        schemas.push((r.name, r.schema));
        schemas.extend(r.uses);
    }
    serde_json::to_string(&schemas).unwrap_or_default()
}

/// The operation as the JSON text of [`super::get`]'s answer, if the caller may see it.
pub async fn get_json(db: &Db, caller: &Caller, id: &str) -> Result<String> {
    let uuid = parse_id(id)?;
    let format = render_format();
    // One statement: the kept rendering (or the row) and the caller's role in its team.
    let read = rendered::operation(db, uuid, caller.email.as_str(), format)
        .await?
        .ok_or_else(|| not_found(id))?;
    let seen = Seen {
        team_id: read.team_id.as_deref(),
        created_by: &read.created_by,
        stored_role: read.reader_role,
    };
    seen.allow(caller, id, Role::Viewer, "reading operations")?;
    let row = match read.body {
        Body::Kept(json) => return Ok(json),
        Body::Row(row) => row,
    };
    let json = serde_json::to_string(&render(&row)?).map_err(|e| Error::internal(&e))?;
    if row.end_time.is_some()
        && let Some(team) = &row.team_id
        && let Err(e) = rendered::keep(db, row.id, team, format, &json).await
    {
        tracing::warn!(operation.id = %row.id, error = %format_args!("{e:#}"),
            "could not keep the finished operation's rendering; it is rendered again next time");
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_stable_in_a_process_and_names_its_revision() {
        let f = render_format();
        assert_eq!(f, render_format());
        assert!(f.starts_with(&format!("r{RENDER_REVISION}-")), "{f}");
        assert_eq!(f.len(), format!("r{RENDER_REVISION}-").len() + 16, "{f}");
    }

    #[test]
    fn the_format_covers_the_schemas_operation_refers_to() {
        let text = schema_text();
        for name in [
            "OperationMetadata",
            "Progress",
            "Step",
            "OperationError",
            "ClusterResponse",
            "DrillReport",
        ] {
            assert!(text.contains(&format!("\"{name}\"")), "{name} in {text}");
        }
    }
}
