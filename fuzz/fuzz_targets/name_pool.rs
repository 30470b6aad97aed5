//! `PoolId::parse` (the `{pool}` of every node pool path): never a panic; it accepts
//! exactly what the rule of API.md `^[a-z]([-a-z0-9]*[a-z0-9])?$` (at most 40 characters)
//! admits, and what it accepts prints back as itself.
#![no_main]

use std::sync::LazyLock;

use kineticd::domain::PoolId;

static RULE: LazyLock<regex::Regex> =
    LazyLock::new(|| kineticd_fuzz::rule(r"^[a-z]([-a-z0-9]*[a-z0-9])?$"));

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let accepts = s.len() <= 40 && RULE.is_match(s);
        kineticd_fuzz::name(s, PoolId::parse, s, Some(accepts));
    }
});
