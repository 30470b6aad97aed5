//! `TeamId::parse` (team ids of `POST /v1/teams` and every `teams/{team}` path): never a
//! panic; it accepts exactly what the rule of API.md `^[a-z][a-z0-9-]{2,39}$` (at most 40
//! characters) admits, and what it accepts prints back as itself.
#![no_main]

use std::sync::LazyLock;

use kineticd::domain::TeamId;

static RULE: LazyLock<regex::Regex> =
    LazyLock::new(|| kineticd_fuzz::rule(r"^[a-z][a-z0-9-]{2,39}$"));

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let accepts = s.len() <= 40 && RULE.is_match(s);
        kineticd_fuzz::name(s, TeamId::parse, s, Some(accepts));
    }
});
