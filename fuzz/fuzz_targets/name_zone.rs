//! `ZoneName::parse` (the `{z}` of every cluster path): never a panic; it accepts exactly
//! the zones its rule (`us-central1-a`: region, hyphen, one letter) admits, at most 63
//! characters; what it accepts prints back as itself, and its region is the zone less its
//! last `-letter`.
#![no_main]

use std::sync::LazyLock;

use kineticd::domain::ZoneName;

static RULE: LazyLock<regex::Regex> =
    LazyLock::new(|| kineticd_fuzz::rule(r"^[a-z]+-[a-z][a-z0-9]*[0-9]-[a-z]$"));

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let accepts = s.len() <= 63 && RULE.is_match(s);
        kineticd_fuzz::name(s, ZoneName::parse, s, Some(accepts));
        if let Ok(z) = ZoneName::parse(s) {
            assert_eq!(format!("{}-{}", z.region(), &s[s.len() - 1..]), s);
        }
    }
});
