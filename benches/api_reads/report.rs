//! The figures of one load run, `pgbench -S`'s in the same terms, and the summary
//! table: medians over the repetitions, the ratio to `pgbench -S`, CPU microseconds per
//! request of kineticd and of PostgreSQL, and the targets of issue 26 item 6.
//!
//! Invariant: every ratio compares medians taken in the same run on the same server.

use std::time::Instant;

use anyhow::Result;

use crate::cpu::{Sample, children_cpu, machine_busy, postgres_cpu};
use crate::load::Run;
use crate::support::median;

pub const TARGET_RATIO: f64 = 1.0 / 3.0;
pub const TARGET_P99_MS: f64 = 10.0;

/// Figures of one load run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Figures {
    pub rps: f64,
    pub p50: f64,
    pub p99: f64,
    /// CPU microseconds per request: kineticd, PostgreSQL, load generator, everything else.
    pub server_us: f64,
    pub pg_us: f64,
    pub loader_us: f64,
    pub other_us: f64,
}

impl Figures {
    /// A run of the in-repo generator against the server in this process: the process's
    /// CPU less the generator's threads is the server's.
    pub fn in_process(r: &Run, c: Sample) -> Figures {
        Figures::of(r, c, c.process - c.loader, c.loader)
    }

    /// A run of the in-repo generator (in this process) against a server in its own
    /// process (sampled as [`crate::cpu::Sample::server`]).
    pub fn server_apart(r: &Run, c: Sample) -> Figures {
        Figures::of(r, c, c.server, c.process)
    }

    /// `c` spent over `r`: the server's and the generator's seconds as given.
    fn of(r: &Run, c: Sample, server_s: f64, loader_s: f64) -> Figures {
        let n = r.n.max(1) as f64;
        let us = |s: f64| s / n * 1e6;
        let accounted = c.process + c.server + c.postgres;
        Figures {
            rps: r.rps,
            p50: r.p50_ms,
            p99: r.p99_ms,
            server_us: us(server_s),
            pg_us: us(c.postgres),
            loader_us: us(loader_s),
            other_us: us((c.machine - accounted).max(0.0)),
        }
    }
}

/// `pgbench -S -c {conns} -j 2 -T {secs}` with the CPU PostgreSQL and pgbench spent
/// per transaction; `p50` holds pgbench's latency average.
pub async fn pgbench(pg_url: &str, conns: usize, secs: u32, postmaster: u32) -> Result<Figures> {
    let (p0, c0, m0) = (postgres_cpu(postmaster), children_cpu(), machine_busy());
    let t = Instant::now();
    let (tps, latency) = crate::pgbench::select_only_latency(pg_url, conns, secs).await?;
    let n = (tps * t.elapsed().as_secs_f64()).max(1.0);
    let pg_s = postgres_cpu(postmaster) - p0;
    let loader_s = children_cpu() - c0;
    let busy = machine_busy() - m0;
    Ok(Figures {
        rps: tps,
        p50: latency,
        pg_us: pg_s / n * 1e6,
        loader_us: loader_s / n * 1e6,
        other_us: (busy - pg_s - loader_s).max(0.0) / n * 1e6,
        ..Figures::default()
    })
}

/// One line of progress for a `pgbench -S` run.
pub fn progress_pgbench(rep: usize, f: &Figures) {
    println!(
        "  rep {rep} pgbench -S: {:.0} tps, latency average {:.2} ms; CPU us/tx: postgres {:.0}, \
         pgbench {:.0}, other {:.0}",
        f.rps, f.p50, f.pg_us, f.loader_us, f.other_us
    );
}

/// One line of progress for a run.
pub fn progress(rep: usize, what: &str, f: &Figures) {
    println!(
        "  rep {rep} {what}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms; CPU us/req: kineticd {:.0}, \
         postgres {:.0}, load generator {:.0}, other {:.0}",
        f.rps, f.p50, f.p99, f.server_us, f.pg_us, f.loader_us, f.other_us
    );
}

/// A row of the summary: what was read and its runs.
pub struct Row<'a> {
    pub label: &'a str,
    /// What the read returns (an operation's type, state, steps, size).
    pub about: &'a str,
    /// SQL statements per request, when counted.
    pub statements: Option<f64>,
    pub runs: &'a [Figures],
    /// Whether the targets apply to this read (the operation reads).
    pub targeted: bool,
}

fn pick(v: &[Figures], f: fn(&Figures) -> f64) -> f64 {
    median(v.iter().map(f).collect())
}

/// The Markdown table of medians, `pgbench -S`'s line, and the targets' verdicts.
pub fn table(rows: &[Row<'_>], pg: &[Figures], conns: usize, secs: u32) {
    let pg_tps = pick(pg, |f| f.rps);
    println!();
    println!(
        "| read | what | SQL statements | req/s | p50 ms | p99 ms | ratio to pgbench -S | \
         CPU us/req: kineticd | postgres | kineticd / postgres | load generator | other |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut verdicts = Vec::new();
    for r in rows {
        let rps = pick(r.runs, |f| f.rps);
        let (p99, server, pg_us) = (
            pick(r.runs, |f| f.p99),
            pick(r.runs, |f| f.server_us),
            pick(r.runs, |f| f.pg_us),
        );
        let ratio = rps / pg_tps;
        println!(
            "| `{}` | {} | {} | {rps:.0} | {:.2} | {p99:.2} | {ratio:.3} | {server:.0} | {pg_us:.0} | {:.2} | {:.0} | {:.0} |",
            r.label,
            r.about,
            r.statements.map_or(String::new(), |n| format!("{n}")),
            pick(r.runs, |f| f.p50),
            server / pg_us,
            pick(r.runs, |f| f.loader_us),
            pick(r.runs, |f| f.other_us)
        );
        if r.targeted {
            let mark = |ok: bool| if ok { "PASS" } else { "MISS" };
            verdicts.push(format!(
                "{}: ratio {ratio:.3} {} (>= 1/3), p99 {p99:.2} ms {} (< {TARGET_P99_MS} ms), \
                 kineticd {server:.0} us vs postgres {pg_us:.0} us per read {} (<=)",
                r.label,
                mark(ratio >= TARGET_RATIO),
                mark(p99 < TARGET_P99_MS),
                mark(server <= pg_us)
            ));
        }
    }
    println!(
        "| `pgbench -S -c {conns} -j 2 -T {secs}` | one primary-key read | 1 | {pg_tps:.0} tps | {:.2} (average) | | 1 | | {:.0} | | {:.0} | {:.0} |",
        pick(pg, |f| f.p50),
        pick(pg, |f| f.pg_us),
        pick(pg, |f| f.loader_us),
        pick(pg, |f| f.other_us)
    );
    println!();
    println!("Targets (issue 26 item 6), medians:");
    for v in verdicts {
        println!("- {v}");
    }
    println!(
        "Little's law at {conns} connections: a mean latency under {TARGET_P99_MS} ms needs at \
         least {:.0} req/s; load average now {}",
        conns as f64 / (TARGET_P99_MS / 1000.0),
        crate::support::loadavg()
    );
}
