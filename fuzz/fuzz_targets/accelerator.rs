//! `accelerators::parse` (`PUT .../clusters/{c}` and `POST .../nodePools` bodies,
//! `GET /v1/accelerators/{spec}`): any string is an answer, never a panic; what it
//! accepts round-trips through its canonical name (the oracle of `fuzz/src/lib.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Some(s) = kineticd_fuzz::text(data) {
        kineticd_fuzz::accelerator(s);
    }
});
