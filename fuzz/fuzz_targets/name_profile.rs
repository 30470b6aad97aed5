//! `ProfileId::parse` (the `{profile}` of `/v1/profiles/{profile}`): never a panic; it
//! accepts exactly what the rule of API.md `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$` (at most 64
//! characters) admits, and what it accepts prints back as itself.
#![no_main]

use std::sync::LazyLock;

use kineticd::domain::ProfileId;

static RULE: LazyLock<regex::Regex> =
    LazyLock::new(|| kineticd_fuzz::rule(r"^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$"));

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let accepts = s.len() <= 64 && RULE.is_match(s);
        kineticd_fuzz::name(s, ProfileId::parse, s, Some(accepts));
    }
});
