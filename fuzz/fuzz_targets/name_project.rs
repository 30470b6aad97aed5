//! `ProjectId::parse` (the `{p}` of every cluster path, a team's projects): never a panic;
//! it accepts exactly 6-30 lowercase letters, digits and hyphens, from a letter, not ending
//! in a hyphen (the rule of names.rs, as a regular expression), and what it accepts prints
//! back as itself.
#![no_main]

use kineticd::domain::ProjectId;

kineticd_fuzz::name_target!(ProjectId::parse, r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$", 30);
