//! AIP-154 etags: a change that names the etag the caller last saw is refused with
//! 409 ABORTED once the resource has changed since.
//!
//! Invariant: the comparison happens under the lock that the change itself holds, so
//! "checked" and "changed" see the same version.

use super::{Error, Result};

/// `"abc"`, `W/"abc"` and `abc` name the same etag.
fn normalize(etag: &str) -> &str {
    let e = etag.trim();
    let e = e.strip_prefix("W/").unwrap_or(e);
    e.strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or(e)
}

/// The etag a request carries: `If-Match` and/or the body's `etag` (they must agree).
pub fn expected(if_match: Option<&str>, body: Option<&str>) -> Result<Option<String>> {
    match (if_match, body) {
        (Some(h), Some(b)) if normalize(h) != normalize(b) => Err(Error::invalid(
            "ETAG_CONFLICTING",
            "the If-Match header and the body's etag differ: send one of them",
        )),
        (Some(e), _) | (None, Some(e)) => Ok(Some(e.to_owned())),
        (None, None) => Ok(None),
    }
}

/// Refuse with 409 ABORTED unless `expected` (if any) is `current` (`*` matches any).
pub fn check(expected: Option<&str>, current: &str, resource: &str) -> Result<()> {
    match expected {
        Some(e) if e.trim() != "*" && normalize(e) != normalize(current) => Err(Error::aborted(
            "ETAG_MISMATCH",
            format!(
                "{resource} has changed since etag {e} was read (now {current}): read it again, then retry the change"
            ),
        )
        .with("etag", current)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_and_mismatches() {
        for same in ["\"1-a\"", "W/\"1-a\"", "1-a", "*"] {
            assert!(check(Some(same), "\"1-a\"", "teams/t").is_ok(), "{same}");
        }
        assert!(check(None, "\"1-a\"", "teams/t").is_ok());
        let e = check(Some("\"1-b\""), "\"1-a\"", "teams/t").unwrap_err();
        assert_eq!(
            (e.code.name(), e.reason.as_str()),
            ("ABORTED", "ETAG_MISMATCH")
        );
        assert!(expected(Some("\"1-a\""), Some("1-a")).is_ok());
        assert!(expected(Some("\"1-a\""), Some("\"1-b\"")).is_err());
    }
}
