//! `Operation.response` in the document: a union of the response schemas of every
//! operation kind a production process runs, discriminated by `@type` (the schema's
//! name, which the service adds when it renders a response), and `metadata.plan` typed
//! as the Plan it is.
//!
//! Invariant: the members come from the kinds' own response types
//! (`service::operation_response::response_schemas`), so a new kind is in the union
//! without an edit here; each member declares `@type` as a one-value enum.

use std::collections::BTreeMap;

use utoipa::openapi::schema::{
    Discriminator, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{OpenApi, Ref, RefOr};

use crate::service::operation_response::{TYPE_KEY, response_schemas};

/// Type `Operation.response` and `OperationMetadata.plan` in `doc`.
pub fn apply(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    let mut union = OneOfBuilder::new();
    let mut mapping = BTreeMap::new();
    for r in response_schemas() {
        for (name, schema) in r.uses {
            components.schemas.entry(name).or_insert(schema);
        }
        if mapping.contains_key(&r.name) {
            continue;
        }
        let mut schema = r.schema;
        if let RefOr::T(Schema::Object(o)) = &mut schema {
            let tag = ObjectBuilder::new()
                .schema_type(SchemaType::Type(Type::String))
                .enum_values(Some([r.name.clone()]))
                .description(Some("The schema this response follows."))
                .build();
            o.properties.insert(TYPE_KEY.to_owned(), tag.into());
            o.required.insert(0, TYPE_KEY.to_owned());
        }
        components.schemas.insert(r.name.clone(), schema);
        let reference = format!("#/components/schemas/{}", r.name);
        union = union.item(Ref::new(reference.clone()));
        mapping.insert(r.name, reference);
    }
    let mut discriminator = Discriminator::new(TYPE_KEY);
    discriminator.mapping = mapping;
    let response = union
        .description(Some(
            "The result of a successful operation; `@type` names its schema \
             (ClusterResponse for up, down, pool add and remove; ResizeResponse; DrillReport).",
        ))
        .discriminator(Some(discriminator))
        .build();
    set_property(
        components,
        "Operation",
        "response",
        Schema::OneOf(response).into(),
    );
    let plan = OneOfBuilder::new()
        .item(Ref::from_schema_name("Plan"))
        .item(ObjectBuilder::new().schema_type(SchemaType::Type(Type::Null)))
        .description(Some(
            "The plan this operation carries out (null for operations without one).",
        ))
        .build();
    set_property(
        components,
        "OperationMetadata",
        "plan",
        Schema::OneOf(plan).into(),
    );
}

fn set_property(
    components: &mut utoipa::openapi::Components,
    schema: &str,
    property: &str,
    value: RefOr<Schema>,
) {
    if let Some(RefOr::T(Schema::Object(o))) = components.schemas.get_mut(schema) {
        o.properties.insert(property.to_owned(), value);
    }
}
