//! Money, one way everywhere: a `currency` (ISO 4217; kineticd prices in USD) beside
//! amounts that are JSON numbers in the currency's units, rounded to cents
//! (`domain::pricing::serialize_cents`). An amount per hour alone is an [`HourlyCost`];
//! the estimates (`estimatedHourlyCost`, a plan's cost, catalogue prices) put several
//! amounts beside one currency.
//!
//! Invariant: every `currency` field of the document is a [`Currency`] (the price table
//! refuses any other code); every amount is serialised through `serialize_cents`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The currency of a price: an ISO 4217 code (`USD` unless the price table says
/// otherwise). A schema type only: the fields that use it hold the code as text.
pub struct Currency;

impl utoipa::PartialSchema for Currency {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .pattern(Some("^[A-Z]{3}$"))
            .examples(["USD"])
            .description(Some("An ISO 4217 currency code."))
            .into()
    }
}

impl ToSchema for Currency {}

/// An amount per hour: a failover pool's cost, the cost of idle accelerators.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HourlyCost {
    #[schema(value_type = Currency)]
    pub currency: String,
    /// Per hour, in `currency`, rounded to cents.
    #[serde(serialize_with = "crate::domain::pricing::serialize_cents")]
    pub amount: f64,
}
