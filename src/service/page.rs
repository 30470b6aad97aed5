//! Keyset pagination (AIP-158). A page token is opaque to clients: base64url of the last
//! key returned plus a fingerprint of the query, followed by an HMAC-SHA256 of both under
//! the deployment's page-token key, so a token can only continue the list it came from,
//! never degrades to OFFSET scans, and cannot be forged.
//!
//! Invariant: a key decoded from a token is one this deployment produced (the MAC
//! checks), so nothing a client invents reaches the database; every bad token is
//! 400 INVALID_PAGE_TOKEN.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::Sha256;

use super::{Error, Result};

pub const DEFAULT_PAGE_SIZE: i64 = 50;
pub const MAX_PAGE_SIZE: i64 = 1000;
/// Longer tokens are refused before decoding (ours are far shorter).
const MAX_TOKEN_LEN: usize = 2048;

/// The secret that signs page tokens (from the database: shared by replicas, kept
/// across restarts).
#[derive(Clone)]
pub struct PageKey(Arc<[u8]>);

impl PageKey {
    pub fn new(bytes: &[u8]) -> PageKey {
        PageKey(bytes.into())
    }

    /// A key for another purpose (`label` names it; the console's form tokens use one),
    /// derived from this one: shared by replicas like it, and a token of one kind never
    /// passes as another (page-token payloads are JSON; a label starts with a NUL).
    pub fn derive(&self, label: &str) -> Vec<u8> {
        self.sign(format!("\0{label}").as_bytes())
    }

    fn mac(&self) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0).expect("HMAC accepts any key length")
    }

    fn sign(&self, payload: &[u8]) -> Vec<u8> {
        let mut m = self.mac();
        m.update(payload);
        m.finalize().into_bytes().to_vec()
    }

    fn verify(&self, payload: &[u8], tag: &[u8]) -> bool {
        let mut m = self.mac();
        m.update(payload);
        m.verify_slice(tag).is_ok()
    }
}

impl std::fmt::Debug for PageKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PageKey(..)")
    }
}

/// What the caller asked for: `pageSize` and `pageToken`, and the key tokens are signed with.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub size: Option<i64>,
    pub token: Option<String>,
    pub key: PageKey,
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
        if t.len() > MAX_TOKEN_LEN {
            return Err(bad());
        }
        let (payload, tag) = t.split_once('.').ok_or_else(bad)?;
        let payload = URL_SAFE_NO_PAD.decode(payload).map_err(|_| bad())?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| bad())?;
        if !self.key.verify(&payload, &tag) {
            return Err(bad());
        }
        let tok: Token<K> = serde_json::from_slice(&payload).map_err(|_| bad())?;
        if tok.q != fingerprint(scope) {
            return Err(bad());
        }
        Ok(Some(tok.k))
    }

    /// `payload.tag`, both base64url.
    fn token_for<K: Serialize>(&self, tok: &Token<K>) -> String {
        let payload = serde_json::to_vec(tok).unwrap_or_default();
        let tag = self.key.sign(&payload);
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
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
                self.token_for(&tok)
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

    fn req(size: Option<i64>, token: Option<String>) -> PageRequest {
        PageRequest {
            size,
            token,
            key: PageKey::new(b"test key"),
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(req(None, None).limit().unwrap(), 50);
        assert_eq!(req(Some(5000), None).limit().unwrap(), 1000);
        assert_eq!(req(Some(3), None).limit().unwrap(), 3);
        assert_eq!(
            req(Some(-1), None).limit().unwrap_err().reason,
            "INVALID_PAGE_SIZE"
        );
    }

    #[test]
    fn tokens_round_trip_and_bind_to_scope() {
        let p = req(Some(2), None)
            .page("teams", vec!["a", "b", "c"], |s| s.to_string(), |s| s)
            .unwrap();
        assert_eq!(p.items, vec!["a", "b"]);
        let next = req(Some(2), p.next_page_token.clone());
        assert_eq!(next.after::<String>("teams").unwrap().as_deref(), Some("b"));
        assert_eq!(
            next.after::<String>("teams?state=RUNNING")
                .unwrap_err()
                .reason,
            "INVALID_PAGE_TOKEN"
        );
        assert!(
            req(None, Some("%%%".into()))
                .after::<String>("teams")
                .is_err()
        );
    }

    #[test]
    fn forged_and_foreign_tokens_are_refused() {
        let p = req(Some(1), None)
            .page("teams", vec!["a", "b"], |s| s.to_string(), |s| s)
            .unwrap();
        let token = p.next_page_token.unwrap();
        // Another deployment's key.
        let foreign = PageRequest {
            key: PageKey::new(b"other key"),
            ..req(None, Some(token.clone()))
        };
        assert!(foreign.after::<String>("teams").is_err());
        // A payload of our own making, with the old tag or none.
        let (_, tag) = token.split_once('.').unwrap();
        let forged = URL_SAFE_NO_PAD.encode(format!(
            r#"{{"q":{},"k":"a\u0000b"}}"#,
            fingerprint("teams")
        ));
        for t in [
            format!("{forged}.{tag}"),
            forged.clone(),
            format!("{forged}."),
        ] {
            assert_eq!(
                req(None, Some(t))
                    .after::<String>("teams")
                    .unwrap_err()
                    .reason,
                "INVALID_PAGE_TOKEN"
            );
        }
        assert!(
            req(None, Some("a".repeat(5000)))
                .after::<String>("teams")
                .is_err()
        );
    }
}
