//! CPU accounting from Linux `/proc`: where the time of a run goes, client vs. server.

use crate::server::Server;

/// CPU seconds used so far, on both sides of the connection.
#[derive(Clone, Copy)]
pub struct Sample {
    /// This process (the engine) and its exited, waited-for children (pgbench).
    pub own: f64,
    pub children: f64,
    /// The server: the postmaster, its exited backends and its live ones.
    pub server: Option<f64>,
    /// The whole machine (all CPUs, every process).
    pub machine: Option<f64>,
}

impl Sample {
    pub fn now(server: &Server) -> Sample {
        Sample {
            own: proc_cpu(std::process::id()).map_or(0.0, |c| c.1),
            children: children_cpu(),
            server: server_cpu(server.pid()),
            machine: machine_cpu(),
        }
    }

    /// CPU seconds from `self` to `later`.
    pub fn until(&self, later: &Sample) -> Sample {
        Sample {
            own: later.own - self.own,
            children: later.children - self.children,
            server: later.server.zip(self.server).map(|(b, a)| b - a),
            machine: later.machine.zip(self.machine).map(|(b, a)| b - a),
        }
    }

    /// For a difference over `wall_s` seconds: CPUs kept busy on average by everything
    /// else on the machine (other work skews every figure).
    pub fn others_cpus(&self, wall_s: f64) -> Option<f64> {
        let ours = self.own + self.children + self.server?;
        Some(((self.machine? - ours) / wall_s).max(0.0))
    }
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// (ppid, own CPU seconds, reaped children's CPU seconds) of a process.
fn proc_cpu(pid: u32) -> Option<(u32, f64, f64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command (field 2) may contain spaces; the fields after it start with the state.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok());
    let ppid = f.get(1)?.parse().ok()?;
    let ticks = clock_ticks();
    // utime, stime, cutime, cstime are fields 14-17, i.e. indexes 11-14 here.
    Some((
        ppid,
        (num(11)? + num(12)?) / ticks,
        (num(13)? + num(14)?) / ticks,
    ))
}

/// The postmaster's CPU, its reaped backends' (counted in its children's time) and its
/// live (or exited, not yet reaped) backends'. A backend reaped during the scan would be
/// counted twice or not at all (as when pgbench disconnects): then scan again.
fn server_cpu(postmaster: u32) -> Option<f64> {
    for _ in 0..10 {
        let (_, _, reaped) = proc_cpu(postmaster)?;
        let mut live = 0.0;
        for e in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some((ppid, cpu, _)) = proc_cpu(pid)
                && ppid == postmaster
            {
                live += cpu;
            }
        }
        let (_, own, reaped_after) = proc_cpu(postmaster)?;
        if reaped_after == reaped {
            return Some(own + reaped + live);
        }
    }
    None
}

/// CPU seconds of this process's exited, waited-for children.
fn children_cpu() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Busy CPU seconds of the whole machine: the `cpu` line of `/proc/stat` minus idle and
/// iowait (guest time is already counted in user time).
fn machine_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let f: Vec<f64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let busy = f.iter().sum::<f64>() - f.get(3)? - f.get(4)?;
    Some(busy / clock_ticks())
}
