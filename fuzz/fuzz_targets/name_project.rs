//! `ProjectId::parse` (the `{p}` of every cluster path, a team's projects): never a panic;
//! it accepts exactly 6-30 lowercase letters, digits and hyphens, from a letter, not ending
//! in a hyphen (the rule of names.rs, as a regular expression), and what it accepts prints
//! back as itself.
#![no_main]

use std::sync::LazyLock;

use kineticd::domain::ProjectId;

static RULE: LazyLock<regex::Regex> =
    LazyLock::new(|| kineticd_fuzz::rule(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$"));

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let accepts = s.len() <= 30 && RULE.is_match(s);
        kineticd_fuzz::name(s, ProjectId::parse, s, Some(accepts));
    }
});
