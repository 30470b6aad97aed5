//! Property tests (issue 15, hostile input) for what list requests carry: page tokens
//! and filters. Any token is either the continuation this deployment signed or
//! 400 INVALID_PAGE_TOKEN; any filter is either parsed into typed values or
//! 400 INVALID_FILTER / a name error; nothing panics.
//!
//! Case counts follow `PROPTEST_CASES` (256 by default); `scripts/long-hostile.sh` runs
//! them with 100,000.

use proptest::prelude::*;
use uuid::Uuid;

use super::clusters::ListClusters;
use super::operations::parse_filter;
use crate::domain::OperationType;

/// Every operation type's text, as filters take it.
fn types() -> Vec<&'static str> {
    OperationType::ALL.iter().map(|t| t.as_str()).collect()
}
use super::page::{PageKey, PageRequest};
use crate::domain::hostile_props::{config, hostile_string};
use crate::domain::{ClusterState, OperationState, RpcCode};
use crate::store::clusters::ClusterKey;

fn req(token: Option<String>) -> PageRequest {
    PageRequest {
        size: Some(1),
        token,
        key: PageKey::new(b"property key"),
    }
}

/// A token for `key` in `scope`, as the list endpoints mint them.
fn token_for(scope: &str, key: &ClusterKey) -> String {
    req(None)
        .page(scope, vec![key.clone(), key.clone()], Clone::clone, |k| k)
        .expect("a page")
        .next_page_token
        .expect("a next page")
}

fn cluster_key() -> impl Strategy<Value = ClusterKey> {
    (
        any::<String>(),
        "[a-z0-9-]{0,20}",
        any::<String>(),
        any::<u128>(),
    )
        .prop_map(|(p, z, c, u)| (p, z, c, Uuid::from_u128(u)))
}

/// A token-shaped string: two base64url parts, or near misses of one.
fn token_like() -> impl Strategy<Value = String> {
    prop_oneof![
        hostile_string(),
        "[A-Za-z0-9_-]{0,200}\\.[A-Za-z0-9_-]{0,60}",
        "[A-Za-z0-9_=+/.-]{0,3000}",
    ]
}

fn filter_term() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        hostile_string(),
        Just("true".to_owned()),
        Just("false".to_owned()),
        prop::sample::select(
            OperationState::ALL
                .iter()
                .map(|s| s.as_str().to_owned())
                .collect::<Vec<_>>()
        ),
        prop::sample::select(types().into_iter().map(str::to_owned).collect::<Vec<_>>()),
        "teams/[a-z][a-z0-9-]{2,39}",
        "\"projects/[a-z0-9-]{1,20}/zones/[a-z0-9-]{1,20}/clusters/[a-z0-9-]{1,20}\"",
    ];
    let key = prop_oneof![
        prop::sample::select(vec!["done", "state", "type", "target", "team", "createdBy"])
            .prop_map(str::to_owned),
        hostile_string(),
    ];
    (key, " ?= ?", value).prop_map(|(k, eq, v)| format!("{k}{eq}{v}"))
}

proptest! {
    #![proptest_config(config())]

    /// Anything in `pageToken`: no panic, and either no token or INVALID_PAGE_TOKEN.
    #[test]
    fn arbitrary_page_tokens_are_invalid_page_token(t in token_like()) {
        match req(Some(t.clone())).after::<ClusterKey>("clusters?scope") {
            Ok(None) => prop_assert!(t.is_empty()),
            Ok(Some(k)) => prop_assert!(false, "{t:?} forged a key {k:?}"),
            Err(e) => {
                prop_assert_eq!(e.code, RpcCode::InvalidArgument);
                prop_assert_eq!(e.reason, "INVALID_PAGE_TOKEN");
            }
        }
    }

    /// A minted token continues its own list with the key it was made from, only there.
    #[test]
    fn page_tokens_round_trip(key in cluster_key(), scope in "[ -~]{0,60}") {
        let token = token_for(&scope, &key);
        prop_assert_eq!(req(Some(token.clone())).after::<ClusterKey>(&scope).unwrap(), Some(key));
        let other = format!("{scope}x");
        prop_assert_eq!(
            req(Some(token.clone())).after::<ClusterKey>(&other).unwrap_err().reason,
            "INVALID_PAGE_TOKEN"
        );
        // Another key type (another list) cannot read it either.
        prop_assert!(req(Some(token)).after::<(i64, Uuid)>(&scope).is_err());
    }

    /// One changed, dropped or added character never yields another key.
    #[test]
    fn tampered_page_tokens_never_forge_a_key(
        key in cluster_key(),
        at in any::<prop::sample::Index>(),
        c in prop::char::range('-', 'z'),
        how in 0u8..3,
    ) {
        let token = token_for("clusters", &key);
        let mut chars: Vec<char> = token.chars().collect();
        let i = at.index(chars.len());
        match how {
            0 => chars[i] = c,
            1 => {
                chars.remove(i);
            }
            _ => chars.insert(i, c),
        }
        let tampered: String = chars.into_iter().collect();
        match req(Some(tampered.clone())).after::<ClusterKey>("clusters") {
            Ok(got) => prop_assert!(tampered == token && got == Some(key)),
            Err(e) => prop_assert_eq!(e.reason, "INVALID_PAGE_TOKEN"),
        }
    }

    /// Any `filter=` of `GET /v1/operations`: typed values or a 400, never a panic.
    #[test]
    fn operation_filters_parse_or_refuse(
        terms in prop::collection::vec(filter_term(), 0..5),
        raw in hostile_string(),
    ) {
        for f in [terms.join(" AND "), raw] {
            match parse_filter(&f) {
                Ok(p) => {
                    if let Some(t) = &p.op_type {
                        prop_assert!(types().contains(&t.as_str()));
                    }
                    if let Some(t) = &p.team {
                        prop_assert!(crate::domain::TeamId::parse(t).is_ok());
                    }
                    prop_assert!(p.teams.is_none());
                }
                Err(e) => {
                    prop_assert_eq!(e.code, RpcCode::InvalidArgument);
                    prop_assert!(!e.reason.is_empty() && !e.message.is_empty());
                }
            }
        }
    }

    /// Well-formed filters give back exactly what they say.
    #[test]
    fn valid_operation_filters_round_trip(
        done in any::<bool>(),
        state in prop::sample::select(OperationState::ALL.to_vec()),
        op_type in prop::sample::select(types()),
        team in "[a-z][a-z0-9-]{2,39}",
        prefixed in any::<bool>(),
    ) {
        let t = if prefixed { format!("teams/{team}") } else { team.clone() };
        let f = format!(
            "done={done} AND state={} AND type=\"{op_type}\" AND team={t}",
            state.as_str()
        );
        let p = parse_filter(&f).unwrap();
        prop_assert_eq!(p.done, Some(done));
        prop_assert_eq!(p.state, Some(state));
        prop_assert_eq!(p.op_type.as_deref(), Some(op_type));
        prop_assert_eq!(p.team, Some(team));
    }

    /// `?team=&state=` of the cluster lists.
    #[test]
    fn cluster_list_filters_parse_or_refuse(
        team in prop::option::of(hostile_string()),
        state in prop::option::of(prop_oneof![
            hostile_string(),
            prop::sample::select(ClusterState::ALL.iter().map(|s| s.as_str().to_owned()).collect::<Vec<_>>()),
        ]),
    ) {
        match ListClusters::from_query(team.as_deref(), state.as_deref()) {
            Ok(q) => {
                if let Some(s) = q.state {
                    prop_assert_eq!(Some(s.as_str()), state.as_deref().map(str::trim));
                }
                if let Some(t) = q.team {
                    let sent = team.as_deref().unwrap().trim();
                    prop_assert_eq!(sent.strip_prefix("teams/").unwrap_or(sent), t.as_str());
                }
            }
            Err(e) => prop_assert_eq!(e.code, RpcCode::InvalidArgument),
        }
    }
}
