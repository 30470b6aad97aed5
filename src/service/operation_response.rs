//! An operation's `response` as clients read it: the JSON its kind stored, with `@type`
//! naming the schema it follows (as google.protobuf.Any does), so a typed client picks
//! the member of the document's `Operation.response` union without knowing the
//! operation's type. The schemas come from the kinds' own response types.
//!
//! A failed drill's report, kept in its ErrorInfo metadata as JSON text (metadata values
//! are strings), is also given as a typed detail of the error (`{"@type": "DrillReport",
//! ...}`), as google.rpc.Status allows any number of typed details.
//!
//! Invariant: `@type` is derived from the operation's type at read time, never stored,
//! so responses stored before it existed read the same way.

use serde_json::Value;

use crate::domain::OperationType;

pub use crate::ops::kinds::{ResponseSchema, response_schemas};

/// The discriminator of the union.
pub const TYPE_KEY: &str = "@type";

/// `response` of an operation of type `t`, with its `@type`.
pub fn typed(t: OperationType, mut response: Value) -> Value {
    if let Value::Object(map) = &mut response {
        let name = crate::ops::kinds::response_type(t).into_owned();
        map.insert(TYPE_KEY.to_owned(), Value::String(name));
    }
    response
}

/// The ErrorInfo metadata key a failed drill keeps its report under (JSON text).
const REPORT_KEY: &str = "report";

/// An operation's `error` (google.rpc.Status JSON) with a typed detail for a report its
/// ErrorInfo carries as text.
pub fn typed_error(mut error: Value) -> Value {
    let report = error["details"][0]["metadata"][REPORT_KEY]
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .filter(Value::is_object);
    if let (Some(Value::Object(mut report)), Some(details)) =
        (report, error["details"].as_array_mut())
    {
        let name = <crate::model::drill::DrillReport as utoipa::ToSchema>::name();
        report.insert(TYPE_KEY.to_owned(), Value::String(name.into_owned()));
        details.push(Value::Object(report));
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_in_metadata_becomes_a_typed_detail_and_nothing_else_changes() {
        let report = serde_json::json!({"mode": "RECLAIM_NODES", "podsAffected": 3});
        let error = serde_json::json!({"code": 4, "details": [{"reason": "DRILL_DEADLINE_EXCEEDED",
            "metadata": {"report": report.to_string()}}]});
        let typed = typed_error(error.clone());
        assert_eq!(typed["details"][0], error["details"][0]);
        assert_eq!(typed["details"][1]["@type"], "DrillReport");
        assert_eq!(typed["details"][1]["podsAffected"], 3);
        for plain in [
            serde_json::json!({"code": 1, "details": [{"reason": "CANCELLED", "metadata": {}}]}),
            serde_json::json!({"code": 4, "details": [{"metadata": {"report": "not json"}}]}),
        ] {
            assert_eq!(typed_error(plain.clone()), plain);
        }
    }
}
