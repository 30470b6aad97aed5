//! `PoolId::parse` (the `{pool}` of every node pool path): never a panic; it accepts
//! exactly what the rule of API.md `^[a-z]([-a-z0-9]*[a-z0-9])?$` (at most 40 characters)
//! admits, and what it accepts prints back as itself.
#![no_main]

use kineticd::domain::PoolId;

kineticd_fuzz::name_target!(PoolId::parse, r"^[a-z]([-a-z0-9]*[a-z0-9])?$", 40);
