//! The documents in `docs/` against the code they describe: the configuration reference
//! is exactly what `kineticd config-reference` prints, and names every variable that
//! `kineticd sim` tells `serve` to set and that the GKE Deployment sets; the deploying
//! guide grants exactly the roles of deploy/README.md's team-project table.

mod common;

use std::collections::BTreeSet;

use common::shell::{fenced_blocks, repo_file};

const REGENERATE: &str = "cargo run -- config-reference > docs/configuration.md";

/// The variables the reference documents (first column of its tables).
fn documented_variables() -> BTreeSet<String> {
    repo_file("docs/configuration.md")
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn configuration_reference_is_generated_from_the_code() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kineticd"))
        .arg("config-reference")
        .output()
        .expect("run kineticd config-reference");
    assert!(out.status.success(), "{out:?}");
    let generated = String::from_utf8(out.stdout).expect("utf-8");
    let committed = repo_file("docs/configuration.md");
    if generated != committed {
        let first = generated
            .lines()
            .zip(committed.lines())
            .position(|(a, b)| a != b)
            .map_or("(lengths differ)".to_owned(), |i| {
                format!(
                    "line {}:\n  generated: {}\n  committed: {}",
                    i + 1,
                    generated.lines().nth(i).unwrap_or(""),
                    committed.lines().nth(i).unwrap_or("")
                )
            });
        panic!(
            "docs/configuration.md is out of date; regenerate it with `{REGENERATE}`. First difference at {first}"
        );
    }
    for var in [
        "DATABASE_URL",
        "KINETIC_IAP_AUDIENCE",
        "KINETIC_GCP_URL",
        "RUST_LOG",
    ] {
        assert!(documented_variables().contains(var), "{var} undocumented");
    }
}

#[tokio::test]
async fn what_kineticd_sim_exports_is_documented() {
    let (sim, _) = kineticd::sim::Sim::start(
        kineticd::sim::SimConfig::default(),
        "127.0.0.1:0".parse().expect("address"),
    )
    .await
    .expect("start the simulator");
    let documented = documented_variables();
    for (name, _) in sim.serve_env() {
        assert!(
            documented.contains(&name),
            "`kineticd sim` exports {name}, which docs/configuration.md does not document"
        );
    }
}

#[test]
fn the_deployment_sets_only_documented_variables() {
    let documented = documented_variables();
    let deployment = repo_file("deploy/base/app/deployment.yaml");
    let set: Vec<&str> = deployment
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- name: "))
        .filter(|n| n.starts_with("KINETIC_") || *n == "DATABASE_URL")
        .collect();
    assert!(set.contains(&"KINETIC_IAP_AUDIENCE"), "{set:?}");
    for name in set {
        assert!(
            documented.contains(name),
            "the Deployment sets {name}, which docs/configuration.md does not document"
        );
    }
}

/// Roles named in `text` (`roles/...`, up to a character that cannot be in one).
fn roles_in(text: &str) -> BTreeSet<String> {
    text.match_indices("roles/")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_'))
                .collect()
        })
        .collect()
}

#[test]
fn the_deploying_guide_grants_the_team_project_roles() {
    let readme = repo_file("deploy/README.md");
    let table_at = readme
        .find("### Roles on each team project")
        .expect("deploy/README.md has its team-project roles table");
    let table: String = readme[table_at..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split('|').nth(2).unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ");
    let mut wanted = roles_in(&table);
    // Granted with its condition by the command deploy/README.md shows after the table.
    assert!(wanted.remove("roles/resourcemanager.projectIamAdmin"));
    let guide = repo_file("docs/deploying.md");
    let loops: Vec<String> = fenced_blocks(&guide, "```sh")
        .into_iter()
        .filter(|b| b.contains("TEAM_PROJECT") && b.contains("for role in"))
        .collect();
    assert_eq!(
        loops.len(),
        1,
        "docs/deploying.md has one role-granting loop"
    );
    assert_eq!(
        roles_in(&loops[0]),
        wanted,
        "docs/deploying.md's loop must grant exactly the roles of deploy/README.md's table"
    );
}
