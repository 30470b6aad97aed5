//! `ProfileId::parse` (the `{profile}` of `/v1/profiles/{profile}`): never a panic; it
//! accepts exactly what the rule of API.md `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$` (at most 64
//! characters) admits, and what it accepts prints back as itself.
#![no_main]

use kineticd::domain::ProfileId;

kineticd_fuzz::name_target!(ProfileId::parse, r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$", 64);
