//! Property tests (issue 15, hostile input) for the parsers of the domain: the
//! accelerator parser and the validated names. Whatever a caller types, parsing never
//! panics; everything that parses prints back as itself and parses to the same value.
//!
//! Case counts follow proptest's `PROPTEST_CASES` (256 by default, so `cargo test` stays
//! quick); `scripts/long-hostile.sh` runs the same properties with 100,000 cases.

use proptest::prelude::*;

use super::accelerators::{self, Choice, GPUS, Resolved, TPUS};
use super::names::ZoneName;
use super::names::{ClusterName, Email, OperationTarget, PoolId, ProfileId, ProjectId, TeamId};
use super::resource_names::{self, ClusterNames};

/// proptest's defaults (cases from `PROPTEST_CASES`), without regression files: every
/// finding becomes a named unit test instead.
pub(crate) fn config() -> ProptestConfig {
    ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Strings a hostile caller might send: anything, or near-misses of real spellings.
pub(crate) fn hostile_string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[ -~]{0,40}",
        "(gpu|tpu|cpu|GPU|Tpu)?[-:x]?[a-z0-9]{0,12}[-x:]?[0-9]{0,12}(x[0-9]{1,3})?(:spot|:SPOT)?",
        "\\PC{0,3}[\u{0}-\u{ff}]{0,20}",
    ]
}

/// A spelling from the parser's grammar: a prefix, a model or alias, a count or shape,
/// spot, random case and surrounding blanks.
fn accelerator_spelling() -> impl Strategy<Value = String> {
    let mut models: Vec<String> = Vec::new();
    for m in GPUS {
        models.push(m.name.to_owned());
        models.extend(m.aliases.iter().map(|a| a.to_string()));
    }
    for f in TPUS {
        models.push(f.name.to_owned());
        models.extend(f.aliases.iter().map(|a| a.to_string()));
    }
    let selector = prop_oneof![
        Just(String::new()),
        (0u32..40).prop_map(|n| format!("x{n}")),
        (0u32..600).prop_map(|n| format!("-{n}")),
        "-[1-9]x[1-9](x[1-9])?",
    ];
    (
        prop_oneof![
            Just(""),
            Just("gpu-"),
            Just("tpu-"),
            Just("gpu:"),
            Just("tpu:")
        ],
        prop::sample::select(models),
        selector,
        any::<bool>(),
        " {0,2}",
        any::<u64>(),
    )
        .prop_map(|(prefix, model, sel, spot, pad, case)| {
            let body = if prefix.ends_with(':') {
                format!("{prefix}{}", case % 300)
            } else {
                format!("{prefix}{model}{sel}")
            };
            let s = format!("{pad}{body}{}{pad}", if spot { ":spot" } else { "" });
            // Flip the case of some letters: spellings are case-insensitive.
            s.chars()
                .enumerate()
                .map(|(i, c)| {
                    if case >> (i % 64) & 1 == 1 {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect()
        })
}

fn resolved(s: &str) -> Option<Resolved> {
    match accelerators::parse(s) {
        Ok(Choice::Accelerator(r)) => Some(r),
        _ => None,
    }
}

#[test]
fn every_canonical_name_and_alias_round_trips() {
    for r in accelerators::all() {
        for spot in [false, true] {
            let r = Resolved { spot, ..r.clone() };
            let name = r.canonical();
            assert_eq!(resolved(&name), Some(r.clone()), "{name}");
            assert_eq!(
                resolved(&name.to_ascii_uppercase()),
                Some(r.clone()),
                "{name}"
            );
            assert_eq!(resolved(&format!("  {name} ")), Some(r), "{name}");
        }
    }
    for m in GPUS {
        let want = resolved(m.name).expect("a model name parses");
        assert_eq!(want.family, m.name);
        for a in m.aliases {
            assert_eq!(resolved(a).as_ref(), Some(&want), "alias {a}");
            assert_eq!(
                resolved(&format!("gpu-{a}")).as_ref(),
                Some(&want),
                "gpu-{a}"
            );
        }
    }
    for f in TPUS {
        let want = resolved(&format!("tpu-{}", f.name)).expect("a family name parses");
        assert_eq!(want.family, f.name);
        assert_eq!(want.count, f.default_chips);
        for a in f.aliases {
            assert_eq!(resolved(a).as_ref(), Some(&want), "alias {a}");
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// Any string: an answer, never a panic; refusals say why and suggest at most five.
    #[test]
    fn accelerator_parse_never_panics(s in hostile_string()) {
        if let Err(e) = accelerators::parse(&s) {
            prop_assert!(!e.reason.is_empty());
            prop_assert!(e.suggestions.len() <= 5);
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// resolve(canonical(x)) == x for everything the parser accepts.
    #[test]
    fn accepted_spellings_resolve_to_their_canonical_name(s in accelerator_spelling()) {
        if let Some(r) = resolved(&s) {
            let name = r.canonical();
            prop_assert_eq!(resolved(&name), Some(r.clone()), "{:?} -> {}", s, name);
            prop_assert_eq!(r.spot, s.to_ascii_lowercase().trim().ends_with(":spot"));
            prop_assert!(accelerators::all().iter().any(|a| a.base_name() == r.base_name()));
            // The pool id built from it is a valid node pool id.
            let id = resource_names::pool_id(&r.pool_prefix(), 0xbeef);
            prop_assert!(PoolId::parse(&id).is_ok(), "{}", id);
        }
    }

    #[test]
    fn name_parsers_never_panic(s in hostile_string()) {
        let _ = TeamId::parse(&s);
        let _ = ProjectId::parse(&s);
        let _ = ZoneName::parse(&s).map(|z| z.region().len());
        let _ = ClusterName::parse(&s);
        let _ = PoolId::parse(&s);
        let _ = ProfileId::parse(&s);
        let _ = OperationTarget::parse(&s);
        if let Ok(e) = Email::parse(&s) {
            let _ = e.log_id();
        }
        if let Err(e) = TeamId::parse(&s) {
            // The error quotes at most 80 characters of the input.
            prop_assert!(e.value.chars().count() <= 80);
        }
    }

    #[test]
    fn valid_names_round_trip_through_display(
        team in "[a-z][a-z0-9-]{2,39}",
        project in "[a-z][a-z0-9-]{4,28}[a-z0-9]",
        zone in "[a-z]{2,12}-[a-z][a-z0-9]{0,10}[0-9]-[a-z]",
        cluster in "[a-z]([-a-z0-9]{0,38}[a-z0-9])?",
        profile in "[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}",
        email in "[A-Za-z0-9._+-]{1,30}@[a-z0-9-]{1,20}(\\.[a-z]{2,6}){0,2}",
        target in "[!-~]{1,512}",
    ) {
        fn round_trip<T: std::fmt::Display + std::str::FromStr + PartialEq + std::fmt::Debug>(
            s: &str,
        ) -> Result<(), TestCaseError>
        where
            T::Err: std::fmt::Debug,
        {
            let v: T = s.parse().map_err(|e| TestCaseError::fail(format!("{s:?}: {e:?}")))?;
            prop_assert_eq!(v.to_string(), s);
            prop_assert_eq!(v.to_string().parse::<T>().ok(), Some(v));
            Ok(())
        }
        round_trip::<TeamId>(&team)?;
        round_trip::<ProjectId>(&project)?;
        round_trip::<ZoneName>(&zone)?;
        round_trip::<ClusterName>(&cluster)?;
        round_trip::<PoolId>(&cluster)?;
        round_trip::<ProfileId>(&profile)?;
        round_trip::<OperationTarget>(&target)?;
        // Emails are stored lower-cased: the round trip is of the lower-cased address.
        let e = Email::parse(&email).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(e.to_string(), email.to_ascii_lowercase());
        prop_assert_eq!(Email::parse(e.as_str()).ok(), Some(e));
    }

    /// Every name `up` derives fits its service's rule for every valid input.
    #[test]
    fn derived_cloud_names_fit_their_rules(
        project in "[a-z][a-z0-9-]{4,28}[a-z0-9]",
        zone in "[a-z]{2,12}-[a-z][a-z0-9]{0,10}[0-9]-[a-z]",
        cluster in "[a-z]([-a-z0-9]{0,38}[a-z0-9])?",
    ) {
        let n = ClusterNames::new(
            &ProjectId::parse(&project).unwrap(),
            &ZoneName::parse(&zone).unwrap(),
            &ClusterName::parse(&cluster).unwrap(),
        );
        for sa in [&n.node_sa_id, &n.build_sa_id] {
            prop_assert!((6..=30).contains(&sa.len()), "{}", sa);
            prop_assert!(ClusterName::parse(sa).is_ok(), "{}", sa);
        }
        for b in [&n.jobs_bucket, &n.builds_bucket, &n.state_bucket] {
            prop_assert!((3..=63).contains(&b.len()), "{}", b);
        }
        for g in [&n.network, &n.router, &n.nat, &n.repository] {
            prop_assert!(g.len() <= 63 && !g.ends_with('-'), "{}", g);
        }
        prop_assert_eq!(ClusterNames::new(
            &ProjectId::parse(&project).unwrap(),
            &ZoneName::parse(&zone).unwrap(),
            &ClusterName::parse(&cluster).unwrap(),
        ), n);
    }
}
