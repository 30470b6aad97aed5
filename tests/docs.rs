//! The documents in `docs/` against the code they describe: the configuration reference
//! is exactly what `kineticd config-reference` prints, and names every variable that
//! `kineticd sim` tells `serve` to set and that the GKE Deployment sets; the deploying
//! guide grants exactly the roles of deploy/README.md's team-project table; links between
//! the documents (and their anchors) resolve.

mod common;

use std::collections::BTreeSet;

use common::shell::{fenced_blocks, repo_file};

/// The variables the reference documents (first column of its tables).
fn documented_variables() -> BTreeSet<String> {
    repo_file("docs/configuration.md")
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// `docs/{doc}` is exactly what `kineticd {command}` prints.
fn assert_generated(command: &str, doc: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kineticd"))
        .arg(command)
        .output()
        .unwrap_or_else(|e| panic!("run kineticd {command}: {e}"));
    assert!(out.status.success(), "{out:?}");
    let generated = String::from_utf8(out.stdout).expect("utf-8");
    let committed = repo_file(&format!("docs/{doc}"));
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
            "docs/{doc} is out of date; regenerate it with `cargo run -- {command} > docs/{doc}`. First difference at {first}"
        );
    }
}

#[test]
fn configuration_reference_is_generated_from_the_code() {
    assert_generated("config-reference", "configuration.md");
}

/// The reason catalogue (tests/errors_doc.rs holds it to the code).
#[test]
fn errors_reference_is_generated_from_the_code() {
    assert_generated("errors-reference", "errors.md");
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

/// GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Relative links `](path#anchor)` of a markdown text.
fn relative_links(text: &str) -> Vec<(String, Option<String>)> {
    text.match_indices("](")
        .filter_map(|(at, _)| text[at + 2..].split(')').next())
        .filter(|l| !l.contains("://") && !l.starts_with('#') && !l.is_empty())
        .map(|l| match l.split_once('#') {
            Some((p, a)) => (p.to_owned(), Some(a.to_owned())),
            None => (l.to_owned(), None),
        })
        .collect()
}

#[test]
fn links_between_the_documents_resolve() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = vec!["README.md".to_owned(), "deploy/README.md".to_owned()];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry
            .expect("entry")
            .file_name()
            .into_string()
            .expect("utf-8");
        if name.ends_with(".md") {
            sources.push(format!("docs/{name}"));
        }
    }
    for source in sources {
        let dir = std::path::Path::new(&source).parent().expect("a folder");
        for (path, anchor) in relative_links(&repo_file(&source)) {
            let target = normalize(&dir.join(&path));
            assert!(
                root.join(&target).exists(),
                "{source} links to {path}, which does not exist"
            );
            let Some(anchor) = anchor else { continue };
            let headings = anchors(&repo_file(&target));
            assert!(
                headings.contains(&anchor),
                "{source} links to {path}#{anchor}, a heading {target} does not have"
            );
        }
    }
}

/// The anchors of a markdown text's headings (not of `#` lines in code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `a/../b` as `b` (paths inside the repository).
fn normalize(p: &std::path::Path) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.iter().map(|c| c.to_str().expect("utf-8")) {
        match c {
            ".." => {
                parts.pop();
            }
            "." => {}
            c => parts.push(c),
        }
    }
    parts.join("/")
}
