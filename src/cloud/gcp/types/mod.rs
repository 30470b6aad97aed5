//! Wire structs for the Google APIs, shared by the clients and the simulator.
//!
//! Rules (Google's JSON mapping): lowerCamelCase; enums are strings; int64 and uint64 are
//! JSON strings on output but numbers are accepted too ([`int64`]); defaults are often
//! omitted, so every struct tolerates missing fields (`#[serde(default)]`) and unknown
//! ones (no `deny_unknown_fields`: the simulator checks unknown fields separately,
//! with `serde_ignored`, to answer 400 like Google does).

pub mod advice;
pub mod artifact_registry;
pub mod compute;
pub mod container;
pub mod iam;
pub mod int64;
pub mod list;
pub mod mig;
pub mod reservation;
pub mod resource_manager;
pub mod service_usage;
pub mod storage;
pub mod uint64_id;
