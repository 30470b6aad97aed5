//! `TeamId::parse` (team ids of `POST /v1/teams` and every `teams/{team}` path): never a
//! panic; it accepts exactly what the rule of API.md `^[a-z][a-z0-9-]{2,39}$` (at most 40
//! characters) admits, and what it accepts prints back as itself.
#![no_main]

use kineticd::domain::TeamId;

kineticd_fuzz::name_target!(TeamId::parse, r"^[a-z][a-z0-9-]{2,39}$", 40);
