//! The real `kubectl` for tests: a private kubeconfig (bearer token, `insecure-skip-tls-verify`
//! for the TLS front's self-signed certificate) and cache per instance, and a check that
//! kubectl is installed that fails instead of skipping under KINETIC_REQUIRE_KUBECTL=1.

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Whether kubectl runs here (None: skip, after saying so).
pub fn kubectl_available() -> bool {
    match Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    {
        Ok(o) if o.status.success() => true,
        other if std::env::var("KINETIC_REQUIRE_KUBECTL").as_deref() == Ok("1") => {
            panic!("kubectl is required (KINETIC_REQUIRE_KUBECTL=1): {other:?}")
        }
        other => {
            eprintln!(
                "SKIPPED: kubectl not available ({other:?}); set KINETIC_REQUIRE_KUBECTL=1 to fail instead"
            );
            false
        }
    }
}

/// kubectl with a kubeconfig for one simulated cluster and a private cache.
pub struct Kubectl {
    dir: PathBuf,
}

impl Kubectl {
    /// kubectl as the cluster's administrator.
    pub fn new(server: &str) -> Kubectl {
        Kubectl::with_token(server, "simulated")
    }

    /// kubectl sending bearer `token` (`user:EMAIL` authenticates as that user).
    pub fn with_token(server: &str, token: &str) -> Kubectl {
        let dir = std::env::temp_dir().join(format!(
            "kineticd-kubectl-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        // The TLS front's certificate is self-signed.
        let insecure = if server.starts_with("https:") {
            "\n    insecure-skip-tls-verify: true"
        } else {
            ""
        };
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {server}{insecure}\n\
             contexts:\n- name: sim\n  context: {{cluster: sim, user: sim, namespace: default}}\n\
             current-context: sim\nusers:\n- name: sim\n  user: {{token: \"{token}\"}}\n"
        );
        std::fs::write(dir.join("config"), config).expect("kubeconfig");
        Kubectl { dir }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.env("KUBECONFIG", self.dir.join("config"))
            .env("HOME", &self.dir)
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .args(args);
        c
    }

    /// Run kubectl; (success, stdout, stderr).
    pub fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn kubectl");
        {
            use std::io::Write;
            let mut input = child.stdin.take().expect("stdin");
            if let Some(text) = stdin {
                input.write_all(text.as_bytes()).expect("write stdin");
            }
        }
        let out = child.wait_with_output().expect("kubectl output");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.success(), text(&out.stdout), text(&out.stderr))
    }

    /// Run kubectl, which must succeed; its stdout.
    pub fn ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (ok, out, err) = self.run(args, stdin);
        assert!(ok, "kubectl {args:?} failed:\n{err}\n{out}");
        out
    }
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Job a member runs (busybox, `true`).
pub const JOB: &str = r#"apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
        command: ["true"]
"#;

/// `kubectl auth can-i` as `k`: true for "yes" (exit 0), false for "no" (exit 1).
pub fn can_i(k: &Kubectl, args: &[&str]) -> bool {
    let mut all = vec!["auth", "can-i"];
    all.extend(args);
    let (ok, out, err) = k.run(&all, None);
    assert_eq!(out.trim(), if ok { "yes" } else { "no" }, "{all:?}: {err}");
    ok
}
