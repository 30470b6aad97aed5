//! The AIP-160 subset the lists take: `key OP value` terms joined by ` AND `, where OP is
//! `=`, `>=`, `>`, `<=` or `<` and a value may be quoted (`target="a/b"`). Each list
//! maps the terms onto its own filter (the operations list, the audit trail).
//!
//! Invariant: a filter either splits into well-formed terms or is refused with the
//! list's own INVALID_FILTER error; OR is refused rather than read as AND. A value is
//! cut to 600 characters (no name kineticd keeps is longer) before any list sees it.

use super::{Error, Result};

/// A term's comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ge,
    Gt,
    Le,
    Lt,
}

impl Op {
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
        }
    }
}

/// One `key OP value` term, the value unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term<'a> {
    pub key: &'a str,
    pub op: Op,
    pub value: String,
}

/// Split `filter` into its terms; `error` makes the list's refusal from what was wrong.
pub fn terms<'a>(filter: &'a str, error: impl Fn(String) -> Error) -> Result<Vec<Term<'a>>> {
    if filter.split_whitespace().any(|w| w == "OR") {
        return Err(error(
            "terms are joined by AND; OR is not supported (send one request per alternative)"
                .into(),
        ));
    }
    filter
        .split(" AND ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|term| {
            let short: String = term.chars().take(80).collect();
            let at = term
                .find(['=', '<', '>'])
                .ok_or_else(|| error(format!("{short:?} is not key=value")))?;
            let (key, rest) = term.split_at(at);
            let (op, v) = match (rest.as_bytes()[0], rest.as_bytes().get(1)) {
                (b'>', Some(b'=')) => (Op::Ge, &rest[2..]),
                (b'<', Some(b'=')) => (Op::Le, &rest[2..]),
                (b'>', _) => (Op::Gt, &rest[1..]),
                (b'<', _) => (Op::Lt, &rest[1..]),
                _ => (Op::Eq, &rest[1..]),
            };
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            Ok(Term {
                key: key.trim(),
                op,
                value: v.chars().take(600).collect(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(why: String) -> Error {
        Error::invalid("INVALID_FILTER", why)
    }

    #[test]
    fn terms_split_on_and_with_their_comparison() {
        let t = terms(
            r#"type=MEMBER_ADDED AND time >= "2026-12-01T00:00:00Z" AND target="a=b" AND time<x"#,
            bad,
        )
        .unwrap();
        let got: Vec<(&str, Op, &str)> =
            t.iter().map(|t| (t.key, t.op, t.value.as_str())).collect();
        assert_eq!(
            got,
            vec![
                ("type", Op::Eq, "MEMBER_ADDED"),
                ("time", Op::Ge, "2026-12-01T00:00:00Z"),
                ("target", Op::Eq, "a=b"),
                ("time", Op::Lt, "x"),
            ]
        );
        assert!(terms("", bad).unwrap().is_empty());
        for b in ["nonsense", "a=1 OR b=2"] {
            assert_eq!(terms(b, bad).unwrap_err().reason, "INVALID_FILTER", "{b}");
        }
    }
}
