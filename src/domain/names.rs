//! Validated names (parse, don't validate). Each newtype can only hold a value that
//! satisfies its rule; construction is the only place the rule is checked.

use std::fmt;
use std::ops::RangeInclusive;

/// Why a name was refused; the message says the rule so a caller can fix the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {value:?} is invalid: {rule}")]
pub struct NameError {
    pub kind: &'static str,
    pub value: String,
    pub rule: &'static str,
}

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `^[a-z][-a-z0-9]*$` with a length in `len`.
fn lower_hyphenated(s: &str, len: RangeInclusive<usize>) -> bool {
    len.contains(&s.len())
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
}

/// `^[a-z]` then `[allowed]{min..=max}` middle chars, optional last-char rule.
fn check(
    kind: &'static str,
    rule: &'static str,
    value: &str,
    ok: impl Fn(&str) -> bool,
) -> Result<String, NameError> {
    if ok(value) {
        Ok(value.to_owned())
    } else {
        Err(NameError {
            kind,
            value: value.chars().take(80).collect(),
            rule,
        })
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $ty:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $ty(String);

        impl $ty {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::str::FromStr for $ty {
            type Err = NameError;
            fn from_str(s: &str) -> Result<Self, NameError> {
                Self::parse(s)
            }
        }
    };
}

name_type!(
    /// A team id: `^[a-z][a-z0-9-]{2,39}$`.
    TeamId
);
impl TeamId {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "team id",
            "must match ^[a-z][a-z0-9-]{2,39}$ (3-40 characters: lowercase letters, digits, hyphens; starting with a letter)",
            s,
            |s| lower_hyphenated(s, 3..=40),
        )
        .map(Self)
    }
}

name_type!(
    /// A GCP project id: 6-30 characters, lowercase letters, digits and hyphens,
    /// starting with a letter and not ending with a hyphen.
    ProjectId
);
impl ProjectId {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "project id",
            "must be 6-30 characters of lowercase letters, digits and hyphens, start with a letter and not end with a hyphen",
            s,
            |s| lower_hyphenated(s, 6..=30) && !s.ends_with('-'),
        )
        .map(Self)
    }
}

name_type!(
    /// A Compute zone such as `us-central1-a`: `{region}-{letter}` where the region is
    /// `{area}-{location}{digit}`.
    ZoneName
);
impl ZoneName {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "zone",
            "must look like us-central1-a (region, hyphen, one letter)",
            s,
            |s| {
                let parts: Vec<&str> = s.split('-').collect();
                parts.len() == 3
                    && s.len() <= 63
                    && !parts[0].is_empty()
                    && parts[0].chars().all(|c| c.is_ascii_lowercase())
                    && parts[1].len() >= 2
                    && parts[1].chars().all(is_lower_alnum)
                    && parts[1]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_lowercase())
                    && parts[1].chars().last().is_some_and(|c| c.is_ascii_digit())
                    && parts[2].len() == 1
                    && parts[2].chars().all(|c| c.is_ascii_lowercase())
            },
        )
        .map(Self)
    }

    /// The region holding this zone (`us-central1-a` -> `us-central1`).
    pub fn region(&self) -> &str {
        self.0.rsplit_once('-').map(|(r, _)| r).unwrap_or(&self.0)
    }
}

/// `^[a-z]([-a-z0-9]*[a-z0-9])?$`, at most `max` characters.
fn gke_name(s: &str, max: usize) -> bool {
    lower_hyphenated(s, 1..=max) && !s.ends_with('-')
}

name_type!(
    /// A GKE cluster name: at most 40 characters, `^[a-z]([-a-z0-9]*[a-z0-9])?$`.
    ClusterName
);
impl ClusterName {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "cluster name",
            "must be at most 40 characters matching ^[a-z]([-a-z0-9]*[a-z0-9])?$",
            s,
            |s| gke_name(s, 40),
        )
        .map(Self)
    }
}

name_type!(
    /// A GKE node pool name: at most 40 characters, same alphabet as clusters.
    PoolId
);
impl PoolId {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "node pool id",
            "must be at most 40 characters matching ^[a-z]([-a-z0-9]*[a-z0-9])?$",
            s,
            |s| gke_name(s, 40),
        )
        .map(Self)
    }
}

name_type!(
    /// A profile id: `^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$`.
    ProfileId
);
impl ProfileId {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "profile id",
            "must match ^[a-zA-Z0-9][a-zA-Z0-9_-]{0,63}$",
            s,
            |s| {
                (1..=64).contains(&s.len())
                    && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            },
        )
        .map(Self)
    }
}

name_type!(
    /// A person's email address: printable ASCII only, lower-cased by ASCII rules. This
    /// is the one address rule: IAP tokens, the dev identity header, member paths, the
    /// console and the admin list all parse through [`Email::parse`].
    ///
    /// Accepted grammar, after trimming ASCII whitespace (space, tab, CR, LF, form feed)
    /// at both ends and mapping `A-Z` to `a-z` (nothing else is mapped):
    ///
    /// ```text
    /// address = local "@" domain      ; at most 254 characters in all
    /// local   = 1*64 lchar
    /// lchar   = a-z / 0-9 / "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "."
    ///         / "=" / "?" / "^" / "_" / "`" / "{" / "|" / "}" / "~"
    /// domain  = label *("." label)    ; at most 253 characters; one label (`localhost`) is fine
    /// label   = 1*63 (a-z / 0-9 / "-")
    /// ```
    ///
    /// The local part is RFC 5322's dot-atom alphabet without `/` (addresses are URL path
    /// segments); dots may stand anywhere in it, as before (a leniency, not a hazard).
    /// Quoted local parts, comments, address literals and internationalised addresses are
    /// refused. So is anything that is not printable ASCII: invisible characters
    /// (zero-width space and joiners, BOM), bidirectional controls (right-to-left
    /// override, isolates, marks), non-ASCII look-alikes (Cyrillic `а`, fullwidth `＠`)
    /// and characters that Unicode case mapping would turn into ASCII (the Kelvin sign
    /// U+212A is not `k`, U+0130 is not `i`): refused, never folded, so one address has
    /// one spelling and it reads as what it is.
    Email
);

/// Why an address with a character outside printable ASCII (or with a space) is refused.
const EMAIL_NOT_ASCII: &str = "must be printable ASCII without spaces: invisible, right-to-left, \
     look-alike and other non-ASCII characters are refused, not folded (write it like \
     alice@example.com)";
/// Why any other malformed address is refused.
const EMAIL_RULE: &str = "must be a printable-ASCII address like alice@example.com: one @, a \
     local part of at most 64 letters, digits and !#$%&'*+-.=?^_`{|}~, and a domain of \
     dot-separated labels of letters, digits and hyphens";

/// The grammar of [`Email`] on an already lower-cased address.
fn is_email(s: &str) -> bool {
    let local_char =
        |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.=?^_`{|}~".contains(&b);
    let label_char = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    s.len() <= 254
        && (1..=64).contains(&local.len())
        && local.bytes().all(local_char)
        && domain.len() <= 253
        && domain
            .split('.')
            .all(|l| (1..=63).contains(&l.len()) && l.bytes().all(label_char))
}

impl Email {
    /// The stable id under which this person appears in logs: `u-` and the first 16 hex
    /// digits of the SHA-256 of the (lower-cased) address. The same person always maps
    /// to the same id; the address itself is never written (logs leave the cluster).
    pub fn log_id(&self) -> String {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(self.as_str().as_bytes());
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("u-{hex}")
    }

    /// Parse an address by the grammar above; the refusal says which rule it broke (the
    /// value is quoted escaped, so invisible and bidi characters show as `\u{..}`).
    pub fn parse(s: &str) -> Result<Self, NameError> {
        let trimmed = s.trim_matches(|c: char| c.is_ascii_whitespace());
        let rule = if trimmed.bytes().all(|b| b.is_ascii_graphic()) {
            EMAIL_RULE
        } else {
            EMAIL_NOT_ASCII
        };
        check("email", rule, &trimmed.to_ascii_lowercase(), is_email).map(Self)
    }
}

name_type!(
    /// An operation's `metadata.target`: a resource name such as
    /// `projects/p/zones/z/clusters/c`, or a test workflow's key: 1-512 printable ASCII
    /// characters without spaces.
    OperationTarget
);
impl OperationTarget {
    pub fn parse(s: &str) -> Result<Self, NameError> {
        check(
            "target",
            "must be 1-512 printable ASCII characters without spaces, like projects/p/zones/z/clusters/c",
            s,
            |s| (1..=512).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_graphic()),
        )
        .map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ids_are_stable_and_hide_the_address() {
        let id = Email::parse("Alice@Example.com").unwrap().log_id();
        assert_eq!(id, Email::parse("alice@example.com").unwrap().log_id());
        assert_ne!(id, Email::parse("bob@example.com").unwrap().log_id());
        assert!(id.starts_with("u-") && id.len() == 18, "{id}");
        assert!(!id.contains("alice"));
    }

    #[test]
    fn team_ids() {
        for ok in ["abc", "ml-research", "a23", &"a".repeat(40)] {
            assert!(TeamId::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["ab", "1abc", "Abc", "ab_c", "", &"a".repeat(41)] {
            assert!(TeamId::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn zones_and_regions() {
        let z = ZoneName::parse("us-central1-a").unwrap();
        assert_eq!(z.region(), "us-central1");
        assert_eq!(
            ZoneName::parse("europe-west4-b").unwrap().region(),
            "europe-west4"
        );
        for bad in [
            "us-central1",
            "uscentral1-a",
            "us-central-a",
            "us-central1-ab",
            "",
        ] {
            assert!(ZoneName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cluster_names() {
        assert!(ClusterName::parse("kinetic-cluster").is_ok());
        assert!(ClusterName::parse("a").is_ok());
        assert!(ClusterName::parse(&"a".repeat(40)).is_ok());
        for bad in ["", "A", "a-", "-a", "1a", &"a".repeat(41), "a_b"] {
            assert!(ClusterName::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn projects_profiles_emails() {
        assert!(ProjectId::parse("my-gcp-project").is_ok());
        assert!(ProjectId::parse("short").is_err());
        assert!(ProjectId::parse("my-project-").is_err());
        assert!(ProfileId::parse("Research_1").is_ok());
        assert!(ProfileId::parse("_x").is_err());
        assert_eq!(
            Email::parse("Alice@Example.COM").unwrap().as_str(),
            "alice@example.com"
        );
        assert!(Email::parse("nobody").is_err());
        assert!(Email::parse("a b@x").is_err());
        assert!(Email::parse("a\0b@x").is_err());
        assert!(OperationTarget::parse("projects/p/zones/z/clusters/c").is_ok());
        for bad in ["", "a b", "a\0b", &"t".repeat(513)] {
            assert!(OperationTarget::parse(bad).is_err(), "{bad:?}");
        }
    }

    /// Issue 24: only printable-ASCII addresses, lower-cased by ASCII rules. Unicode
    /// case folding made the Kelvin sign (U+212A) act as `k`; invisible, right-to-left
    /// and look-alike characters made addresses that read like someone else's.
    #[test]
    fn emails_are_printable_ascii_and_lowercased_by_ascii_rules() {
        for (raw, want) in [
            ("Alice@Example.COM", "alice@example.com"),
            ("  bob@example.com\t", "bob@example.com"),
            ("dev@localhost", "dev@localhost"),
            ("o'brien+ml@sub.example.co", "o'brien+ml@sub.example.co"),
            ("a.b_c-d@x-y.example", "a.b_c-d@x-y.example"),
            (
                "robot@my-project.iam.gserviceaccount.com",
                "robot@my-project.iam.gserviceaccount.com",
            ),
        ] {
            assert_eq!(
                Email::parse(raw).map(|e| e.to_string()),
                Ok(want.to_owned()),
                "{raw:?}"
            );
        }
        let refused = [
            "\u{212A}evin@example.com", // Kelvin sign: Unicode lower-cases it to `k`
            "\u{212a}evin@example.com",
            "ali\u{200B}ce@example.com", // zero-width space
            "alice\u{200D}@example.com", // zero-width joiner
            "\u{FEFF}alice@example.com", // byte-order mark / zero-width no-break space
            "alice@\u{202E}moc.elpmaxe", // right-to-left override
            "\u{2067}alice@example.com", // right-to-left isolate
            "alice\u{200F}@example.com", // right-to-left mark
            "\u{0430}lice@example.com",  // Cyrillic a
            "alice@ex\u{0430}mple.com",
            "alice\u{FF20}example.com",  // fullwidth @
            "\u{00A0}alice@example.com", // no-break space (not trimmed: not ASCII)
            "alic\u{00E9}@example.com",  // accented letter
            "ALICE@EXAMPLE.CO\u{0130}",  // dotted capital I: Unicode lower-cases it to i + U+0307
            "alice@example.com\u{0}",
            "alice@exa mple.com",
            "a/b@example.com",
            "a\"b@example.com",
            "a;b@example.com",
            "a@b@example.com",
            "alice@",
            "@example.com",
            "alice@.example.com",
            "alice@example.com.",
            "alice@example..com",
            "alice@exam_ple.com",
        ];
        for raw in refused {
            let err = Email::parse(raw).expect_err(raw);
            let msg = err.to_string();
            assert!(msg.contains("ASCII"), "{raw:?}: {msg}");
            // The refusal quotes the value escaped: no invisible or bidi character is
            // echoed raw.
            assert!(!msg.chars().any(|c| matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')), "{msg:?}");
        }
        let long_local = format!("{}@example.com", "a".repeat(65));
        assert!(Email::parse(&long_local).is_err());
        let long = format!("a@{}.com", "b".repeat(250));
        assert!(Email::parse(&long).is_err());
    }
}
