//! The quota check: for each recorded accelerator pool, the region's quota of the metric
//! Compute charges it to ([`crate::domain::quota::metric`]): FAIL when the pool cannot
//! start its minimum, WARN when it cannot grow to its maximum or the metric is 80% used.
//!
//! Invariant: a pure function of the shared reads; the judgement ([`quota_verdict`]) is
//! a plain function of numbers, unit-tested here. Without the node list a pool is taken
//! to be at its minimum (never a FAIL from a read that failed).

use std::collections::{BTreeMap, BTreeSet};

use crate::cloud::gcp::types::container::NodePool as GkePool;
use crate::domain::accelerators::{self, Choice};
use crate::domain::quota;
use crate::model::diagnose::{CheckStatus, DiagnosisCheck};

use super::{Read, Shared, check, ok};

/// Quota use at or above this share of the limit is a warning.
const QUOTA_WARN_SHARE: f64 = 0.8;

/// What a pool's quota metric allows: (status, why).
pub fn quota_verdict(
    limit: f64,
    usage: f64,
    to_min: u64,
    to_max: u64,
) -> (CheckStatus, &'static str) {
    let headroom = (limit - usage).max(0.0);
    if to_min as f64 > headroom {
        (CheckStatus::Fail, "its minimum cannot start")
    } else if to_max as f64 > headroom {
        (CheckStatus::Warn, "it cannot grow to its maximum")
    } else if limit <= 0.0 || usage / limit >= QUOTA_WARN_SHARE {
        (CheckStatus::Warn, "the metric is nearly used up")
    } else {
        (CheckStatus::Ok, "room to grow to its maximum")
    }
}

pub fn quota(s: &Shared) -> Vec<DiagnosisCheck> {
    const ID: &str = "quota";
    let Read::Found(region) = &s.region else {
        return vec![s.unread(ID, &format!("region {}", s.n.region), &s.region)];
    };
    let gke: BTreeMap<&str, &GkePool> = s
        .gke
        .found()
        .map(|c| c.node_pools.iter().map(|p| (p.name.as_str(), p)).collect())
        .unwrap_or_default();
    let mut nodes_of: BTreeMap<&str, i64> = BTreeMap::new();
    if let Read::Found(nodes) = &s.nodes {
        for n in nodes {
            if let Some(p) = n.info.pool.as_deref() {
                *nodes_of.entry(p).or_default() += 1;
            }
        }
    }
    let mut worst = CheckStatus::Ok;
    let mut lines = Vec::new();
    let mut fixes = BTreeSet::new();
    for rec in &s.records {
        let Ok(Choice::Accelerator(acc)) = accelerators::parse(&rec.spec.accelerator) else {
            continue;
        };
        let Some(metric) = quota::metric(&acc, rec.spec.spot) else {
            continue;
        };
        let id = rec.pool_id.as_str();
        let Some(q) = region.quota(&metric) else {
            worst = worst.max(CheckStatus::Warn);
            lines.push(format!(
                "{id}: region {} reports no quota {metric}",
                s.n.region
            ));
            fixes.insert(quota_fix(s, &metric));
            continue;
        };
        let g = gke.get(id).copied();
        let zones = i64::try_from(
            g.map_or(0, |g| g.locations.len())
                .max(rec.spec.zones.len())
                .max(1),
        )
        .unwrap_or(1);
        let min_total = rec.spec.min_nodes.max(0) * zones;
        // Without the node list, assume the pool is at its minimum.
        let have = match s.nodes {
            Read::Found(_) => nodes_of.get(id).copied().unwrap_or(0),
            _ => min_total,
        };
        let per_node = u64::from(acc.per_node());
        let grow = |nodes: i64| per_node * u64::try_from((nodes - have).max(0)).unwrap_or(0);
        let to_min = grow(min_total).max(if have == 0 { quota::needed(&acc, 0) } else { 0 });
        let to_max = grow(rec.spec.max_nodes.max(0) * zones);
        let (st, why) = quota_verdict(q.limit, q.usage, to_min, to_max);
        let pct = if q.limit > 0.0 {
            q.usage / q.limit * 100.0
        } else {
            100.0
        };
        lines.push(format!(
            "{id}: {metric} {} of {} used ({pct:.0}%), {} free; {} more to reach its minimum, {} more to its maximum: {why}",
            q.usage,
            q.limit,
            (q.limit - q.usage).max(0.0),
            to_min,
            to_max
        ));
        worst = worst.max(st);
        if st != CheckStatus::Ok {
            fixes.insert(quota_fix(s, &metric));
        }
    }
    if lines.is_empty() {
        return vec![ok(
            ID,
            "no accelerator pool recorded: no accelerator quota to check".into(),
        )];
    }
    let message = lines.join("; ");
    if worst == CheckStatus::Ok {
        return vec![ok(ID, message)];
    }
    let mut fix: Vec<String> = fixes.into_iter().collect();
    fix.push("or lower the pool's maxNodes / minNodes".into());
    vec![check(ID, worst, message, fix.join("; "))]
}

fn quota_fix(s: &Shared, metric: &str) -> String {
    format!(
        "request more {metric} in region {} (https://console.cloud.google.com/iam-admin/quotas?project={}; gcloud compute regions describe {} --project={} shows limit and usage)",
        s.n.region, s.n.project, s.n.region, s.n.project
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_rules() {
        // 32 L4s, 4 used: a pool of 1 to 4 one-GPU nodes with one node up fits.
        assert_eq!(quota_verdict(32.0, 4.0, 0, 3).0, CheckStatus::Ok);
        // 26 of 32 used (81%): a warning even though the pool fits.
        assert_eq!(quota_verdict(32.0, 26.0, 0, 3).0, CheckStatus::Warn);
        // 2 left, the pool's max needs 3 more.
        assert_eq!(
            quota_verdict(8.0, 6.0, 0, 3).1,
            "it cannot grow to its maximum"
        );
        // Its minimum needs 4 more, 2 left.
        assert_eq!(quota_verdict(8.0, 6.0, 4, 8).0, CheckStatus::Fail);
        assert_eq!(quota_verdict(0.0, 0.0, 0, 0).0, CheckStatus::Warn);
    }
}
