//! One page of a simulated Google list call: the page size (`maxResults` for Compute and
//! Storage, `pageSize` for the AIP-158 APIs), the opaque `pageToken`, and the envelopes:
//! AIP-158's (items under the collection's name), Compute's list and aggregated list
//! (`kind` + `items`, scopes such as `zones/us-central1-a`).
//!
//! Invariant: a page lists items in key order and its token names the last key it holds,
//! so the next page starts right after that key: never a repeat, even when items come or
//! go between pages; a token this module did not make, or a size out of range, is 400.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::sim::error::{Flavor, SimError};

/// The paging parameters of a list call (other parameters, such as `projection` or a
/// filter the service does not implement, are not read here).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageQuery {
    pub max_results: Option<String>,
    pub page_size: Option<String>,
    pub page_token: Option<String>,
}

/// How a service sizes its pages.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `maxResults` or `pageSize`.
    pub field: &'static str,
    /// Page size when the caller gives none (or 0).
    pub default: usize,
    pub max: usize,
    /// Above `max`: Compute refuses (400), the others serve `max`.
    pub refuse_above_max: bool,
    pub flavor: Flavor,
}

/// Compute: `maxResults` 0..=500 (default 500).
pub const COMPUTE: Limits = Limits {
    field: "maxResults",
    default: 500,
    max: 500,
    refuse_above_max: true,
    flavor: Flavor::Compute,
};

/// An AIP-158 `pageSize` of `default` items, at most `max`.
pub const fn aip158(default: usize, max: usize) -> Limits {
    Limits {
        field: "pageSize",
        default,
        max,
        refuse_above_max: false,
        flavor: Flavor::Aip193,
    }
}

/// One page and the token of the next (none on the last page).
#[derive(Debug)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_page_token: Option<String>,
}

impl Limits {
    fn size(&self, q: &PageQuery) -> Result<usize, SimError> {
        let given = if self.field == "pageSize" {
            &q.page_size
        } else {
            &q.max_results
        };
        let Some(raw) = given.as_deref().filter(|s| !s.is_empty()) else {
            return Ok(self.default);
        };
        match raw.parse::<usize>() {
            Ok(0) => Ok(self.default),
            Ok(n) if n <= self.max => Ok(n),
            Ok(_) if !self.refuse_above_max => Ok(self.max),
            _ => Err(SimError::invalid(
                self.flavor,
                format!(
                    "Invalid value for field '{}': '{raw}'. Must be a number from 0 to {}.",
                    self.field, self.max
                ),
            )),
        }
    }

    /// The page of `all` (each item with its key, in any order) that `q` asks for.
    pub fn page<T>(&self, mut all: Vec<(String, T)>, q: &PageQuery) -> Result<Page<T>, SimError> {
        let size = self.size(q)?;
        let after = match q.page_token.as_deref().filter(|t| !t.is_empty()) {
            None => None,
            Some(t) => Some(decode(t).ok_or_else(|| {
                SimError::invalid(
                    self.flavor,
                    format!("Invalid value for field 'pageToken': '{t}'."),
                )
            })?),
        };
        all.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rest = all
            .into_iter()
            .filter(|(k, _)| after.as_ref().is_none_or(|a| k > a))
            .peekable();
        let mut items = Vec::new();
        let mut last = None;
        for (k, item) in rest.by_ref().take(size) {
            items.push(item);
            last = Some(k);
        }
        let next_page_token = rest.peek().and(last).map(|k| encode(&k));
        Ok(Page {
            items,
            next_page_token,
        })
    }
}

/// An AIP-158 list response: one page under its collection's name (`accounts`,
/// `services`, ...) and `nextPageToken`, both left out when empty.
#[derive(Debug)]
pub struct AipList<T> {
    collection: &'static str,
    page: Page<T>,
}

impl<T> AipList<T> {
    /// One page of `all` (each item with its key) under `collection`, sized by `limits`.
    pub fn page(
        limits: &Limits,
        collection: &'static str,
        all: Vec<(String, T)>,
        q: &PageQuery,
    ) -> Result<AipList<T>, SimError> {
        Ok(AipList {
            collection,
            page: limits.page(all, q)?,
        })
    }
}

impl<T: Serialize> Serialize for AipList<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if !self.page.items.is_empty() {
            map.serialize_entry(self.collection, &self.page.items)?;
        }
        if let Some(token) = &self.page.next_page_token {
            map.serialize_entry("nextPageToken", token)?;
        }
        map.end()
    }
}

const TOKEN_PREFIX: &str = "after:";

fn encode(key: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{TOKEN_PREFIX}{key}"))
}

fn decode(token: &str) -> Option<String> {
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()?;
    String::from_utf8(raw)
        .ok()?
        .strip_prefix(TOKEN_PREFIX)
        .map(str::to_owned)
}

/// Compute's `XxxList`: one page of one scope.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputeList<T> {
    pub kind: String,
    pub id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    pub self_link: String,
}

impl<T> ComputeList<T> {
    /// One page of `all` (`(name, item)`), of `kind` (e.g. `compute#networkList`), at
    /// `self_link`.
    pub fn page(
        kind: &str,
        self_link: String,
        all: Vec<(String, T)>,
        q: &PageQuery,
    ) -> Result<ComputeList<T>, SimError> {
        let page = COMPUTE.page(all, q)?;
        Ok(ComputeList {
            kind: kind.to_owned(),
            id: self_link.clone(),
            items: page.items,
            next_page_token: page.next_page_token,
            self_link,
        })
    }
}

/// The entries of `map` whose key starts with `prefix`, keyed by the rest of their key
/// (e.g. `{project}/{name}` under `{project}/`: by name).
pub fn under<T: Clone>(map: &BTreeMap<String, T>, prefix: &str) -> Vec<(String, T)> {
    map.range(prefix.to_owned()..)
        .map_while(|(k, v)| Some((k.strip_prefix(prefix)?.to_owned(), v.clone())))
        .collect()
}

/// Compute's `XxxAggregatedList`: one page across scopes, each scope
/// (`regions/{r}`, `zones/{z}`) holding its items under `collection` (e.g. `routers`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedList<T> {
    pub kind: String,
    pub id: String,
    pub items: BTreeMap<String, BTreeMap<&'static str, Vec<T>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    pub self_link: String,
    pub unreachables: Vec<String>,
}

impl<T> AggregatedList<T> {
    /// One page of `all` (`(scope, name, item)`), paged across scopes by `scope/name`.
    pub fn page(
        (kind, collection): (&str, &'static str),
        self_link: String,
        all: Vec<(String, String, T)>,
        q: &PageQuery,
    ) -> Result<AggregatedList<T>, SimError> {
        let keyed = all
            .into_iter()
            .map(|(scope, name, item)| (format!("{scope}/{name}"), (scope, item)))
            .collect();
        let page = COMPUTE.page(keyed, q)?;
        let mut items: BTreeMap<String, BTreeMap<&'static str, Vec<T>>> = BTreeMap::new();
        for (scope, item) in page.items {
            items
                .entry(scope)
                .or_default()
                .entry(collection)
                .or_default()
                .push(item);
        }
        Ok(AggregatedList {
            kind: kind.to_owned(),
            id: self_link.clone(),
            items,
            next_page_token: page.next_page_token,
            self_link,
            unreachables: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(size: Option<&str>, token: Option<String>) -> PageQuery {
        PageQuery {
            max_results: size.map(str::to_owned),
            page_size: None,
            page_token: token,
        }
    }

    fn keyed(names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| ((*n).to_owned(), (*n).to_owned()))
            .collect()
    }

    #[test]
    fn pages_follow_key_order_and_end_without_a_token() {
        let all = keyed(&["c", "a", "e", "b", "d"]);
        let first = COMPUTE.page(all.clone(), &q(Some("2"), None)).unwrap();
        assert_eq!(first.items, ["a", "b"]);
        let second = COMPUTE
            .page(all.clone(), &q(Some("2"), first.next_page_token))
            .unwrap();
        assert_eq!(second.items, ["c", "d"]);
        let last = COMPUTE
            .page(all, &q(Some("2"), second.next_page_token))
            .unwrap();
        assert_eq!(last.items, ["e"]);
        assert_eq!(last.next_page_token, None);
    }

    #[test]
    fn a_token_resumes_after_its_key_even_when_that_item_is_gone() {
        let first = COMPUTE
            .page(keyed(&["a", "b", "c"]), &q(Some("2"), None))
            .unwrap();
        let next = COMPUTE
            .page(keyed(&["a", "c", "d"]), &q(None, first.next_page_token))
            .unwrap();
        assert_eq!(next.items, ["c", "d"]);
    }

    #[test]
    fn under_a_prefix_by_the_rest_of_the_key() {
        let map: BTreeMap<String, u8> = [("p/a", 1), ("p/b", 2), ("q/a", 3), ("p", 4)]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(
            under(&map, "p/"),
            [("a".to_owned(), 1), ("b".to_owned(), 2)]
        );
    }

    #[test]
    fn bad_sizes_and_tokens_are_400_and_aip_sizes_are_capped() {
        let all = keyed(&["a"]);
        for bad in [q(Some("501"), None), q(Some("-1"), None)] {
            assert_eq!(COMPUTE.page(all.clone(), &bad).unwrap_err().http, 400);
        }
        let forged = q(None, Some("bm90LWEtdG9rZW4".into()));
        assert_eq!(COMPUTE.page(all.clone(), &forged).unwrap_err().http, 400);
        let big = PageQuery {
            page_size: Some("5000".into()),
            ..PageQuery::default()
        };
        assert_eq!(aip158(2, 100).page(all, &big).unwrap().items, ["a"]);
    }
}
