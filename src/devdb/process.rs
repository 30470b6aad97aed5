//! Spawning server processes that cannot outlive us, and signalling them.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::account::RunAs;

/// A command for a server binary: as `user` when given (std also clears the supplementary
/// groups when it changes uid), in its own process group (a terminal's Ctrl-C reaches us,
/// not the server: we decide when it stops), and killed with SIGQUIT when we die.
pub fn command(program: &Path, user: Option<&RunAs>, cwd: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .process_group(0);
    if let Some(user) = user {
        cmd.uid(user.uid).gid(user.gid);
    }
    die_with_parent(&mut cmd);
    cmd
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs between fork and exec; it only makes async-signal-safe
    // system calls and does not allocate.
    unsafe {
        cmd.pre_exec(move || {
            // std runs pre_exec closures after setuid, which matters: changing
            // credentials clears the parent-death signal.
            let sig = libc::SIGQUIT as libc::c_ulong;
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                sig,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // If we died between fork and prctl, no signal will ever come: give up.
            if libc::getppid() as u32 != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn die_with_parent(_cmd: &mut Command) {
    // No parent-death signal on this platform: `PrivatePostgres`'s Drop is the safety net.
}

/// A child process spawned and reaped by a dedicated thread.
///
/// The parent-death signal fires when the *thread* that forked the child exits, and async
/// runtimes (a `#[tokio::test]` in particular) run on short-lived threads, so the fork
/// happens on a thread that lives exactly as long as the child: it blocks in `wait`.
#[derive(Debug)]
pub struct Supervised {
    pid: u32,
    exit: watch::Receiver<Option<String>>,
}

impl Supervised {
    pub fn spawn(mut cmd: Command) -> io::Result<Supervised> {
        let (pid_tx, pid_rx) = std::sync::mpsc::channel();
        let (exit_tx, exit_rx) = watch::channel(None);
        std::thread::Builder::new()
            .name("kineticd-postgres".into())
            .spawn(move || match cmd.spawn() {
                Err(e) => {
                    let _ = pid_tx.send(Err(e));
                }
                Ok(mut child) => {
                    let _ = pid_tx.send(Ok(child.id()));
                    let status = match child.wait() {
                        Ok(status) => status.to_string(),
                        Err(e) => format!("could not wait for it: {e}"),
                    };
                    exit_tx.send_replace(Some(status));
                }
            })?;
        let pid = pid_rx
            .recv()
            .map_err(|_| io::Error::other("the spawning thread died"))??;
        Ok(Supervised { pid, exit: exit_rx })
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How the process exited, once it has.
    pub fn exit_status(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    pub fn has_exited(&self) -> bool {
        self.exit.borrow().is_some()
    }

    /// Sends `sig` unless the process was already reaped (its pid may have been reused).
    pub fn signal(&self, sig: libc::c_int) {
        if !self.has_exited() {
            send_signal(self.pid, sig);
        }
    }

    /// Waits up to `timeout` for the process to exit; true if it did.
    pub async fn wait(&self, timeout: Duration) -> bool {
        let mut exit = self.exit.clone();
        // An error means the supervising thread is gone, which only happens after exit.
        tokio::time::timeout(timeout, exit.wait_for(Option::is_some))
            .await
            .is_ok()
    }

    /// Blocking variant of [`Supervised::wait`], for `Drop`.
    pub fn wait_blocking(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.has_exited() {
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }
}

fn send_signal(pid: u32, sig: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid)
        && pid > 0
    {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(pid, sig) };
    }
}

/// The pid recorded in `<data_dir>/postmaster.pid`, if that process is a live server.
/// A stale file (server killed, or pid reused by an unrelated process) yields `None`.
pub fn live_server_pid(data_dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    let pid: u32 = text.lines().next()?.trim().parse().ok()?;
    (pid_running(pid) && comm_is_postgres(pid)).then_some(pid)
}

/// Whether process `pid` exists and (on Linux) is not a zombie awaiting its reaper.
pub fn pid_running(pid: u32) -> bool {
    let Some(raw) = libc::pid_t::try_from(pid).ok().filter(|p| *p > 0) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let exists = unsafe { libc::kill(raw, 0) } == 0
        || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    exists && proc_stat(pid).is_none_or(|(_, state)| state != 'Z')
}

/// `(comm, state)` from `/proc/<pid>/stat` ("pid (comm) state ..."), where available.
fn proc_stat(pid: u32) -> Option<(String, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, tail) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    Some((comm, tail.trim_start().chars().next()?))
}

/// Whether `pid` runs postgres (true when we cannot tell: assume the worst).
fn comm_is_postgres(pid: u32) -> bool {
    proc_stat(pid)
        .is_none_or(|(comm, _)| comm.starts_with("postgres") || comm.starts_with("postmaster"))
}
