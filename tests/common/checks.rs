//! Small pickers and assertions over responses that several test binaries share; each
//! panics naming what it looked at, so a failure still says which case it was.

use reqwest::header::HeaderMap;
use serde_json::Value;

/// Asserts that the `Content-Type` of `headers` starts with `prefix`.
#[track_caller]
pub fn assert_content_type(headers: &HeaderMap, prefix: &str) {
    let ctype = headers["content-type"].to_str().unwrap();
    assert!(
        ctype.starts_with(prefix),
        "content-type {ctype}, not {prefix}"
    );
}

/// The `name` of each entry of the array `body[items]` whose `flag` is true, in order.
#[track_caller]
pub fn names_flagged<'a>(body: &'a Value, items: &str, flag: &str) -> Vec<&'a str> {
    body[items]
        .as_array()
        .unwrap_or_else(|| panic!("no {items} in {body:#}"))
        .iter()
        .filter(|e| e[flag] == true)
        .map(|e| {
            e["name"]
                .as_str()
                .unwrap_or_else(|| panic!("no name in {e:#}"))
        })
        .collect()
}

/// The strings at `keys` of `v` (`None` where one is not a string).
pub fn strs<'a, const N: usize>(v: &'a Value, keys: [&str; N]) -> [Option<&'a str>; N] {
    keys.map(|k| v[k].as_str())
}
