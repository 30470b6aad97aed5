//! GKE's version numbers (`1.30.3-gke.1451000`), parsed and ordered: what the features
//! that need a minimum GKE (compute classes, flex-start, GPU sharing) compare against.
//!
//! Invariant: versions order by major, minor, patch, then the `-gke.` build number; the
//! text form reads back to the same version.

use std::fmt;

/// A GKE version, `1.30.3-gke.1451000` (`build` is the number after `-gke.`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct GkeVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
    pub build: u64,
}

impl GkeVersion {
    /// Parse `1.30.3-gke.1451000` (a leading `v` and a missing `-gke.N` are accepted:
    /// `1.30.3` is read as build 0); `None` for anything else.
    pub fn parse(s: &str) -> Option<GkeVersion> {
        let s = s.trim().trim_start_matches('v');
        let (semver, build) = match s.split_once("-gke.") {
            Some((v, b)) => (v, b.parse().ok()?),
            None => (s, 0),
        };
        let mut parts = semver.split('.').map(|p| p.parse::<u32>().ok());
        let (major, minor, patch) = (parts.next()??, parts.next()??, parts.next()??);
        if parts.next().is_some() {
            return None;
        }
        Some(GkeVersion {
            major,
            minor,
            patch,
            build,
        })
    }
}

impl fmt::Display for GkeVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}-gke.{}",
            self.major, self.minor, self.patch, self.build
        )
    }
}
