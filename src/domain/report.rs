//! How an error is told to a person: the error and every source below it, on one line.
//!
//! Invariant: [`error_chain`] names each distinct message once, outermost first,
//! `: `-separated (a source whose text its outer error already contains is skipped), so
//! a connection error's real cause, often several sources down, is never lost.

/// An error and its sources, `: `-separated.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct E {
        text: &'static str,
        #[source]
        source: Option<Box<E>>,
    }

    fn e(text: &'static str, source: Option<E>) -> E {
        E {
            text,
            source: source.map(Box::new),
        }
    }

    #[test]
    fn sources_once_each() {
        let inner = e("connection refused", None);
        let mid = e("error sending request: connection refused", Some(inner));
        let outer = e("fetch failed", Some(mid));
        assert_eq!(
            error_chain(&outer),
            "fetch failed: error sending request: connection refused"
        );
        assert_eq!(error_chain(&e("alone", None)), "alone");
    }
}
