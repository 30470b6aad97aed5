//! API integration tests: the real app over HTTP against a real PostgreSQL.

#[path = "../common/mod.rs"]
mod common;

mod basics;
