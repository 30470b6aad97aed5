//! IAM policy semantics shared by the simulated IAM (service-account policies) and
//! Resource Manager (project policies): validation, normalisation, etags.
//!
//! Invariant: a stored policy's etag changes on every successful set and only then; a
//! set carrying another etag is refused with 409 ABORTED and changes nothing; an empty
//! etag writes unconditionally (last writer wins), as Google does.

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;

use crate::cloud::gcp::types::iam::{Binding, Policy, SetIamPolicyRequest};
use crate::sim::error::{Flavor, SimError};

const F: Flavor = Flavor::Aip193;

/// A policy with its revision (the etag is derived from it).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Stored {
    pub policy: Policy,
    pub rev: u64,
}

/// Google's etag for a resource that never had a policy is `ACAB`; later ones are
/// base64 of a protobuf varint field (`CAE=` for revision 1), as Storage shows them.
pub fn etag(rev: u64) -> String {
    if rev == 0 {
        return "ACAB".to_owned();
    }
    let mut bytes = vec![0x08];
    let mut v = rev;
    while v >= 0x80 {
        bytes.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    bytes.push(v as u8);
    STANDARD.encode(bytes)
}

impl Stored {
    /// A policy at revision `rev` holding `bindings` (version 1, like a fresh resource).
    pub fn new(bindings: Vec<Binding>, rev: u64) -> Stored {
        Stored {
            policy: Policy {
                version: Some(1),
                bindings,
                audit_configs: Vec::new(),
                etag: etag(rev),
            },
            rev,
        }
    }

    /// Apply a setIamPolicy request after the etag check; `known_account(email)` says
    /// whether a `serviceAccount:` member that IAM manages exists. Returns the new policy.
    pub fn set(
        &mut self,
        req: SetIamPolicyRequest,
        known_account: impl Fn(&str) -> bool,
    ) -> Result<Policy, SimError> {
        let incoming = req.policy;
        if !incoming.etag.is_empty() && incoming.etag != self.policy.etag {
            return Err(SimError::aborted(
                F,
                "There were concurrent policy changes. Please retry the whole read-modify-write \
                 with exponential backoff. The request's ETag '"
                    .to_owned()
                    + &incoming.etag
                    + "' did not match the current policy's ETag '"
                    + &self.policy.etag
                    + "'.",
            ));
        }
        let bindings = validate(&incoming, known_account)?;
        self.rev += 1;
        // Without an update mask only bindings and etag change (auditConfigs stay).
        let audit_configs = match req.update_mask.as_deref() {
            Some(mask) if mask.split(',').any(|m| m.trim() == "auditConfigs") => {
                incoming.audit_configs
            }
            _ => std::mem::take(&mut self.policy.audit_configs),
        };
        self.policy = Policy {
            version: Some(match incoming.version {
                Some(3) => 3,
                _ => 1,
            }),
            bindings,
            audit_configs,
            etag: etag(self.rev),
        };
        Ok(self.policy.clone())
    }

    /// Replace `serviceAccount:{email}` by the `deleted:` form Google shows after the
    /// account is deleted.
    pub fn mark_deleted(&mut self, email: &str, unique_id: &str) {
        for b in &mut self.policy.bindings {
            mark_deleted_members(&mut b.members, email, unique_id);
        }
    }
}

/// Replace `serviceAccount:{email}` among `members` by its `deleted:` form (project and
/// bucket policies alike).
pub fn mark_deleted_members(members: &mut [String], email: &str, unique_id: &str) {
    let live = format!("serviceAccount:{email}");
    for m in members.iter_mut().filter(|m| **m == live) {
        *m = format!("deleted:serviceAccount:{email}?uid={unique_id}");
    }
}

const MEMBER_PREFIXES: [&str; 9] = [
    "user:",
    "serviceAccount:",
    "group:",
    "domain:",
    "principal:",
    "principalSet:",
    "deleted:user:",
    "deleted:serviceAccount:",
    "deleted:group:",
];

fn valid_role(role: &str) -> bool {
    let custom = |scope: &str| {
        role.strip_prefix(scope)
            .and_then(|r| r.split_once("/roles/"))
            .is_some_and(|(owner, name)| !owner.is_empty() && !name.is_empty())
    };
    role.strip_prefix("roles/").is_some_and(|r| !r.is_empty())
        || custom("projects/")
        || custom("organizations/")
}

/// Check a policy as Google does and return its bindings normalised: one binding per
/// (role, condition), members deduplicated and sorted, empty bindings dropped.
fn validate(p: &Policy, known_account: impl Fn(&str) -> bool) -> Result<Vec<Binding>, SimError> {
    let version = p.version.unwrap_or(1);
    if ![0, 1, 3].contains(&version) {
        return Err(SimError::invalid(
            F,
            format!("Invalid policy version {version}: the valid versions are 1 and 3."),
        ));
    }
    let mut out: Vec<Binding> = Vec::new();
    for b in &p.bindings {
        if !valid_role(&b.role) {
            return Err(SimError::invalid(
                F,
                format!(
                    "Role ({}) does not exist in the resource's hierarchy.",
                    b.role
                ),
            ));
        }
        if b.condition.is_some() && version != 3 {
            return Err(SimError::invalid(
                F,
                "Policy version 3 is required for policies with conditional role bindings.",
            ));
        }
        for m in &b.members {
            if m != "allUsers"
                && m != "allAuthenticatedUsers"
                && !MEMBER_PREFIXES
                    .iter()
                    .any(|pre| m.len() > pre.len() && m.starts_with(pre))
            {
                return Err(SimError::invalid(
                    F,
                    format!("Invalid member {m:?} in the policy."),
                ));
            }
            if let Some(email) = m.strip_prefix("serviceAccount:")
                && email.ends_with(".iam.gserviceaccount.com")
                && !known_account(email)
            {
                return Err(SimError::invalid(
                    F,
                    format!("Service account {email} does not exist."),
                ));
            }
        }
        match out
            .iter_mut()
            .find(|o| o.role == b.role && o.condition == b.condition)
        {
            Some(o) => o.members.extend(b.members.iter().cloned()),
            None => out.push(b.clone()),
        }
    }
    for b in &mut out {
        let set: BTreeSet<String> = b.members.drain(..).collect();
        b.members = set.into_iter().collect();
    }
    out.retain(|b| !b.members.is_empty());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etags() {
        assert_eq!(etag(0), "ACAB");
        assert_eq!(etag(1), "CAE=");
        assert_eq!(etag(2), "CAI=");
        assert_ne!(etag(300), etag(301));
    }

    #[test]
    fn roles() {
        let cases = [
            ("roles/owner", true),
            ("projects/p/roles/custom", true),
            ("owner", false),
            ("roles/", false),
        ];
        for (role, valid) in cases {
            assert_eq!(valid_role(role), valid, "{role}");
        }
    }
}
