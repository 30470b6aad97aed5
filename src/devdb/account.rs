//! Who runs the server, and where its data folder lives.
//!
//! `initdb` and `postgres` refuse to run as root. When our effective uid is 0 they run as
//! an unprivileged system user, which must own the data folder and be able to traverse
//! every directory above it; otherwise the folder moves under [`FALLBACK_BASE`].

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::DevDbError;

/// Base of data folders relocated because the server user cannot reach the requested one.
pub const FALLBACK_BASE: &str = "/var/tmp/kineticd-pg";

/// The unprivileged account the server runs as when we are root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// `None` when we are not root (run as ourselves), else the `postgres` or `nobody` account.
pub fn run_as() -> Result<Option<RunAs>, DevDbError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    ["postgres", "nobody"]
        .into_iter()
        .find_map(lookup_user)
        .map(Some)
        .ok_or(DevDbError::NoUnprivilegedUser)
}

fn lookup_user(name: &str) -> Option<RunAs> {
    let cname = CString::new(name).ok()?;
    let mut buf_len = 4096;
    loop {
        let mut buf = vec![0 as libc::c_char; buf_len];
        // SAFETY: passwd is plain old data; all-zero is a valid (empty) value.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer refers to live, correctly sized storage owned by this frame.
        let rc = unsafe {
            libc::getpwnam_r(
                cname.as_ptr(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf_len < (1 << 20) {
            buf_len *= 4;
            continue;
        }
        if rc != 0 || result.is_null() {
            return None;
        }
        return Some(RunAs {
            name: name.to_owned(),
            uid: pwd.pw_uid,
            gid: pwd.pw_gid,
        });
    }
}

/// Creates (if needed) the data folder for `requested` and makes it usable by `user`.
/// Returns the folder actually used: `requested` made absolute, or its fallback.
pub fn prepare_data_dir(requested: &Path, user: Option<&RunAs>) -> Result<PathBuf, DevDbError> {
    let abs =
        std::path::absolute(requested).map_err(|e| DevDbError::io("resolve", requested, e))?;
    let Some(user) = user else {
        create_dir_all(&abs)?;
        return Ok(abs);
    };
    if parents_traversable(&abs, user) {
        create_dir_all(&abs)?;
        // Directories we just created follow our umask: check the whole chain again.
        if parents_traversable(&abs, user) {
            give_to(&abs, user)?;
            return Ok(abs);
        }
    }
    let fallback = fallback_dir(&abs, user)?;
    tracing::warn!(
        requested = %abs.display(),
        data_dir = %fallback.display(),
        user = %user.name,
        "the PostgreSQL server user cannot traverse the parents of the requested data folder; \
         using a fallback data folder instead"
    );
    Ok(fallback)
}

fn fallback_dir(abs: &Path, user: &RunAs) -> Result<PathBuf, DevDbError> {
    let base = Path::new(FALLBACK_BASE);
    ensure_owned_dir(base)?;
    let dir = base.join(format!("{:016x}", fnv1a(abs.as_os_str().as_bytes())));
    if !parents_traversable(&dir, user) {
        return Err(DevDbError::Unreachable {
            data_dir: dir,
            user: user.name.clone(),
        });
    }
    create_dir_all(&dir)?;
    give_to(&dir, user)?;
    // A breadcrumb for humans wondering which project a hashed folder belongs to.
    let note = dir.with_extension("path");
    if let Err(e) = std::fs::write(&note, format!("{}\n", abs.display())) {
        tracing::debug!(path = %note.display(), error = %e, "could not write breadcrumb");
    }
    Ok(dir)
}

/// Makes sure `path` is a real directory owned by our effective uid (creating it with
/// mode 0755 if absent), so a shared parent such as /tmp cannot be used to hijack it.
pub fn ensure_owned_dir(path: &Path) -> Result<(), DevDbError> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    match std::fs::DirBuilder::new().mode(0o755).create(path) {
        Ok(()) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| DevDbError::io("set permissions of", path, e))?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(DevDbError::io("create directory", path, e)),
    }
    let meta = std::fs::symlink_metadata(path).map_err(|e| DevDbError::io("inspect", path, e))?;
    if !meta.is_dir() || meta.uid() != uid {
        return Err(DevDbError::UnsafeDirectory {
            path: path.to_path_buf(),
            uid,
        });
    }
    Ok(())
}

fn create_dir_all(path: &Path) -> Result<(), DevDbError> {
    std::fs::create_dir_all(path).map_err(|e| DevDbError::io("create directory", path, e))
}

/// Whether `user` (with only its primary group, as std drops supplementary groups when
/// changing uid) can search every existing directory above `dir`. Mode bits only, no ACLs.
fn parents_traversable(dir: &Path, user: &RunAs) -> bool {
    // Resolve symlinks in the longest existing prefix: what matters is the real path.
    let Some(existing) = dir.ancestors().find(|p| p.exists()) else {
        return false;
    };
    let Ok(real) = existing.canonicalize() else {
        return false;
    };
    // `dir` itself will be owned by `user`; everything above it must be searchable.
    let mut chain: Vec<&Path> = real.ancestors().collect();
    if existing == dir {
        chain.remove(0);
    }
    chain.into_iter().all(|p| {
        std::fs::metadata(p).is_ok_and(|m| {
            let mode = m.mode();
            let bit = if m.uid() == user.uid {
                0o100
            } else if m.gid() == user.gid {
                0o010
            } else {
                0o001
            };
            m.is_dir() && mode & bit != 0
        })
    })
}

/// Recursively hands `dir` to `user` unless it already belongs to them.
pub fn give_to(dir: &Path, user: &RunAs) -> Result<(), DevDbError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| DevDbError::io("inspect", dir, e))?;
    if meta.uid() == user.uid && meta.gid() == user.gid {
        return Ok(());
    }
    chown_tree(dir, user).map_err(|e| DevDbError::io("change the owner of", dir, e))
}

fn chown_tree(path: &Path, user: &RunAs) -> io::Result<()> {
    std::os::unix::fs::lchown(path, Some(user.uid), Some(user.gid))?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), user)?;
        }
    }
    Ok(())
}

/// 64-bit FNV-1a: a stable (across Rust releases) hash for fallback folder names.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_stable() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn root_directory_is_searchable_by_nobody() {
        let nobody = RunAs {
            name: "nobody".into(),
            uid: 65534,
            gid: 65534,
        };
        assert!(parents_traversable(Path::new("/tmp/x"), &nobody));
    }
}
