//! The README's first command, end to end: `kineticd serve --dev` with no DATABASE_URL
//! starts a private PostgreSQL and the cloud simulator, serves the API, and on SIGTERM
//! shuts down cleanly (exit code 0, PostgreSQL stopped).

mod common;

use std::time::{Duration, Instant};

use common::dev_server::DevServer;
use common::get_json;

#[tokio::test]
async fn serve_dev_runs_everything_locally_and_stops_on_sigterm() {
    kineticd::auth::install_tls_provider();
    let mut server = DevServer::start("dev-serve", |cmd| {
        cmd.env_remove("DATABASE_URL");
    });
    let (api, sim) = (server.api.clone(), server.sim.clone());
    let data = server.data_dir().to_owned();
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
    let me = get_json(&http, &format!("{api}/v1/me")).await;
    assert_eq!(me["email"], "dev@localhost");
    assert_eq!(me["teams"][0]["role"], "OWNER");
    // The built-in simulator answers Google API calls and its admin API.
    let state = http
        .get(format!("{sim}/sim/v1/state"))
        .send()
        .await
        .unwrap();
    assert_eq!(state.status(), 200);
    let region = get_json(
        &http,
        &format!("{sim}/compute/v1/projects/dev-project-1/regions/us-central1"),
    )
    .await;
    assert_eq!(region["name"], "us-central1");
    // The private PostgreSQL lives in the data folder.
    assert!(data.join("pg").exists() || std::path::Path::new("/var/tmp/kineticd-pg").exists());

    // SIGTERM: graceful shutdown, exit code 0.
    let pid = server.child().id() as i32;
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = server.child().try_wait().unwrap() {
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
}
