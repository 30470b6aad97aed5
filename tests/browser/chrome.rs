//! Debian's headless Chromium driven through its chromedriver: both binaries found (or the
//! test skipped, unless KINETIC_REQUIRE_CHROMIUM is set), chromedriver started on a free
//! port in a process group of its own, one WebDriver session opened on a temporary
//! profile.
//!
//! Invariant: dropping a [`Chrome`] SIGKILLs chromedriver's whole process group (the
//! browser it started included) and removes the temporary profile, also on panic; a
//! chromedriver whose test process dies without unwinding is killed by the kernel.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use thirtyfour::{ChromiumLikeCapabilities, DesiredCapabilities, WebDriver};

/// The two programs a browser test needs.
pub struct Binaries {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

impl Binaries {
    /// Chromium and chromedriver (`KINETIC_CHROMIUM` / `KINETIC_CHROMEDRIVER`, else on
    /// PATH, else Debian's /usr/bin); `None` after printing why the test `name` is
    /// skipped, or a panic when KINETIC_REQUIRE_CHROMIUM is set.
    pub fn find(name: &str) -> Option<Binaries> {
        let chromium = locate("KINETIC_CHROMIUM", &["chromium", "chromium-browser"]);
        let chromedriver = locate("KINETIC_CHROMEDRIVER", &["chromedriver"]);
        match (chromium, chromedriver) {
            (Some(chromium), Some(chromedriver)) => Some(Binaries {
                chromium,
                chromedriver,
            }),
            (chromium, driver) => {
                let missing = [
                    ("chromium", chromium.is_none()),
                    ("chromedriver", driver.is_none()),
                ]
                .iter()
                .filter(|(_, m)| *m)
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(" and ");
                let required = std::env::var("KINETIC_REQUIRE_CHROMIUM")
                    .is_ok_and(|v| !v.is_empty() && v != "0");
                assert!(
                    !required,
                    "{name}: {missing} not found and KINETIC_REQUIRE_CHROMIUM is set \
                     (apt-get install -y chromium chromium-driver)"
                );
                eprintln!(
                    "SKIPPED {name}: {missing} not found (apt-get install -y chromium \
                     chromium-driver; set KINETIC_REQUIRE_CHROMIUM=1 to fail instead)"
                );
                None
            }
        }
    }
}

/// The first executable of `var`, `names` on PATH, or /usr/bin/`names`.
fn locate(var: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| executable(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs: Vec<PathBuf> = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .collect();
    names
        .iter()
        .flat_map(|n| dirs.iter().map(move |d| d.join(n)))
        .find(|p| executable(p))
}

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// chromedriver, the Chromium it started and the WebDriver session on it.
pub struct Chrome {
    pub driver: WebDriver,
    process: Child,
    profile: PathBuf,
}

impl Chrome {
    /// Starts chromedriver on a free port, waits until it is ready and opens a session of
    /// headless Chromium with a `width` x `height` window.
    pub async fn start(bins: &Binaries, width: u32, height: u32) -> Chrome {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let profile = std::env::temp_dir().join(format!(
            "kineticd-chromium-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&profile).expect("profile dir");
        let mut cmd = Command::new(&bins.chromedriver);
        cmd.arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let process = cmd.spawn().expect("start chromedriver");
        let mut chrome = Guard {
            process: Some(process),
            profile: profile.clone(),
        };
        let url = format!("http://127.0.0.1:{port}");
        wait_ready(&url).await;

        let mut caps = DesiredCapabilities::chrome();
        caps.set_binary(&bins.chromium.to_string_lossy())
            .expect("binary");
        let mut args = vec![
            "--headless=new".to_owned(),
            format!("--user-data-dir={}", profile.display()),
            format!("--window-size={width},{height}"),
            "--force-device-scale-factor=1".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--no-first-run".to_owned(),
            "--hide-scrollbars".to_owned(),
        ];
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Chromium refuses to run as root inside its sandbox.
            args.push("--no-sandbox".to_owned());
        }
        for a in &args {
            caps.add_arg(a).expect("chromium argument");
        }
        let driver = WebDriver::new(url, caps)
            .await
            .expect("a WebDriver session on headless Chromium");
        Chrome {
            driver,
            process: chrome.process.take().expect("chromedriver"),
            profile,
        }
    }

    /// Ends the session (Chromium exits); the drop then stops chromedriver.
    pub async fn quit(self) {
        let _ = self.driver.clone().quit().await;
    }
}

/// Kills chromedriver's process group and removes the profile if [`Chrome::start`]
/// fails half-way.
struct Guard {
    process: Option<Child>,
    profile: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(p) = self.process.as_mut() {
            kill_group(p, &self.profile);
        }
    }
}

impl Drop for Chrome {
    fn drop(&mut self) {
        kill_group(&mut self.process, &self.profile);
    }
}

/// SIGKILL to the process group led by `p` (chromedriver and the browser it started),
/// reaps `p`, removes `profile`.
fn kill_group(p: &mut Child, profile: &Path) {
    let pgid = p.id() as libc::pid_t;
    // SAFETY: kill(2) on the process group our own, not yet reaped child leads.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = p.wait();
    let _ = std::fs::remove_dir_all(profile);
}

/// Waits (up to 30 s) until chromedriver's `/status` says it is ready.
async fn wait_ready(url: &str) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = http.get(format!("{url}/status")).send().await
            && let Ok(v) = r.json::<serde_json::Value>().await
            && v["value"]["ready"] == true
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "chromedriver at {url} not ready within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
