//! `ClusterName::parse` (the `{c}` of every cluster path): never a panic; it accepts
//! exactly what the rule of API.md `^[a-z]([-a-z0-9]*[a-z0-9])?$` (at most 40 characters)
//! admits, and what it accepts prints back as itself.
#![no_main]

use kineticd::domain::ClusterName;

kineticd_fuzz::name_target!(ClusterName::parse, r"^[a-z]([-a-z0-9]*[a-z0-9])?$", 40);
