//! Typed clients generated from the OpenAPI document, in two more ecosystems than the
//! Python one (tests/openapi_client.rs), each compiled and each driving the day in the
//! life of a team against the real `kineticd serve --dev`: create the team, `up` a cluster
//! and wait, list its node pools, preview a pool add (`previewCreateNodePool`), add it and wait,
//! `down` and wait.
//!
//! - Rust: progenitor, at compile time (`progenitor::generate_api!` over the committed
//!   OpenAPI 3.0 rendering `openapi/kineticd.openapi30.json`, which tests/openapi.rs keeps
//!   equal to `kineticd openapi --openapi-version 3.0`); see `generated_clients/rust.rs`.
//! - TypeScript: openapi-generator `typescript-fetch` (the PyPI `openapi-generator-cli`
//!   package, in the venv of tests/openapi_client/requirements.txt; it runs on Java),
//!   compiled by the pinned `tsc` in strict mode and run by Node
//!   (tests/openapi_client_ts/run.ts); see `generated_clients/typescript.rs`.
//! - `openapi-generator validate` accepts both renderings without an error or a warning
//!   (`generated_clients/validate.rs`).
//!
//! The TypeScript and validate tests need tools outside the clone (the venv
//! `KINETIC_OPENAPI_VENV`, default /var/tmp/kineticd-venv; `java`; `node`; the npm tools of
//! tests/openapi_client_ts/package.json in `KINETIC_NPM_DIR`, default /var/tmp/kineticd-npm).
//! Without them they say why they did not run, unless `KINETIC_REQUIRE_OPENAPI_TOOLS` is
//! set (as .ci/run does): then they fail. The Rust client needs nothing but cargo.

mod common;

#[path = "generated_clients/rust.rs"]
mod rust;
#[path = "generated_clients/tools.rs"]
mod tools;
#[path = "generated_clients/typescript.rs"]
mod typescript;
#[path = "generated_clients/validate.rs"]
mod validate;
