//! `Email::parse` (the member of `PUT /v1/teams/{team}/members/{email}`, `createdBy=` of an
//! operations filter, the dev identity header): never a panic; what it accepts is stored
//! trimmed and lower-cased, prints back as that and parses to the same value.
#![no_main]

use kineticd::domain::Email;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        let stored = s.trim().to_ascii_lowercase();
        kineticd_fuzz::name(s, Email::parse, &stored, None);
        if let Ok(e) = Email::parse(s) {
            let id = e.log_id();
            assert!(id.starts_with("u-") && id.len() == 18, "{s:?}: {id}");
        }
    }
});
