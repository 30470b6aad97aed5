//! Oracles of the fuzz targets: the properties of src/domain/hostile_props.rs and
//! src/service/hostile_props.rs, checked on libFuzzer's inputs through the same public
//! functions (a failed check panics, which libFuzzer reports as a crash with the input).
//!
//! Invariant: every check here holds for every input; nothing is skipped but input that
//! is not UTF-8 (callers only ever send strings: paths, query values and JSON bodies).

use std::fmt::{Debug, Display};
use std::str::FromStr;

use kineticd::domain::accelerators::{self, Choice, Resolved};
use kineticd::domain::{NameError, PoolId, RpcCode, resource_names};
use kineticd::service::Error;
use kineticd::service::page::{PageKey, PageRequest};
use kineticd::store::clusters::ClusterKey;
use regex::Regex;

// The targets' macros expand to these paths (`$crate::libfuzzer_sys`, `$crate::Regex`).
pub use libfuzzer_sys;
pub use regex::Regex as RuleRegex;

/// The fuzzer's bytes as the string a caller sent, if they are UTF-8.
pub fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

fn resolved(s: &str) -> Option<Resolved> {
    match accelerators::parse(s) {
        Ok(Choice::Accelerator(r)) => Some(r),
        _ => None,
    }
}

/// `accelerators::parse`: refusals say why and suggest at most five; every accepted
/// spelling resolves to its canonical name and back, says `:spot` exactly when it is spot,
/// is in the catalog, and makes a valid pool id.
pub fn accelerator(s: &str) {
    match accelerators::parse(s) {
        Err(e) => {
            assert!(!e.reason.is_empty(), "{s:?}: a refusal without a reason");
            assert!(e.suggestions.len() <= 5, "{s:?}: {:?}", e.suggestions);
            assert!(!e.to_string().is_empty(), "{s:?}");
        }
        Ok(Choice::Cpu) => {}
        Ok(Choice::Accelerator(r)) => {
            let name = r.canonical();
            assert_eq!(resolved(&name), Some(r.clone()), "{s:?} -> {name}");
            assert_eq!(
                r.spot,
                s.to_ascii_lowercase().trim().ends_with(":spot"),
                "{s:?} -> {name}"
            );
            assert!(
                accelerators::all()
                    .iter()
                    .any(|a| a.base_name() == r.base_name()),
                "{s:?} -> {name} is not in the catalog"
            );
            let id = resource_names::pool_id(&r.pool_prefix(), 0xbeef);
            assert!(PoolId::parse(&id).is_ok(), "{s:?} -> pool id {id}");
        }
    }
}

/// A validated name type: what parses prints back as `shown` (the input, or what the
/// type stores of it) and parses again to the same value; a refusal quotes at most 80
/// characters of the input. `accepts`, when given, is whether the rule API.md states for
/// the type (its regular expression, [`rule`]) admits `s`: the parser must agree.
pub fn name<T>(s: &str, parse: fn(&str) -> Result<T, NameError>, shown: &str, accepts: Option<bool>)
where
    T: Display + FromStr + PartialEq + Debug,
    T::Err: Debug,
{
    match parse(s) {
        Ok(v) => {
            assert_eq!(v.to_string(), shown, "{s:?}");
            assert_eq!(v.to_string().parse::<T>().ok(), Some(v), "{s:?}");
        }
        Err(e) => {
            assert!(e.value.chars().count() <= 80, "{s:?}: {e:?}");
            assert!(!e.rule.is_empty() && !e.kind.is_empty(), "{s:?}: {e:?}");
        }
    }
    if let Some(accepts) = accepts {
        assert_eq!(
            parse(s).is_ok(),
            accepts,
            "{s:?}: the parser and API.md's rule disagree"
        );
    }
}

/// A regular expression of API.md (compiled once per process by the caller).
pub fn rule(re: &str) -> Regex {
    Regex::new(re).expect("a valid regular expression")
}

/// The body of a `name_*` target whose type has a rule: `parse` accepts exactly the
/// strings of at most `max_len` bytes that `rule` matches, and what it accepts prints
/// back as itself ([`name`]). Each target stays its own cargo-fuzz binary: its file is
/// `#![no_main]` and one call, e.g.
/// `kineticd_fuzz::name_target!(ClusterName::parse, r"^[a-z]$", 40);`. An optional
/// fourth argument, a `fn(&str)`, checks more of each input.
#[macro_export]
macro_rules! name_target {
    ($parse:path, $rule:literal, $max_len:literal $(, $also:expr)?) => {
        static RULE: ::std::sync::LazyLock<$crate::RuleRegex> =
            ::std::sync::LazyLock::new(|| $crate::rule($rule));

        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            if let Some(s) = $crate::text(data) {
                let accepts = s.len() <= $max_len && RULE.is_match(s);
                $crate::name(s, $parse, s, Some(accepts));
                $(($also)(s);)?
            }
        });
    };
}

/// A 400 of a filter: INVALID_ARGUMENT with a reason and a message.
pub fn invalid(input: &str, e: &Error) {
    assert_eq!(e.code, RpcCode::InvalidArgument, "{input:?}: {e:?}");
    assert!(
        !e.reason.is_empty() && !e.message.is_empty(),
        "{input:?}: {e:?}"
    );
}

/// A page request carrying `token`, signed with a fixed key.
pub fn page_request(token: Option<String>) -> PageRequest {
    PageRequest {
        size: Some(1),
        token,
        key: PageKey::new(b"fuzz key"),
    }
}

/// A token as the cluster lists mint it for `key` in `scope`.
pub fn token_for(scope: &str, key: &ClusterKey) -> String {
    page_request(None)
        .page(scope, vec![key.clone(), key.clone()], Clone::clone, |k| k)
        .expect("a page")
        .next_page_token
        .expect("a next page")
}

/// Decoding `token` in `scope` is no key (empty token) or INVALID_PAGE_TOKEN, never a
/// key the caller made up.
pub fn foreign_token(token: &str, scope: &str) {
    let req = page_request(Some(token.to_owned()));
    match req.after::<ClusterKey>(scope) {
        Ok(None) => assert!(token.is_empty(), "{token:?} read as no token"),
        Ok(Some(k)) => panic!("{token:?} forged a key {k:?}"),
        Err(e) => {
            assert_eq!(e.code, RpcCode::InvalidArgument, "{token:?}");
            assert_eq!(e.reason, "INVALID_PAGE_TOKEN", "{token:?}");
        }
    }
    // The other key shapes of the lists refuse it the same way.
    assert!(token.is_empty() || req.after::<(i64, uuid::Uuid)>(scope).is_err());
    assert!(token.is_empty() || req.after::<String>(scope).is_err());
}
