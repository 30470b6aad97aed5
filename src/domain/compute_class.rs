//! GKE custom compute classes for failover pairs: the class's name (derived from the
//! pair's spot pool), the node label and taint GKE requires on manually created node
//! pools that a class uses, and the GKE versions that support the class.
//!
//! Invariant: a [`ClassName`] is a valid Kubernetes object name and label value (a
//! DNS-1123 label of at most 63 characters) that does not begin with `gke` or
//! `autopilot` (names GKE reserves), and it is a pure function of the spot pool's id, so
//! `pool add`, `pool remove` and the pools' labels always agree on it.

use std::cmp::Ordering;
use std::fmt;

use super::pools::{PoolShape, Taint, TaintEffect};

/// The node label and taint key that ties nodes (and pods' node selectors) to a class.
pub const CLASS_KEY: &str = "cloud.google.com/compute-class";

/// The oldest GKE version with custom compute classes, `nodepools` priority rules and
/// active migration (About custom ComputeClasses: "available ... in version
/// 1.30.3-gke.1451000 and later"; no later minimum is given for
/// `activeMigration.optimizeRulePriority`).
pub const MIN_VERSION: GkeVersion = GkeVersion {
    major: 1,
    minor: 30,
    patch: 3,
    build: 1_451_000,
};

/// The name of the compute class of the failover pair whose spot pool is `spot_pool`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ClassName(String);

impl ClassName {
    /// `kinetic-{spot pool id}`: pool ids are GKE names of at most 40 characters
    /// (`^[a-z]([-a-z0-9]*[a-z0-9])?$`), so the class name has at most 48.
    pub fn for_pair(spot_pool: &str) -> ClassName {
        ClassName(format!("kinetic-{spot_pool}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `s` is a name GKE accepts for a custom class and as a label value.
    pub fn is_valid(s: &str) -> bool {
        (1..=63).contains(&s.len())
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && !s.ends_with('-')
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !s.starts_with("gke")
            && !s.starts_with("autopilot")
    }
}

impl fmt::Display for ClassName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The taint every node of a pool used by `class` carries (GKE's spelling, NO_SCHEDULE).
pub fn class_taint(class: &ClassName) -> Taint {
    Taint {
        key: CLASS_KEY.into(),
        value: class.to_string(),
        effect: TaintEffect::NoSchedule,
    }
}

/// Tie a pool of a failover pair to `class`: the node label and the taint GKE requires
/// of manually created node pools a class's `nodepools` rules name.
pub fn join_class(shape: &mut PoolShape, class: &ClassName) {
    shape.labels.insert(CLASS_KEY.into(), class.to_string());
    shape.taints.retain(|t| t.key != CLASS_KEY);
    shape.taints.push(class_taint(class));
}

pub use super::gke_version::GkeVersion;

impl GkeVersion {
    /// Whether this version runs custom compute classes with active migration.
    pub fn supports_compute_classes(&self) -> bool {
        self.cmp(&MIN_VERSION) != Ordering::Less
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::accelerators::testing::acc;
    use crate::domain::pools::{FailoverRole, shape};

    #[test]
    fn class_names_are_valid_and_follow_the_spot_pool() {
        let c = ClassName::for_pair("gpu-l4-1a2b");
        assert_eq!(c.as_str(), "kinetic-gpu-l4-1a2b");
        assert!(ClassName::is_valid(c.as_str()));
        let longest = format!("g{}", "a".repeat(39));
        assert!(ClassName::is_valid(ClassName::for_pair(&longest).as_str()));
        for bad in ["gke-x", "autopilot-x", "Upper", "x-", "", "a_b"] {
            assert!(!ClassName::is_valid(bad), "{bad}");
        }
    }

    #[test]
    fn joining_a_class_labels_and_taints_the_pool_once() {
        let mut s = shape(&acc("l4"), 0, false, None, Some(FailoverRole::Spot)).unwrap();
        let c = ClassName::for_pair("gpu-l4-1a2b");
        join_class(&mut s, &c);
        join_class(&mut s, &c);
        assert_eq!(s.labels[CLASS_KEY], "kinetic-gpu-l4-1a2b");
        assert_eq!(s.taints, vec![class_taint(&c)]);
    }

    #[test]
    fn versions_compare_as_gke_orders_them() {
        let v = |s| GkeVersion::parse(s).unwrap();
        assert_eq!(v("1.30.3-gke.1451000"), MIN_VERSION);
        assert_eq!(MIN_VERSION.to_string(), "1.30.3-gke.1451000");
        assert!(v("1.30.3-gke.1451000").supports_compute_classes());
        assert!(v("1.33.5-gke.1080000").supports_compute_classes());
        assert!(v("1.31.0-gke.1").supports_compute_classes());
        assert!(!v("1.30.3-gke.1450999").supports_compute_classes());
        assert!(!v("1.29.15-gke.2000000").supports_compute_classes());
        assert!(!v("v1.30.2").supports_compute_classes());
        for bad in ["", "1.30", "1.30.x-gke.1", "1.30.3-gke.", "1.2.3.4"] {
            assert_eq!(GkeVersion::parse(bad), None, "{bad}");
        }
    }
}
