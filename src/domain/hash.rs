//! A stable 64-bit hash (FNV-1a) for names, fingerprints and page tokens.
//!
//! Invariant: the value depends only on the bytes, never on the process, platform or
//! Rust version (unlike std's `DefaultHasher`), so anything derived from it can be stored.

const OFFSET: u64 = 0xcbf29ce484222325;
const PRIME: u64 = 0x100000001b3;

/// FNV-1a over `bytes`.
pub fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes
        .into_iter()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_values() {
        // Reference vectors of FNV-1a 64.
        assert_eq!(super::fnv1a(*b""), 0xcbf29ce484222325);
        assert_eq!(super::fnv1a(*b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(super::fnv1a("foobar".bytes()), 0x85944171f73967e8);
    }
}
