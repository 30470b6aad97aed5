//! A cluster's diagnosis as clients see it (`POST .../clusters/{c}:diagnose`, Kinetic's
//! `doctor` for a shared cluster): one check per thing `up` and pool creation should have
//! made, each with a status, a message with the figures it saw and a concrete fix.
//!
//! Invariant: `checks` lists every check id of [`CHECK_IDS`] exactly once, in that order,
//! whatever happened (a check that could not finish in time is WARN, never left out), and
//! `summary`'s counts are the counts of `checks` by status.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Every check id, in the order they are reported.
pub const CHECK_IDS: [&str; 17] = [
    "apis",
    "service-accounts",
    "buckets",
    "repository",
    "network",
    "nat",
    "gke-cluster",
    "version-skew",
    "node-pools",
    "lws",
    "workload-identity",
    "nvidia-driver",
    "nodes",
    "pending-pods",
    "warning-events",
    "quota",
    "access",
];

/// OK, WARN or FAIL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum CheckStatus {
    Ok,
    Warn,
    Fail,
}

/// One check of a diagnosis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosisCheck {
    /// Stable id (one of `apis`, `service-accounts`, `buckets`, `repository`, `network`,
    /// `nat`, `gke-cluster`, `version-skew`, `node-pools`, `lws`, `workload-identity`,
    /// `nvidia-driver`, `nodes`, `pending-pods`, `warning-events`, `quota`, `access`).
    #[schema(example = "nat")]
    pub id: String,
    pub status: CheckStatus,
    /// What was seen, with its figures.
    #[schema(example = "router kn-kc-router has no Cloud NAT kn-kc-nat (0 NATs)")]
    pub message: String,
    /// What to run to repair it (empty when OK).
    #[schema(
        example = "run up again (PUT /v1/projects/p/zones/us-central1-a/clusters/kc), which re-creates the NAT"
    )]
    pub fix: String,
}

/// The overall verdict: HEALTHY (all OK), DEGRADED (some WARN, no FAIL), UNHEALTHY (a FAIL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Verdict {
    Healthy,
    Degraded,
    Unhealthy,
}

/// Counts per status and the verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosisSummary {
    pub ok: u32,
    pub warn: u32,
    pub fail: u32,
    pub verdict: Verdict,
    /// One sentence.
    #[schema(example = "15 OK, 0 WARN, 1 FAIL: nat")]
    pub text: String,
}

/// `POST .../clusters/{cluster}:diagnose`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Diagnosis {
    /// `projects/{project}/zones/{zone}/clusters/{cluster}`.
    pub name: String,
    /// When the checks started (RFC 3339).
    #[schema(format = DateTime)]
    pub check_time: String,
    pub checks: Vec<DiagnosisCheck>,
    pub summary: DiagnosisSummary,
}

impl DiagnosisSummary {
    /// The counts and verdict of `checks`.
    pub fn of(checks: &[DiagnosisCheck]) -> DiagnosisSummary {
        let count = |s: CheckStatus| {
            u32::try_from(checks.iter().filter(|c| c.status == s).count()).unwrap_or(u32::MAX)
        };
        let (ok, warn, fail) = (
            count(CheckStatus::Ok),
            count(CheckStatus::Warn),
            count(CheckStatus::Fail),
        );
        let verdict = if fail > 0 {
            Verdict::Unhealthy
        } else if warn > 0 {
            Verdict::Degraded
        } else {
            Verdict::Healthy
        };
        let ids = |s: CheckStatus| {
            checks
                .iter()
                .filter(|c| c.status == s)
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut text = format!("{ok} OK, {warn} WARN, {fail} FAIL");
        for (n, s, word) in [
            (fail, CheckStatus::Fail, "FAIL"),
            (warn, CheckStatus::Warn, "WARN"),
        ] {
            if n > 0 {
                text.push_str(&format!("; {word}: {}", ids(s)));
            }
        }
        DiagnosisSummary {
            ok,
            warn,
            fail,
            verdict,
            text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, status: CheckStatus) -> DiagnosisCheck {
        DiagnosisCheck {
            id: id.into(),
            status,
            message: String::new(),
            fix: String::new(),
        }
    }

    #[test]
    fn summary_counts_and_verdict() {
        let all_ok = [check("a", CheckStatus::Ok), check("b", CheckStatus::Ok)];
        let s = DiagnosisSummary::of(&all_ok);
        assert_eq!(
            (s.ok, s.warn, s.fail, s.verdict),
            (2, 0, 0, Verdict::Healthy)
        );
        let mixed = [
            check("a", CheckStatus::Warn),
            check("b", CheckStatus::Fail),
            check("c", CheckStatus::Ok),
        ];
        let s = DiagnosisSummary::of(&mixed);
        assert_eq!(s.verdict, Verdict::Unhealthy);
        assert_eq!(s.text, "1 OK, 1 WARN, 1 FAIL; FAIL: b; WARN: a");
        let s = DiagnosisSummary::of(&mixed[..1]);
        assert_eq!(s.verdict, Verdict::Degraded);
        assert_eq!(
            serde_json::to_value(CheckStatus::Warn).unwrap(),
            serde_json::json!("WARN")
        );
    }
}
