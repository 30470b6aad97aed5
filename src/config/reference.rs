//! The configuration reference (`kineticd config-reference`, committed as
//! `docs/configuration.md`), generated from the code that reads the configuration: the
//! flags and variables of every command come from their clap definitions (the same
//! objects that parse them), the variables read outside clap from [`env_only`], whose
//! names are the ones `GcpConfig` and `ManifestConfig` look up (a unit test records
//! their lookups).
//!
//! Invariant: every variable kineticd reads has exactly one row, with its default and
//! meaning; nothing here changes how a value is parsed.

use clap::Command;

use crate::cloud::gcp::config::{GcpConfig, Service};
use crate::cloud::kube::manifests::ManifestConfig;

/// One row of the reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// Environment variable (`None`: a flag only).
    pub env: Option<String>,
    /// `--flag` (`None`: an environment variable only).
    pub flag: Option<String>,
    /// The default, as written in a shell (empty: none, or as the meaning says).
    pub default: String,
    pub meaning: String,
}

/// The flags of one command, in declaration order (help and version left out).
pub fn command_variables(cmd: &Command) -> Vec<Variable> {
    cmd.get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .map(|a| Variable {
            env: a.get_env().map(|e| e.to_string_lossy().into_owned()),
            flag: a.get_long().map(|l| format!("--{l}")),
            default: a
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(","),
            meaning: a
                .get_long_help()
                .or(a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default(),
        })
        .collect()
}

/// Variables `serve` reads from the environment only (Google endpoints, manifests, logs).
pub fn env_only() -> Vec<Variable> {
    let env = |name: &str, default: &str, meaning: &str| Variable {
        env: Some(name.to_owned()),
        flag: None,
        default: default.to_owned(),
        meaning: meaning.to_owned(),
    };
    let mut out = vec![env(
        "KINETIC_GCP_URL",
        "",
        "One root URL for every Google API, each under its own prefix (`container/v1/`, \
         `compute/v1/`, ...): a simulator, as `kineticd sim` prints it. Unset: Google's \
         endpoints, or with --dev the built-in simulator",
    )];
    let google = GcpConfig::google();
    for s in Service::ALL {
        out.push(env(
            &s.env_var(),
            google.url(s).as_str(),
            &format!(
                "Base URL of the `{}` API alone (an emulator); wins over KINETIC_GCP_URL",
                s.name()
            ),
        ));
    }
    out.push(env(
        "STORAGE_EMULATOR_HOST",
        "",
        "A Cloud Storage emulator (`host:port` or a URL), as Google's client libraries \
         read it; wins over KINETIC_GCP_URL for storage",
    ));
    out.push(env(
        "KINETIC_GCP_AUTH",
        "google",
        "Credentials of Google calls: `google` (Application Default Credentials: Workload \
         Identity on GKE) or `none` (emulators). Default `none` when KINETIC_GCP_URL is set",
    ));
    out.push(env(
        crate::cloud::gcp::config::CALL_TIMEOUT_VAR,
        &crate::cloud::gcp::config::DEFAULT_CALL_TIMEOUT
            .as_secs()
            .to_string(),
        "Seconds one call to a Google API or a cluster's Kubernetes API may take before it \
         is given up (a retryable timeout: its step tries again with backoff)",
    ));
    out.push(env(
        crate::cloud::gcp::config::RETRY_VAR,
        &crate::cloud::retry::DEFAULT_REQUEST_WINDOW
            .as_secs()
            .to_string(),
        "Seconds a cloud call made while answering a request (preview, the checks before \
         an operation is accepted, live status, placement) may keep retrying a retryable \
         answer (429, 5xx, a timeout) with jittered backoff; `:diagnose` stops at its own \
         checkTimeout, and an operation's steps retry each call for up to 60 s",
    ));
    out.push(env(
        crate::cloud::gcp::config::RATE_VAR,
        &crate::cloud::rate::DEFAULT_CEILING.to_string(),
        "Most requests per second sent to one project's Google API (compute, container, \
         ...). Google's 429s lower the rate of that project's API (to 70% of what was \
         sent, at most once a second), successes raise it back; see the \
         kineticd_cloud_rate_limit metric and the `apis` check of `:diagnose`. Against a \
         simulator at KINETIC_SIM_SPEED > 1 it is multiplied by that speed, as its clock is",
    ));
    out.push(env(
        crate::cloud::gcp::config::CLOCK_VAR,
        "",
        "The cloud's clock, which usage, idle rules and TTLs are measured on: `wall` (this \
         machine's clock) or the URL of a simulator's `/sim/v1/clock`. Unset: the \
         simulator's clock when KINETIC_GCP_URL names one (and with --dev), else `wall`",
    ));
    let manifests = ManifestConfig::default().env();
    for (url_var, url) in manifests.iter().filter(|(n, _)| n.ends_with("_URL")) {
        let what = if url_var.contains("LWS") {
            "LeaderWorkerSet"
        } else {
            "NVIDIA driver installer"
        };
        let sha_var = url_var.replace("_URL", "_SHA256");
        let sha = manifests.iter().find(|(n, _)| *n == sha_var);
        out.push(env(
            url_var,
            url,
            &format!("Where the {what} manifest applied to every cluster is fetched"),
        ));
        out.push(env(
            &sha_var,
            sha.map_or("", |(_, v)| v.as_str()),
            &format!(
                "sha256 the {what} manifest must have (64 hex digits). Setting the URL drops \
                 the built-in digest; without a digest, the first download pins it"
            ),
        ));
    }
    out.push(env(
        "RUST_LOG",
        "info,sqlx=warn,tower_http=info",
        "Log filter (tracing's EnvFilter syntax, for example `info,kineticd=debug`)",
    ));
    out
}

const HEADER: &str = "\
# Configuration reference

<!-- Generated by `kineticd config-reference` from the code (src/config/, src/cli/,
     src/config/reference.rs); do not edit by hand. tests/docs.rs fails when this file
     differs from the command's output. Regenerate it with:
     cargo run -- config-reference > docs/configuration.md -->

Every flag of a command also reads the environment variable named next to it (the flag
wins when both are set). Empty values count as unset. `serve` validates everything
before it starts anything and exits with one message naming the variable at fault. In
the GKE manifests (`deploy/`), these variables are set by the Deployment and its
ConfigMap; see [deploying.md](deploying.md).
";

/// The whole reference as markdown, for the commands of `root` that take flags.
pub fn markdown(root: &Command) -> String {
    let mut out = String::from(HEADER);
    for cmd in root.get_subcommands() {
        let vars = command_variables(cmd);
        if vars.is_empty() {
            continue;
        }
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        out.push_str(&format!(
            "\n## `kineticd {}`\n\n{about}\n\n",
            cmd.get_name()
        ));
        table(&mut out, &vars, true);
        if cmd.get_name() == "serve" {
            out.push_str(
                "\n### Read from the environment only (`serve`)\n\n\
                 Where Google's APIs and the manifests applied to clusters come from, and \
                 the log filter.\n\n",
            );
            table(&mut out, &env_only(), false);
        }
    }
    out
}

fn table(out: &mut String, vars: &[Variable], with_flag: bool) {
    if with_flag {
        out.push_str("| variable | flag | default | meaning |\n|---|---|---|---|\n");
    } else {
        out.push_str("| variable | default | meaning |\n|---|---|---|\n");
    }
    for v in vars {
        let code = |s: &Option<String>| s.as_ref().map_or("".into(), |s| format!("`{s}`"));
        let default = if v.default.is_empty() {
            String::new()
        } else {
            format!("`{}`", v.default)
        };
        let meaning = cell(&v.meaning);
        if with_flag {
            out.push_str(&format!(
                "| {} | {} | {default} | {meaning} |\n",
                code(&v.env),
                code(&v.flag)
            ));
        } else {
            out.push_str(&format!("| {} | {default} | {meaning} |\n", code(&v.env)));
        }
    }
}

/// A table cell: one line, no unescaped pipe.
fn cell(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    use super::*;

    fn documented() -> BTreeSet<String> {
        env_only().into_iter().filter_map(|v| v.env).collect()
    }

    #[test]
    fn every_variable_read_outside_clap_is_documented() {
        let read = RefCell::new(BTreeSet::new());
        let record = |k: &str| {
            read.borrow_mut().insert(k.to_owned());
            None
        };
        GcpConfig::from_lookup(record).expect("defaults");
        ManifestConfig::from_lookup(record).expect("defaults");
        let missing: Vec<_> = read.borrow().difference(&documented()).cloned().collect();
        assert!(
            missing.is_empty(),
            "read but not in config::reference::env_only: {missing:?}"
        );
    }

    #[test]
    fn cells_stay_on_one_line() {
        assert_eq!(cell("a |\n  b"), "a \\| b");
    }
}
