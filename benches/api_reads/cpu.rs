//! CPU time per party, read from `/proc`: a process (optionally with its reaped
//! children), the threads of this process with a given name (the in-process load
//! generator's), the PostgreSQL server (its postmaster and every backend), this process's
//! waited-for children (pgbench, wrk), and the whole machine's busy time.
//!
//! Invariant: every figure is CPU seconds since boot (or since the process started), so
//! a party's share of a run is the difference of two [`Sample`]s taken around it.

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// The fields after `(comm)` of a `/proc/.../stat` line (comm may hold spaces).
fn stat_fields(path: &str) -> Option<Vec<f64>> {
    let stat = std::fs::read_to_string(path).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(
        rest.split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect(),
    )
}

/// utime + stime (and with `children` cutime + cstime) of a stat line's fields, in
/// seconds. fields[0] is field 3 (state): utime is field 14, index 11.
fn cpu_of_fields(f: &[f64], children: bool) -> f64 {
    let at = |i: usize| f.get(i).copied().unwrap_or(0.0);
    let ticks = at(11) + at(12) + if children { at(13) + at(14) } else { 0.0 };
    ticks / clock_ticks()
}

/// CPU seconds of process `pid` (with `children`, also its reaped children's).
pub fn cpu_of(pid: u32, children: bool) -> f64 {
    stat_fields(&format!("/proc/{pid}/stat")).map_or(0.0, |f| cpu_of_fields(&f, children))
}

fn ppid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// CPU seconds of the PostgreSQL server whose postmaster is `postmaster`: itself (with
/// its reaped backends) and its live children.
pub fn postgres_cpu(postmaster: u32) -> f64 {
    let mut total = cpu_of(postmaster, true);
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok())
            && ppid_of(pid) == Some(postmaster)
        {
            total += cpu_of(pid, false);
        }
    }
    total
}

/// The postmaster's pid, from `postmaster.pid` in the server's data directory.
pub async fn postmaster_pid(db: &kineticd::store::Db) -> anyhow::Result<u32> {
    use anyhow::Context;
    let dir: String = sqlx::query_scalar("SELECT current_setting('data_directory')")
        .fetch_one(db)
        .await?;
    let text = std::fs::read_to_string(format!("{dir}/postmaster.pid"))
        .with_context(|| format!("reading {dir}/postmaster.pid"))?;
    text.lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .context("postmaster.pid has no pid")
}

/// Busy CPU seconds of the whole machine (`/proc/stat`, all but idle and iowait).
pub fn machine_busy() -> f64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let f: Vec<f64> = stat
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let busy: f64 =
        f.iter().take(8).sum::<f64>() - f.get(3).unwrap_or(&0.0) - f.get(4).unwrap_or(&0.0);
    busy / clock_ticks()
}

/// CPU seconds of this process's waited-for children.
pub fn children_cpu() -> f64 {
    // SAFETY: getrusage writes only the struct we pass.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(u.ru_utime) + s(u.ru_stime)
}

/// This process's own CPU seconds (all threads).
pub fn self_cpu() -> f64 {
    cpu_of(std::process::id(), false)
}

/// CPU seconds of this process's live threads named `name`.
pub fn threads_cpu(name: &str) -> f64 {
    let mut total = 0.0;
    for e in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let dir = e.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() == name
            && let Some(f) = stat_fields(&dir.join("stat").to_string_lossy())
        {
            total += cpu_of_fields(&f, false);
        }
    }
    total
}

/// Whom to sample: a PostgreSQL server, and a server process of our own if it runs apart.
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    pub postmaster: u32,
    pub server: Option<u32>,
}

/// CPU seconds of each party at one instant.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// This whole process.
    pub process: f64,
    /// The in-process load generator's threads.
    pub loader: f64,
    /// The watched server process (0 when it runs in this process).
    pub server: f64,
    pub postgres: f64,
    pub machine: f64,
}

impl Sample {
    pub fn take(w: Watch) -> Sample {
        Sample {
            process: self_cpu(),
            loader: threads_cpu(crate::load::THREAD),
            server: w.server.map_or(0.0, |pid| cpu_of(pid, false)),
            postgres: postgres_cpu(w.postmaster),
            machine: machine_busy(),
        }
    }

    /// What each party spent from `before` to `self`.
    pub fn since(self, before: Sample) -> Sample {
        Sample {
            process: self.process - before.process,
            loader: self.loader - before.loader,
            server: self.server - before.server,
            postgres: self.postgres - before.postgres,
            machine: self.machine - before.machine,
        }
    }
}
