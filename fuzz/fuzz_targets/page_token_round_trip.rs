//! Page tokens minted by `PageRequest::page`: a token continues its own list with the
//! key it was made from, in its own scope only, for its own key type only; one changed,
//! dropped or added character never yields another key.
#![no_main]

use kineticd::store::clusters::ClusterKey;
use kineticd_fuzz::{page_request, token_for};

/// `MAX_TOKEN_LEN` of src/service/page.rs.
const MAX_TOKEN_LEN: usize = 2048;

type Input<'a> = (&'a str, &'a str, &'a str, u128, &'a str, usize, char, u8);

libfuzzer_sys::fuzz_target!(|input: Input<'_>| {
    let (project, zone, cluster, id, scope, at, c, how) = input;
    let key: ClusterKey = (
        project.to_owned(),
        zone.to_owned(),
        cluster.to_owned(),
        uuid::Uuid::from_u128(id),
    );
    let token = token_for(scope, &key);
    if token.len() > MAX_TOKEN_LEN {
        // `after` refuses longer tokens before decoding them (found by this target: keys of
        // ~260 control characters, escaped by JSON then base64). The lists' keys are
        // validated names, UUIDs and times, whose tokens are a few hundred characters.
        let refused = page_request(Some(token)).after::<ClusterKey>(scope);
        assert_eq!(refused.expect_err("too long").reason, "INVALID_PAGE_TOKEN");
        return;
    }
    let back = page_request(Some(token.clone())).after::<ClusterKey>(scope);
    assert_eq!(back.expect("its own token"), Some(key.clone()));
    let other = format!("{scope}x");
    let refused = page_request(Some(token.clone())).after::<ClusterKey>(&other);
    assert_eq!(
        refused.expect_err("another scope").reason,
        "INVALID_PAGE_TOKEN"
    );
    assert!(
        page_request(Some(token.clone()))
            .after::<(i64, uuid::Uuid)>(scope)
            .is_err()
    );

    let mut chars: Vec<char> = token.chars().collect();
    let i = at % chars.len();
    match how % 3 {
        0 => chars[i] = c,
        1 => {
            chars.remove(i);
        }
        _ => chars.insert(i, c),
    }
    let tampered: String = chars.into_iter().collect();
    match page_request(Some(tampered.clone())).after::<ClusterKey>(scope) {
        Ok(got) => assert!(
            tampered == token && got == Some(key),
            "{tampered:?} forged {got:?}"
        ),
        Err(e) => assert_eq!(e.reason, "INVALID_PAGE_TOKEN", "{tampered:?}"),
    }
});
