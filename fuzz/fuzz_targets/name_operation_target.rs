//! `OperationTarget::parse` (the `target=` of an operations filter): never a panic; it
//! accepts exactly what the rule of names.rs `^[!-~]{1,512}$` (at most 512 characters)
//! admits, and what it accepts prints back as itself.
#![no_main]

use kineticd::domain::OperationTarget;

kineticd_fuzz::name_target!(OperationTarget::parse, r"^[!-~]{1,512}$", 512);
