//! Keyset pagination (AIP-158). A page token is opaque to clients: base64url of the last
//! key returned plus a fingerprint of the query, so a token can only continue the list it
//! came from and never degrades to OFFSET scans.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Error, Result};

pub const DEFAULT_PAGE_SIZE: i64 = 50;
pub const MAX_PAGE_SIZE: i64 = 1000;

/// What the caller asked for: `pageSize` and `pageToken`.
#[derive(Debug, Clone, Default)]
pub struct PageRequest {
    pub size: Option<i64>,
    pub token: Option<String>,
}

/// One page of results and the token for the next, if any.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_page_token: Option<String>,
}

#[derive(serde::Deserialize, Serialize)]
struct Token<K> {
    /// Fingerprint of the query this token continues.
    q: u64,
    k: K,
}

fn fingerprint(scope: &str) -> u64 {
    crate::domain::hash::fnv1a(scope.bytes())
}

impl PageRequest {
    /// The number of rows to return (default 50, coerced down to 1000).
    pub fn limit(&self) -> Result<i64> {
        match self.size {
            None | Some(0) => Ok(DEFAULT_PAGE_SIZE),
            Some(n) if n < 0 => Err(Error::invalid(
                "INVALID_PAGE_SIZE",
                format!(
                    "pageSize must not be negative (got {n}); omit it for the default of {DEFAULT_PAGE_SIZE}"
                ),
            )),
            Some(n) => Ok(n.min(MAX_PAGE_SIZE)),
        }
    }

    /// The key after which this page starts; `scope` names the query (with its filters).
    pub fn after<K: DeserializeOwned>(&self, scope: &str) -> Result<Option<K>> {
        let Some(t) = self.token.as_deref().filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        let bad = || {
            Error::invalid(
                "INVALID_PAGE_TOKEN",
                "pageToken is not valid for this list: pass the nextPageToken of the previous page with the same filters",
            )
        };
        let bytes = URL_SAFE_NO_PAD.decode(t).map_err(|_| bad())?;
        let tok: Token<K> = serde_json::from_slice(&bytes).map_err(|_| bad())?;
        if tok.q != fingerprint(scope) {
            return Err(bad());
        }
        Ok(Some(tok.k))
    }

    /// Cut `rows` (fetched with `limit + 1`) to a page, with a token built from the last
    /// kept row's key when more rows exist.
    pub fn page<R, K: Serialize, T>(
        &self,
        scope: &str,
        mut rows: Vec<R>,
        key: impl Fn(&R) -> K,
        render: impl FnMut(R) -> T,
    ) -> Result<Page<T>> {
        let limit = self.limit()? as usize;
        let next_page_token = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|r| {
                let tok = Token {
                    q: fingerprint(scope),
                    k: key(r),
                };
                URL_SAFE_NO_PAD.encode(serde_json::to_vec(&tok).unwrap_or_default())
            })
        } else {
            None
        };
        Ok(Page {
            items: rows.into_iter().map(render).collect(),
            next_page_token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let r = |n| PageRequest {
            size: n,
            token: None,
        };
        assert_eq!(r(None).limit().unwrap(), 50);
        assert_eq!(r(Some(5000)).limit().unwrap(), 1000);
        assert_eq!(r(Some(3)).limit().unwrap(), 3);
        assert_eq!(r(Some(-1)).limit().unwrap_err().reason, "INVALID_PAGE_SIZE");
    }

    #[test]
    fn tokens_round_trip_and_bind_to_scope() {
        let r = PageRequest {
            size: Some(2),
            token: None,
        };
        let p = r
            .page("teams", vec!["a", "b", "c"], |s| s.to_string(), |s| s)
            .unwrap();
        assert_eq!(p.items, vec!["a", "b"]);
        let next = PageRequest {
            size: Some(2),
            token: p.next_page_token.clone(),
        };
        assert_eq!(next.after::<String>("teams").unwrap().as_deref(), Some("b"));
        assert_eq!(
            next.after::<String>("teams?state=RUNNING")
                .unwrap_err()
                .reason,
            "INVALID_PAGE_TOKEN"
        );
        let junk = PageRequest {
            size: None,
            token: Some("%%%".into()),
        };
        assert!(junk.after::<String>("teams").is_err());
    }
}
