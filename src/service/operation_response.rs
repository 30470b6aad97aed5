//! An operation's `response` as clients read it: the JSON its kind stored, with `@type`
//! naming the schema it follows (as google.protobuf.Any does), so a typed client picks
//! the member of the document's `Operation.response` union without knowing the
//! operation's type. The schemas come from the kinds' own response types.
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
