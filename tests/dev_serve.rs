//! The README's first command, end to end: `kineticd serve --dev` with no DATABASE_URL
//! starts a private PostgreSQL and the cloud simulator, serves the API, and on SIGTERM
//! shuts down cleanly (exit code 0, PostgreSQL stopped).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Kill(std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn url_after(line: &str, label: &str) -> Option<String> {
    let rest = line.strip_prefix(label)?.trim();
    Some(rest.split_whitespace().next()?.to_owned())
}

#[tokio::test]
async fn serve_dev_runs_everything_locally_and_stops_on_sigterm() {
    kineticd::auth::install_tls_provider();
    let data = std::env::temp_dir().join(format!("kineticd-dev-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kineticd"))
        .args([
            "serve",
            "--dev",
            "--listen",
            "127.0.0.1:0",
            "--sim-listen",
            "127.0.0.1:0",
        ])
        .arg("--data-dir")
        .arg(&data)
        .env_remove("DATABASE_URL")
        .env_remove("KINETIC_GCP_URL")
        .env("KINETIC_LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kineticd serve --dev");
    let stdout = child.stdout.take().expect("stdout");
    let mut guard = Kill(child);
    // The two URLs serve --dev prints.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let (mut api, mut sim) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(90);
    while api.is_none() || sim.is_none() {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("serve --dev printed its URLs");
        api = api.or_else(|| url_after(&line, "kineticd API:"));
        sim = sim.or_else(|| url_after(&line, "cloud simulator:"));
    }
    let (api, sim) = (api.unwrap(), sim.unwrap());
    let http = kineticd::app::http_client().unwrap();

    let ready = http.get(format!("{api}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let team = http
        .post(format!("{api}/v1/teams"))
        .json(&serde_json::json!({"teamId": "dev-team", "projects": ["dev-project-1"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(team.status(), 201);
    let me: serde_json::Value = http
        .get(format!("{api}/v1/me"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["email"], "dev@localhost");
    assert_eq!(me["teams"][0]["role"], "OWNER");
    // The built-in simulator answers Google API calls and its admin API.
    let state = http
        .get(format!("{sim}/sim/v1/state"))
        .send()
        .await
        .unwrap();
    assert_eq!(state.status(), 200);
    let region: serde_json::Value = http
        .get(format!(
            "{sim}/compute/v1/projects/dev-project-1/regions/us-central1"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(region["name"], "us-central1");
    // The private PostgreSQL lives in the data folder.
    assert!(data.join("pg").exists() || std::path::Path::new("/var/tmp/kineticd-pg").exists());

    // SIGTERM: graceful shutdown, exit code 0.
    let pid = guard.0.id() as i32;
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "serve --dev did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status {status}");
    assert!(
        http.get(format!("{api}/healthz")).send().await.is_err(),
        "still serving"
    );
    let _ = std::fs::remove_dir_all(&data);
}
