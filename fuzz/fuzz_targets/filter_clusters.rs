//! `ListClusters::from_query`, the `?team=&state=` of `GET /v1/clusters`: any pair of
//! query values gives back what was sent (trimmed, `teams/` optional) or 400
//! INVALID_ARGUMENT; never a panic.
#![no_main]

use kineticd::service::clusters::ListClusters;

libfuzzer_sys::fuzz_target!(|q: (Option<&str>, Option<&str>)| {
    let (team, state) = q;
    match ListClusters::from_query(team, state) {
        Ok(l) => {
            if let Some(s) = l.state {
                assert_eq!(Some(s.as_str()), state.map(str::trim), "{q:?}");
            }
            if let Some(t) = l.team {
                let sent = team.expect("a team was sent").trim();
                assert_eq!(
                    sent.strip_prefix("teams/").unwrap_or(sent),
                    t.as_str(),
                    "{q:?}"
                );
            }
        }
        Err(e) => kineticd_fuzz::invalid(&format!("{q:?}"), &e),
    }
});
