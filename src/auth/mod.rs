//! Authentication: who is calling, as asserted by Google Cloud Identity-Aware Proxy.
//!
//! **Invariant: no [`Identity`] is ever produced without a verified ES256 signature
//! from a key in our cached JWKS.** [`IapVerifier::verify`] is the only constructor path
//! that yields an identity from a request, and it:
//!
//! * accepts only `alg: ES256` (checked on the raw header before a key is chosen, so
//!   `none`, `HS256` & co. are rejected and an HMAC key is never derived from a public key);
//! * takes keys only from the configured JWKS URL (never from `jwk`/`jku`/`x5u` in the token);
//! * enforces `iss`, `aud`, `exp`, `nbf` and `iat` with a configurable leeway (30 s default);
//! * requires the `email` claim and returns it as an [`crate::domain::Email`]: printable
//!   ASCII, lower-cased by ASCII rules only (invisible, bidi and other non-ASCII
//!   characters are refused, never folded);
//! * reads exactly one assertion header ([`Authenticator`] refuses a request with two);
//! * never makes a token signed with a cached key wait for the key server: a stale set is
//!   served while it is refreshed in the background (see `jwks`).
//!
//! Errors are [`AuthError`]s with stable [`AuthError::reason`] codes. Every variant is a
//! 401-class rejection except [`AuthError::KeysUnavailable`] (keys could not be fetched),
//! which HTTP layers should map to **503** ([`AuthError::is_unavailable`]).
//!
//! Process setup: reqwest is built without a default TLS crypto provider, so call
//! [`install_tls_provider`] before building the `reqwest::Client` handed to
//! [`IapVerifier::new`]. The JWT crypto provider is selected by [`IapVerifier::new`]
//! itself via [`install_crypto_provider`].
//!
//! [`Authenticator`] turns a request's headers into a [`Principal`] for every HTTP
//! surface (the API and the console), so both identify callers the same way.

mod caller;
mod error;
mod iap;
mod jwks;
pub mod limits;

pub use caller::{Authenticator, DEV_DEFAULT_USER, DEV_USER_HEADER, Mode, Principal, Rejected};

pub use error::AuthError;
pub use iap::{
    DEFAULT_LEEWAY, GOOGLE_IAP_JWKS_URL, IAP_HEADER, IAP_ISSUER, IapConfig, IapVerifier, Identity,
};
pub use jwks::{JwksClock, JwksPolicy};

/// Select jsonwebtoken's RustCrypto backend as the process-wide JWT crypto provider.
///
/// With only the `rust_crypto` feature enabled, jsonwebtoken would pick it on its own;
/// installing it explicitly keeps us working if another crate in the build ever turns on
/// `aws_lc_rs` too (then nothing would be chosen and decoding would panic). Idempotent:
/// a provider that is already installed is left in place.
pub fn install_crypto_provider() {
    let _already_installed = jsonwebtoken::crypto::CryptoProvider::install_default(
        &jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER,
    );
}

/// Install ring as rustls' process-wide crypto provider (needed before building a
/// `reqwest::Client`, since reqwest is compiled with `rustls-no-provider`).
/// Idempotent: an already-installed provider is kept.
pub fn install_tls_provider() {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
}
