//! `parse_filter`, the `filter=` of `GET /v1/operations`: any string gives typed values
//! (a known type, a valid team, never a team list) or 400 INVALID_ARGUMENT with a reason
//! and a message; never a panic.
#![no_main]

use kineticd::domain::TeamId;
use kineticd::domain::OperationType;
use kineticd::service::operations::parse_filter;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some(f) = kineticd_fuzz::text(data) else {
        return;
    };
    match parse_filter(f) {
        Ok(p) => {
            if let Some(t) = &p.op_type {
                assert!(OperationType::parse(t).is_ok(), "{f:?}: type {t:?}");
            }
            if let Some(t) = &p.team {
                assert!(TeamId::parse(t).is_ok(), "{f:?}: team {t:?}");
            }
            assert!(p.teams.is_none(), "{f:?}");
        }
        Err(e) => kineticd_fuzz::invalid(f, &e),
    }
});
