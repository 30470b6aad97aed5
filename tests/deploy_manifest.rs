//! The manifests in deploy/ and the binary cannot drift apart. The production overlay is
//! rendered with `kubectl kustomize`; its release Job's container runs against an empty
//! database, then its Deployment's container starts with exactly the manifest's
//! command (the image's entry point, replaced by this build's binary), args, env and
//! port, and answers every probe the Deployment declares; SIGTERM then stops it cleanly
//! within the pod's termination grace. Both environments' load balancers let a `:watch`
//! outlive the longest operation deadline the code has, serve HTTPS only (TLS 1.2+
//! through the Gateway's SSL policy) and answer plain HTTP with a redirect.
//!
//! Test values, where the manifest refers to objects the cluster supplies:
//! - `secretKeyRef kineticd-database/url` (created by the operator): the URL of a fresh
//!   database of the test harness;
//! - `configMapKeyRef`: the value from the ConfigMap in the same render (placeholders
//!   included: the audience is only compared with tokens, which the probes do not carry).
//!
//! The port is the manifest's own (KINETIC_LISTEN, 0.0.0.0:8080): it must be free on the
//! machine running the test. Without kubectl the test is skipped with a message, unless
//! KINETIC_REQUIRE_KUBECTL=1 (set by .ci/run).

mod common;

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const OVERLAY: &str = "deploy/overlays/production";
const RELEASE_JOB_OVERLAY: &str = "deploy/overlays/production/migrate";

/// Every object of an overlay, or None (skip) where kubectl is absent and not required.
fn render(overlay: &str) -> Option<Vec<Value>> {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = match Command::new("kubectl")
        .args(["kustomize", overlay])
        .current_dir(root)
        .output()
    {
        Ok(out) => out,
        Err(e) if std::env::var("KINETIC_REQUIRE_KUBECTL").as_deref() == Ok("1") => {
            panic!("kubectl is required (KINETIC_REQUIRE_KUBECTL=1): {e}")
        }
        Err(e) => {
            eprintln!(
                "SKIPPED: kubectl not available ({e}); set KINETIC_REQUIRE_KUBECTL=1 to fail instead"
            );
            return None;
        }
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {overlay}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8 manifests");
    Some(serde_saphyr::from_multiple::<Value>(&text).expect("rendered YAML"))
}

fn object<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind}/{name} in the render"))
}

fn container<'a>(workload: &'a Value, name: &str) -> &'a Value {
    workload["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

/// The image's entry point, from deploy/Dockerfile's exec-form ENTRYPOINT.
fn image_entrypoint() -> String {
    let dockerfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/Dockerfile");
    let text = std::fs::read_to_string(dockerfile).expect("deploy/Dockerfile");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ENTRYPOINT "))
        .expect("an ENTRYPOINT");
    let argv: Vec<String> = serde_json::from_str(line).expect("exec-form ENTRYPOINT");
    assert_eq!(argv.len(), 1, "the entry point is the binary alone");
    argv[0].clone()
}

/// A container's process: program, arguments and complete environment.
struct Launch {
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Launch {
    fn of(container: &Value, docs: &[Value], database_url: &str) -> Launch {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .map(|s| s.as_str().expect("string").to_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        let command = strings(&container["command"]);
        assert_eq!(
            command.first(),
            Some(&image_entrypoint()),
            "the container runs the image's binary"
        );
        let mut args: Vec<String> = command[1..].to_vec();
        args.extend(strings(&container["args"]));
        let env = container["env"]
            .as_array()
            .map(|vars| {
                vars.iter()
                    .map(|v| env_value(v, docs, database_url))
                    .collect()
            })
            .unwrap_or_default();
        Launch { args, env }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Start the binary with exactly these arguments and this environment; its output
    /// goes to `log`.
    fn spawn(&self, log: &Path) -> Child {
        let out = std::fs::File::create(log).expect("log file");
        Command::new(env!("CARGO_BIN_EXE_kineticd"))
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("log file"))
            .stderr(out)
            .spawn()
            .expect("start kineticd")
    }
}

/// One `env` entry's value: literal, from the rendered ConfigMap, or the test database.
fn env_value(var: &Value, docs: &[Value], database_url: &str) -> (String, String) {
    let name = var["name"].as_str().expect("env name").to_owned();
    if let Some(v) = var["value"].as_str() {
        return (name, v.to_owned());
    }
    let from = &var["valueFrom"];
    if let Some(r) = from.get("configMapKeyRef") {
        let cm = object(docs, "ConfigMap", r["name"].as_str().expect("name"));
        let key = r["key"].as_str().expect("key");
        let v = cm["data"][key]
            .as_str()
            .unwrap_or_else(|| panic!("ConfigMap has no {key}"));
        return (name, v.to_owned());
    }
    match (&from["secretKeyRef"]["name"], &from["secretKeyRef"]["key"]) {
        (s, k) if s == "kineticd-database" && k == "url" => (name, database_url.to_owned()),
        _ => panic!("{name}: no test value for {from}; document one in this test"),
    }
}

/// A database with nothing in it, as a new Cloud SQL database is.
async fn empty_database() -> String {
    let name = format!("kt_deploy_{}", uuid::Uuid::new_v4().simple());
    let mut admin = common::admin_connection().await;
    common::ddl(&mut admin, format!("CREATE DATABASE {name}")).await;
    common::db_url(&name)
}

/// Wait for the process to exit (killing it after `limit`).
fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    None
}

fn seconds(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("{what} is not a number of seconds: {v}"))
}

/// The port a probe or Service names (a number, or a named container port).
fn resolve_port(port: &Value, c: &Value) -> u64 {
    match port {
        Value::Number(n) => n.as_u64().expect("port"),
        Value::String(name) => c["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_u64())
            .unwrap_or_else(|| panic!("no container port named {name}")),
        other => panic!("port {other}"),
    }
}

/// GET `path` until it answers 200 (the process must stay up meanwhile).
async fn until_ok(http: &reqwest::Client, child: &mut Child, url: &str, log: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!(
                "kineticd exited ({status}) before {url} answered:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        if let Ok(r) = http.get(url).send().await
            && r.status() == reqwest::StatusCode::OK
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{url} never answered 200:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_release_job_and_the_deployment_run_this_binary_as_written() {
    let (Some(docs), Some(job_docs)) = (render(OVERLAY), render(RELEASE_JOB_OVERLAY)) else {
        return;
    };
    let url = empty_database().await;
    let dir = std::env::temp_dir().join(format!("kt-deploy-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).expect("log dir");

    // The release Job migrates an empty database and exits 0.
    let job = object(&job_docs, "Job", "kineticd-migrate");
    let migrate = Launch::of(container(job, "kineticd"), &job_docs, &url);
    let log = dir.join("migrate.log");
    let status = wait_exit(&mut migrate.spawn(&log), Duration::from_secs(120));
    assert!(
        status.is_some_and(|s| s.success()),
        "the release Job failed ({status:?}):\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let db = kineticd::store::connect(&url, 2).await.expect("connect");
    assert_eq!(
        kineticd::store::db::newest_applied_migration(&db)
            .await
            .unwrap(),
        kineticd::store::db::newest_known_migration(),
        "the Job applied every migration"
    );
    db.close().await;

    // The Deployment's container, its port and probes.
    let deployment = object(&docs, "Deployment", "kineticd");
    let c = container(deployment, "kineticd");
    let serve = Launch::of(c, &docs, &url);
    let listen: std::net::SocketAddr = serve
        .var("KINETIC_LISTEN")
        .expect("the Deployment sets KINETIC_LISTEN")
        .parse()
        .expect("KINETIC_LISTEN is an address");
    let port = u64::from(listen.port());
    assert_eq!(
        resolve_port(&Value::from("http"), c),
        port,
        "containerPort http"
    );
    let service = object(&docs, "Service", "kineticd");
    assert_eq!(
        resolve_port(&service["spec"]["ports"][0]["targetPort"], c),
        port,
        "the Service's targetPort"
    );
    let lb = object(&docs, "NetworkPolicy", "kineticd-from-load-balancer");
    assert_eq!(
        lb["spec"]["ingress"][0]["ports"][0]["port"].as_u64(),
        Some(port),
        "the NetworkPolicy admits the load balancer to the serving port"
    );
    let probes: Vec<(&str, &Value)> = ["startupProbe", "readinessProbe", "livenessProbe"]
        .into_iter()
        .map(|p| (p, &c[p]["httpGet"]))
        .collect();
    for (which, get) in &probes {
        assert_eq!(resolve_port(&get["port"], c), port, "{which} port");
    }
    assert_eq!(probes[1].1["path"], "/readyz", "readiness asks /readyz");
    assert_eq!(probes[2].1["path"], "/healthz", "liveness asks /healthz");
    let health_check = object(&docs, "HealthCheckPolicy", "kineticd");
    assert_eq!(
        health_check["spec"]["default"]["config"]["httpHealthCheck"]["requestPath"],
        probes[1].1["path"],
        "the load balancer's health check asks what readiness asks"
    );

    // Termination: preStop sleep + kineticd's drain fit in the pod's grace period.
    let pod = &deployment["spec"]["template"]["spec"];
    let grace = seconds(
        &pod["terminationGracePeriodSeconds"],
        "terminationGracePeriodSeconds",
    );
    let pre_stop = seconds(
        &c["lifecycle"]["preStop"]["sleep"]["seconds"],
        "preStop sleep",
    );
    let drain = seconds(
        &Value::from(
            serve
                .var("KINETIC_SHUTDOWN_GRACE_SECONDS")
                .expect("the Deployment sets KINETIC_SHUTDOWN_GRACE_SECONDS"),
        ),
        "KINETIC_SHUTDOWN_GRACE_SECONDS",
    );
    assert!(
        grace > pre_stop + drain,
        "terminationGracePeriodSeconds {grace} must exceed preStop {pre_stop} + shutdown grace {drain}"
    );

    // Start it as written; every probe answers.
    let log = dir.join("serve.log");
    let mut child = serve.spawn(&log);
    let http = kineticd::app::http_client().expect("http client");
    for (_, get) in &probes {
        let path = get["path"].as_str().expect("probe path");
        until_ok(
            &http,
            &mut child,
            &format!("http://127.0.0.1:{port}{path}"),
            &log,
        )
        .await;
    }

    // SIGTERM (what the kubelet sends after preStop): a clean exit within the rest of
    // the grace period.
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "SIGTERM");
    let status = wait_exit(&mut child, Duration::from_secs(grace - pre_stop));
    assert!(
        status.is_some_and(|s| s.success()),
        "after SIGTERM: {status:?}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The load balancer cuts a response at the GCPBackendPolicy's `timeoutSec`, streams
/// included: an operation's `:watch` lives as long as the operation, so the timeout must
/// exceed the longest deadline any operation kind has (in both environments).
#[tokio::test]
async fn the_load_balancer_lets_a_watch_outlive_every_operation() {
    let (Some(prod), Some(staging)) = (render(OVERLAY), render("deploy/overlays/staging")) else {
        return;
    };
    let app = common::TestApp::spawn().await;
    let deadlines = kineticd::ops::registry(&app.db, &app.state.cloud, false).deadlines();
    let (kind, longest) = deadlines
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("operation kinds");
    assert!(*longest >= 3600.0, "{deadlines:?}");
    for docs in [&prod, &staging] {
        let policy = object(docs, "GCPBackendPolicy", "kineticd");
        let timeout = seconds(&policy["spec"]["default"]["timeoutSec"], "timeoutSec");
        assert!(
            timeout as f64 > *longest,
            "timeoutSec {timeout} cuts a :watch of {kind} (deadline {longest} s)"
        );
    }
}

/// HTTPS only with TLS 1.2+ (an SSL policy on the Gateway), plain HTTP answered with a
/// redirect and nothing else, and the service's route on the HTTPS listener alone.
#[test]
fn the_gateway_serves_https_only_and_redirects_http() {
    for overlay in [OVERLAY, "deploy/overlays/staging"] {
        let Some(docs) = render(overlay) else { return };
        let gateway = object(&docs, "Gateway", "kineticd");
        let listeners = gateway["spec"]["listeners"].as_array().expect("listeners");
        let by_name = |n: &str| {
            listeners
                .iter()
                .find(|l| l["name"] == n)
                .unwrap_or_else(|| panic!("{overlay}: no listener {n}"))
        };
        assert_eq!(by_name("https")["protocol"], "HTTPS", "{overlay}");
        assert_eq!(by_name("http")["protocol"], "HTTP", "{overlay}");
        let tls = object(&docs, "GCPGatewayPolicy", "kineticd");
        assert_eq!(tls["spec"]["targetRef"]["kind"], "Gateway", "{overlay}");
        assert_eq!(
            tls["spec"]["default"]["sslPolicy"], "kineticd-tls",
            "{overlay}"
        );

        let service = object(&docs, "HTTPRoute", "kineticd");
        assert_eq!(
            service["spec"]["parentRefs"][0]["sectionName"], "https",
            "{overlay}: the service is reached over HTTPS only"
        );
        let redirect = object(&docs, "HTTPRoute", "kineticd-redirect");
        assert_eq!(redirect["spec"]["parentRefs"][0]["sectionName"], "http");
        assert_eq!(
            redirect["spec"]["hostnames"], service["spec"]["hostnames"],
            "{overlay}: the redirect covers the service's host"
        );
        let rules = redirect["spec"]["rules"].as_array().expect("rules");
        assert_eq!(rules.len(), 1, "{overlay}");
        assert!(
            rules[0].get("backendRefs").is_none(),
            "{overlay}: nothing served over HTTP"
        );
        let filter = &rules[0]["filters"][0];
        assert_eq!(filter["type"], "RequestRedirect");
        assert_eq!(filter["requestRedirect"]["scheme"], "https");
        assert_eq!(filter["requestRedirect"]["statusCode"], 301);
    }
}
