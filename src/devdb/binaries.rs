//! Finding the PostgreSQL server binaries (`initdb`, `postgres`).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::DevDbError;

/// Where Debian/Ubuntu install versioned server binaries (`<root>/<version>/bin`).
pub const DEFAULT_SEARCH_ROOT: &str = "/usr/lib/postgresql";

/// A directory holding the PostgreSQL server binaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    pub bin_dir: PathBuf,
}

impl PgBinaries {
    /// First directory on `PATH` holding both `initdb` and `postgres`, else the newest
    /// `/usr/lib/postgresql/<version>/bin` holding both.
    pub fn locate() -> Result<Self, DevDbError> {
        Self::locate_with(
            std::env::var_os("PATH").as_deref(),
            Path::new(DEFAULT_SEARCH_ROOT),
        )
    }

    /// [`PgBinaries::locate`] with an explicit `PATH` value and versioned search root.
    pub fn locate_with(path_var: Option<&OsStr>, search_root: &Path) -> Result<Self, DevDbError> {
        if let Some(path_var) = path_var {
            for dir in std::env::split_paths(path_var) {
                // Relative PATH entries depend on the working directory: ignore them.
                if dir.is_absolute() && has_server_binaries(&dir) {
                    return Ok(PgBinaries { bin_dir: dir });
                }
            }
        }
        newest_versioned(search_root)
            .map(|bin_dir| PgBinaries { bin_dir })
            .ok_or_else(|| DevDbError::NoBinaries {
                search_root: search_root.to_path_buf(),
            })
    }

    pub fn initdb(&self) -> PathBuf {
        self.bin_dir.join("initdb")
    }

    pub fn postgres(&self) -> PathBuf {
        self.bin_dir.join("postgres")
    }
}

fn has_server_binaries(dir: &Path) -> bool {
    is_executable(&dir.join("initdb")) && is_executable(&dir.join("postgres"))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `<root>/<version>/bin` with the highest version (numeric, so `15` beats `9.6`).
fn newest_versioned(root: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(root).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_owned();
            let bin = entry.path().join("bin");
            has_server_binaries(&bin).then(|| (version_key(&name), name, bin))
        })
        .max_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)))
        .map(|(_, _, bin)| bin)
}

/// Leading numeric dot-separated components: `"9.6"` -> `[9, 6]`, `"17devel"` -> `[17]`.
fn version_key(name: &str) -> Vec<u64> {
    let mut key = Vec::new();
    for part in name.split('.') {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse() {
            Ok(n) => key.push(n),
            Err(_) => break,
        }
        if digits.len() != part.len() {
            break;
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::version_key;

    #[test]
    fn versions_sort_numerically() {
        assert!(version_key("15") > version_key("9.6"));
        assert!(version_key("16") > version_key("15.4"));
        assert_eq!(version_key("17devel"), vec![17]);
        assert!(version_key("main").is_empty());
    }
}
