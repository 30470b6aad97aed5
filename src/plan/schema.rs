//! The OpenAPI schema of a plan [`Action`]: one object per resource type (`oneOf`), each
//! with the fields every action has, its `type` (one value) and its typed `details`.
//!
//! Invariant: the schema is derived from [`Resource`]'s own schema and the common fields
//! below, so a new resource type appears in the document without being listed here.

use std::borrow::Cow;

use serde::Serialize;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{RefOr, schema::OneOf};
use utoipa::{PartialSchema, ToSchema};

use super::up::access::AccessPreview;
use super::{Action, ActionId, ActionKind, Cost, Resource};

/// The fields of every action besides `type` and `details` (for the schema only).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // never built: only its schema is used
struct ActionFields {
    /// Step id (stable within the plan), e.g. `network`, `pool:gpu-l4-1a2b`.
    id: String,
    action: ActionKind,
    /// Full resource name.
    name: String,
    reason: String,
    /// Steps that must be done first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    depends_on: Vec<String>,
}

impl<Id: ActionId> PartialSchema for Action<Id> {
    fn schema() -> RefOr<Schema> {
        let RefOr::T(Schema::Object(common)) = ActionFields::schema() else {
            return Resource::schema();
        };
        let RefOr::T(Schema::OneOf(kinds)) = Resource::schema() else {
            return Resource::schema();
        };
        let items = kinds
            .items
            .into_iter()
            .map(|kind| match kind {
                RefOr::T(Schema::Object(mut o)) => {
                    o.properties.extend(common.properties.clone());
                    o.required.extend(common.required.iter().cloned());
                    RefOr::T(Schema::Object(o))
                }
                other => other,
            })
            .collect();
        let mut one = OneOf::new();
        one.items = items;
        one.description = Some(
            "One action on one typed resource: its `type` says what its `details` hold.".into(),
        );
        RefOr::T(Schema::OneOf(one))
    }
}

impl<Id: ActionId> ToSchema for Action<Id> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Action")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <ActionFields as ToSchema>::schemas(schemas);
        <Resource as ToSchema>::schemas(schemas);
    }
}

// A plan's fields, for the schema only: a plan's schema is the same whatever names its
// actions (a plain comment: a doc comment would become the schema's description).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // never built: only its schema is used
struct PlanFields {
    actions: Vec<Action>,
    warnings: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    estimated_hourly_cost: Option<Cost>,
    /// The preview of `up` only: the IAM grants and RBAC bindings the SYNC_ACCESS that
    /// follows `up` gives the team's roster (absent elsewhere, and for an empty roster).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    access: Option<AccessPreview>,
}

impl<Id: ActionId> PartialSchema for super::Plan<Id> {
    fn schema() -> RefOr<Schema> {
        PlanFields::schema()
    }
}

impl<Id: ActionId> ToSchema for super::Plan<Id> {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Plan")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <PlanFields as ToSchema>::schemas(schemas);
    }
}
