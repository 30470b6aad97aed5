//! The file-descriptor limit raised for the waiters bench's 1,200 connections on each
//! side (its `kineticd serve` children inherit it).
//!
//! Invariant: only the soft limit moves, never past the hard limit.

use anyhow::{Result, bail};

/// Raise the soft limit of open files to at least `want` (up to the hard limit); the
/// children inherit it. Returns (before, after).
pub fn raise_nofile(want: u64) -> Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write/read only the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            bail!("getrlimit: {}", std::io::Error::last_os_error());
        }
        let before = lim.rlim_cur;
        if lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                bail!("setrlimit: {}", std::io::Error::last_os_error());
            }
        }
        Ok((before, lim.rlim_cur))
    }
}
