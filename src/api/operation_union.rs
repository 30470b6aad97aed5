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
    ArrayBuilder, Discriminator, ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::{OpenApi, Ref, RefOr};

use crate::domain::rpc::ERROR_INFO_TYPE;
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
    type_error_details(components);
}

/// `OperationError.details`: the ErrorInfo, then (a failed drill) its DrillReport, each
/// named by `@type`.
fn type_error_details(components: &mut utoipa::openapi::Components) {
    let info = "ErrorInfo";
    if let Some(RefOr::T(Schema::Object(o))) = components.schemas.get_mut(info) {
        let tag = ObjectBuilder::new()
            .schema_type(SchemaType::Type(Type::String))
            .enum_values(Some([ERROR_INFO_TYPE]))
            .build();
        o.properties.insert(TYPE_KEY.to_owned(), tag.into());
    }
    let report = <crate::model::drill::DrillReport as utoipa::ToSchema>::name().into_owned();
    let mut discriminator = Discriminator::new(TYPE_KEY);
    for (tag, name) in [(ERROR_INFO_TYPE, info), (report.as_str(), report.as_str())] {
        let reference = format!("#/components/schemas/{name}");
        discriminator.mapping.insert(tag.to_owned(), reference);
    }
    let detail = OneOfBuilder::new()
        .item(Ref::from_schema_name(info))
        .item(Ref::from_schema_name(&report))
        .discriminator(Some(discriminator));
    let details = ArrayBuilder::new().items(detail).description(Some(
        "The ErrorInfo (its `reason`, and `metadata.step` naming the failed step); a failed \
         drill adds its DrillReport so far.",
    ));
    set_property(
        components,
        "OperationError",
        "details",
        Schema::Array(details.build()).into(),
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
