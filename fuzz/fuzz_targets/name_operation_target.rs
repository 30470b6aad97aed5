//! `OperationTarget::parse` (the `target=` of an operations filter): never a panic; it
//! accepts exactly what the rule of names.rs `^[!-~]{1,512}$` (at most 512 characters)
//! admits, and what it accepts prints back as itself.
#![no_main]

use std::sync::LazyLock;

use kineticd::domain::OperationTarget;

static RULE: LazyLock<regex::Regex> = LazyLock::new(|| kineticd_fuzz::rule(r"^[!-~]{1,512}$"));

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let accepts = s.len() <= 512 && RULE.is_match(s);
        kineticd_fuzz::name(s, OperationTarget::parse, s, Some(accepts));
    }
});
