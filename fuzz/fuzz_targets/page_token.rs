//! `PageRequest::after` on a foreign or garbled `pageToken`: no key (empty token) or 400
//! INVALID_PAGE_TOKEN for every list's key type, never a panic and never a key the
//! caller made up (the MAC holds).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(t) = kineticd_fuzz::text(data) {
        kineticd_fuzz::foreign_token(t, "clusters?scope");
    }
});
