//! kineticd: a team-wide control plane for GKE accelerator clusters.
//!
//! The binary (`src/main.rs`) is a thin clap front end over this library; integration
//! tests in `tests/` drive the same library through real HTTP and a real PostgreSQL.

pub mod api;
pub mod app;
pub mod auth;
pub mod cli;
pub mod cloud;
pub mod config;
pub mod console;
pub mod devdb;
pub mod domain;
pub mod model;
pub mod ops;
pub mod plan;
pub mod service;
pub mod sim;
pub mod store;
pub mod telemetry;
