//! The check's answer: per pool whether the workload fits now, after scale-up or never,
//! an overall verdict, and the problems to fix.
//!
//! Invariant: the verdict is the worst over the workload's pod groups (every group must
//! place all its pods); a group that fits nowhere reports the reasons of the pools that
//! came closest (the latest rule they failed), so the fix offered is the one that
//! matters, and a problem is never reported for a group that fits.

use super::capacity::consume;
use super::judge::{Judgement, judge};
use super::queued;
pub use super::reasons::{Failure, Problem, Reason};
use super::{ClusterFacts, GPU, PodGroup, PoolFacts, TPU, Workload};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// When the pods can run on a pool (or at all); best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schema(as = WorkloadFit)]
pub enum Fit {
    Now,
    AfterScaleUp,
    Never,
}

impl Fit {
    pub fn as_str(self) -> &'static str {
        match self {
            Fit::Now => "NOW",
            Fit::AfterScaleUp => "AFTER_SCALE_UP",
            Fit::Never => "NEVER",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PoolFit {
    pub pool_id: String,
    pub fits: Fit,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub schedulable: bool,
    pub verdict: Fit,
    pub pools: Vec<PoolFit>,
    pub problems: Vec<Problem>,
}

impl Report {
    /// Whether a problem with `reason` was reported.
    pub fn has(&self, reason: Reason) -> bool {
        self.problem(reason).is_some()
    }

    /// The first problem reported with `reason`.
    pub fn problem(&self, reason: Reason) -> Option<&Problem> {
        self.problems.iter().find(|p| p.reason == reason)
    }
}

/// Judge `w` on the cluster described by `c`.
pub fn check(w: &Workload, c: &ClusterFacts) -> Report {
    let multi = w.groups.len() > 1;
    let label = |g: &PodGroup, s: String| if multi { format!("{}: {s}", g.role) } else { s };
    let mut problems = limit_problems(w);
    let rejected = !problems.is_empty();
    let mut verdict = Fit::Now;
    let mut rows: Vec<(Fit, String)> = vec![(Fit::Never, String::new()); c.pools.len()];
    // Groups share the cluster: each takes its pods' room before the next is judged.
    let mut work = c.clone();
    for g in &w.groups {
        let judged: Vec<(&PoolFacts, Judgement)> = work
            .pools
            .iter()
            .map(|p| (p, judge(&g.pod, g.replicas, p, &work)))
            .collect();
        let (fit, group_problems) = group_fit(g, &judged);
        verdict = verdict.max(fit);
        problems.extend(group_problems.into_iter().map(|p| Problem {
            message: label(g, p.message),
            ..p
        }));
        for (row, (p, j)) in rows.iter_mut().zip(&judged) {
            let (f, why) = row_fit(p, j);
            if row.1.is_empty() || f < row.0 {
                *row = (f, label(g, why));
            }
        }
        let eligible: Vec<usize> = judged
            .iter()
            .enumerate()
            .filter_map(|(i, (_, j))| j.is_ok().then_some(i))
            .collect();
        take(&mut work, g, &eligible);
    }
    if rejected {
        verdict = Fit::Never;
    }
    let pools = c
        .pools
        .iter()
        .zip(rows)
        .map(|(p, (fits, reason))| PoolFit {
            pool_id: p.pool_id.clone(),
            fits: if rejected { Fit::Never } else { fits },
            reason: if rejected {
                "the API server would refuse the pods (see problems)".into()
            } else {
                reason
            },
        })
        .collect();
    Report {
        schedulable: verdict != Fit::Never,
        verdict,
        pools,
        problems,
    }
}

/// Place the group's pods on the `eligible` pools, in order, charging added nodes to
/// the pools' quota.
fn take(work: &mut ClusterFacts, g: &PodGroup, eligible: &[usize]) {
    let mut left = u64::from(g.replicas);
    for &i in eligible {
        let pool = &mut work.pools[i];
        let (placed, added) = consume(&g.pod, left, pool);
        left -= placed;
        let charged = added * u64::from(pool.accelerators_per_node);
        if let Some(q) = pool
            .quota_metric
            .as_ref()
            .and_then(|m| work.quotas.get_mut(m))
        {
            q.usage += charged as f64;
        }
    }
}

/// Extended resources requested without a limit: the API server refuses the pod.
fn limit_problems(w: &Workload) -> Vec<Problem> {
    let mut out = Vec::new();
    for g in &w.groups {
        for resource in [GPU, TPU] {
            for c in g.pod.missing_limits(resource) {
                out.push(Problem {
                    reason: Reason::GpuLimitMissing,
                    message: format!("container {c} requests {resource} without a limit; the API server refuses such a pod (extended resources cannot be overcommitted)"),
                    fix: format!("set resources.limits.{resource} in container {c} (equal to the request, or instead of it)"),
                });
            }
        }
    }
    out
}

fn row_fit(p: &PoolFacts, j: &Judgement) -> (Fit, String) {
    match j {
        Err(f) => (Fit::Never, format!("{}: {}", f.reason.as_str(), f.message)),
        Ok(r) if r.now > 0 => (
            Fit::Now,
            format!("room for {} pod(s) on its nodes now", r.now),
        ),
        Ok(r) if r.later > 0 && p.is_queued() => (Fit::AfterScaleUp, queued::row_reason(p, r)),
        Ok(r) if r.later > 0 => (
            Fit::AfterScaleUp,
            format!(
                "room for {} pod(s) once the autoscaler adds {} node(s)",
                r.later, r.added_nodes
            ),
        ),
        Ok(r) => match &r.blocked {
            Some(f) => (Fit::Never, format!("{}: {}", f.reason.as_str(), f.message)),
            None => (
                Fit::Never,
                "no room on its nodes and no room to add nodes".into(),
            ),
        },
    }
}

fn problem(f: &Failure) -> Problem {
    Problem {
        reason: f.reason,
        message: f.message.clone(),
        fix: f.fix.clone(),
    }
}

/// The group's fit and, when it cannot place all its pods, why.
fn group_fit(g: &PodGroup, judged: &[(&PoolFacts, Judgement)]) -> (Fit, Vec<Problem>) {
    let need = u64::from(g.replicas);
    let rooms: Vec<(&PoolFacts, &super::capacity::Room)> = judged
        .iter()
        .filter_map(|(p, j)| Some((*p, j.as_ref().ok()?)))
        .collect();
    let now: u64 = rooms.iter().map(|(_, r)| r.now).sum();
    let later: u64 = rooms.iter().map(|(_, r)| r.later).sum();
    let mut problems = Vec::new();
    if !rooms.is_empty() && rooms.iter().all(|(p, _)| p.spot) {
        problems.push(spot_only(
            &rooms.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        ));
    }
    problems.extend(queued::problems(&rooms, need, now));
    let fit = if now >= need {
        Fit::Now
    } else if now + later >= need {
        Fit::AfterScaleUp
    } else {
        Fit::Never
    };
    if fit != Fit::Never {
        return (fit, problems);
    }
    let failures: Vec<&Failure> = if rooms.is_empty() {
        judged
            .iter()
            .filter_map(|(_, j)| j.as_ref().err())
            .collect()
    } else {
        rooms
            .iter()
            .filter_map(|(_, r)| r.blocked.as_ref())
            .collect()
    };
    let deepest = failures.iter().map(|f| f.reason.depth()).max();
    let mut seen = std::collections::BTreeSet::new();
    for f in failures
        .iter()
        .filter(|f| Some(f.reason.depth()) == deepest)
    {
        if seen.insert((f.reason, f.fix.clone())) {
            problems.push(problem(f));
        }
    }
    if judged.is_empty() {
        problems.push(Problem {
            reason: Reason::NoMatchingPool,
            message: "the cluster has no node pools".into(),
            fix: "add a node pool (kinetic pool add <accelerator>)".into(),
        });
    }
    (fit, problems)
}

fn spot_only(pools: &[&PoolFacts]) -> Problem {
    let ids: Vec<&str> = pools.iter().map(|p| p.pool_id.as_str()).collect();
    let paired: Vec<&str> = pools
        .iter()
        .filter_map(|p| p.failover_pair.as_deref())
        .collect();
    let fix = if paired.is_empty() {
        format!(
            "add an on-demand pool of the same accelerator as a fallback (kinetic pool add <accelerator> --failover pairs it with {}), and let the pods run on it",
            ids.join(", ")
        )
    } else {
        format!(
            "let the pods also run on the paired on-demand pool {} (drop what pins them to spot, or select the pair's compute class)",
            paired.join(", ")
        )
    };
    Problem {
        reason: Reason::SpotOnlyNoFallback,
        message: format!(
            "the pods can only run on spot pool(s) {}; when spot capacity is reclaimed they wait with no on-demand fallback",
            ids.join(", ")
        ),
        fix,
    }
}
