//! The layer check: every `crate::...` path in `src/**/*.rs` (in `use` items, grouped
//! `use crate::{a::b, c}` and inline paths in code) must run along the layers that the
//! README's "How it works" section draws.
//!
//! Invariant: a file belongs to the layer of its top-level module (`src/api/**` is `api`,
//! `src/config/mod.rs` is `config`); an edge from one layer to another is allowed only if
//! [`ALLOWED`] lists it. Comments, doc comments and string literals are not code and
//! are skipped. SQL (`sqlx::query*`) is written only in `src/store/` (and `src/devdb/`).
//! The checker tests itself on snippets that must and must not be caught.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Which layers (or, as `a::b`, which modules of a layer) each layer may use. A layer not
/// named here may use none; the composition roots (`main`, `lib`, `app`, `cli`) may use
/// every layer.
const ALLOWED: &[(&str, &[&str])] = &[
    // The REST surface: handlers call service functions only; `model` is the wire
    // model, `auth` verifies identities, `domain` the typed names.
    ("api", &["service", "model", "domain", "auth"]),
    // The web console: HTML over the same service functions as the API, the same
    // authenticator; it never imports `api` (nothing does) and nothing imports it but
    // the composition roots.
    ("console", &["service", "model", "domain", "auth"]),
    // Use cases: access checks, validation, plans, records, the queue; live cloud reads
    // (status, zone and quota checks, the bucket check of `down`) but never cloud writes.
    // `ops` here is the queue, its events and step records, and the workflows' input types.
    (
        "service",
        &["store", "ops", "plan", "cloud", "model", "domain"],
    ),
    // The engine and its workflows: plans carried out against the cloud, recorded in the store.
    ("ops", &["plan", "cloud", "store", "model", "domain"]),
    // Pure planning: what to create or delete, from typed inputs.
    ("plan", &["model", "domain"]),
    // SQL lives here and only here.
    ("store", &["model", "domain"]),
    // Google and Kubernetes clients; `auth` only for the process-wide TLS provider.
    ("cloud", &["domain", "auth"]),
    // The simulator speaks the cloud's wire types only: the Google resource types, the
    // Kubernetes quantity format, the Storage object-name encoding, and the manifest
    // pins it serves.
    (
        "sim",
        &[
            "cloud::gcp::types",
            "cloud::gcp::storage::encode",
            "cloud::kube::quantity",
            "cloud::kube::manifests",
            "domain",
        ],
    ),
    // The API's wire model.
    ("model", &["domain"]),
    ("domain", &[]),
    ("auth", &["domain"]),
    // Leaves for the composition roots: settings build the cloud clients' configuration.
    ("config", &["cloud", "domain"]),
    ("telemetry", &["config"]),
    ("devdb", &[]),
];

/// The composition roots wire everything together and may use any layer.
const ROOTS: &[&str] = &["main", "lib", "app", "cli"];

/// One use of another layer: `file:line` uses `path` (of layer `to`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    file: String,
    line: usize,
    from: String,
    to: String,
    path: String,
}

impl std::fmt::Display for Edge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: {} -> {} (crate::{})",
            self.file, self.line, self.from, self.to, self.path
        )
    }
}

/// The layer of a file under `src/`: its top-level module.
fn layer_of(rel: &str) -> String {
    let rest = rel.strip_prefix("src/").unwrap_or(rel);
    let first = rest.split('/').next().unwrap_or(rest);
    first.trim_end_matches(".rs").to_owned()
}

/// The module path of a file below `src/` (`src/api/mod.rs` is `[api]`).
fn module_path(rel: &str) -> Vec<String> {
    let rest = rel.strip_prefix("src/").unwrap_or(rel);
    let mut parts: Vec<String> = rest
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// `src` with comments, string and char literals blanked (newlines kept, so line
/// numbers still hold).
fn code_only(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                blank(&mut out, b[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if c == 'r' && matches!(next, Some('#' | '"')) && !ident_before(&b, i) {
            i = skip_raw_string(&b, i, &mut out);
        } else if c == '"' || (c == '\'' && is_char_literal(&b, i)) {
            i = skip_string(&b, i, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `'x'`, `'\n'`, `'\''` (not a lifetime such as `'a`).
fn is_char_literal(b: &[char], i: usize) -> bool {
    matches!(
        (b.get(i + 1), b.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Blank a `"..."` or `'...'` literal starting at `i`; the index after it.
fn skip_string(b: &[char], mut i: usize, out: &mut String) -> usize {
    let quote = b[i];
    out.push(' ');
    i += 1;
    while i < b.len() {
        let c = b[i];
        out.push(if c == '\n' { '\n' } else { ' ' });
        i += 1;
        if c == '\\' && i < b.len() {
            out.push(if b[i] == '\n' { '\n' } else { ' ' });
            i += 1;
        } else if c == quote {
            break;
        }
    }
    i
}

/// Blank an `r#"..."#` literal starting at `i`; the index after it.
fn skip_raw_string(b: &[char], mut i: usize, out: &mut String) -> usize {
    let start = i;
    i += 1;
    let mut hashes = 0;
    while b.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    if b.get(i) != Some(&'"') {
        // `r#ident` (a raw identifier): plain code.
        out.extend(&b[start..i]);
        return i;
    }
    out.extend(std::iter::repeat_n(' ', i - start + 1));
    i += 1;
    while i < b.len() {
        if b[i] == '"'
            && b[i + 1..]
                .iter()
                .take(hashes)
                .filter(|c| **c == '#')
                .count()
                == hashes
        {
            out.extend(std::iter::repeat_n(' ', hashes + 1));
            return i + 1 + hashes;
        }
        out.push(if b[i] == '\n' { '\n' } else { ' ' });
        i += 1;
    }
    i
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The paths of a `{...}` group starting at `i`, nested groups expanded
/// (`{a::b, c::{d, e::f}}` gives `a::b`, `c::d` and `c::e::f`), as (path, offset) pairs.
fn group_items(code: &[char], i: usize) -> Vec<(String, usize)> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut at_item_start = false;
    let mut j = i;
    while j < code.len() {
        match code[j] {
            '{' => {
                depth += 1;
                at_item_start = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => at_item_start = true,
            // One item per entry: `Router as CRouter` is `Router`.
            c if depth == 1 && at_item_start && is_ident(c) => {
                items.extend(expand(code, j));
                at_item_start = false;
            }
            _ => {}
        }
        j += 1;
    }
    items
}

/// The path starting at `i`, or the paths of the group it ends in (`a::{b, c}`).
fn expand(code: &[char], i: usize) -> Vec<(String, usize)> {
    let path = path_at(code, i);
    let after = i + path.len();
    if code.get(after) == Some(&':') && code.get(after + 2) == Some(&'{') {
        return group_items(code, after + 2)
            .into_iter()
            .map(|(p, at)| match p.as_str() {
                "self" => (path.clone(), at),
                _ => (format!("{path}::{p}"), at),
            })
            .collect();
    }
    vec![(path, i)]
}

/// The `a::b::c` path starting at `i` (stops before `{`, `*` or anything else).
fn path_at(code: &[char], mut i: usize) -> String {
    let mut path = String::new();
    loop {
        let start = i;
        while i < code.len() && is_ident(code[i]) {
            i += 1;
        }
        path.extend(&code[start..i]);
        if code.get(i) == Some(&':') && code.get(i + 1) == Some(&':') {
            let after = code.get(i + 2).copied().unwrap_or(' ');
            if is_ident(after) {
                path.push_str("::");
                i += 2;
                continue;
            }
        }
        return path;
    }
}

fn line_of(code: &[char], offset: usize) -> usize {
    code[..offset].iter().filter(|c| **c == '\n').count() + 1
}

/// Every path into the crate in `src` of file `rel`, as (path below the crate root, line):
/// `crate::...` (grouped or not) and `super::` chains that climb to the crate root.
fn crate_paths(rel: &str, src: &str) -> Vec<(String, usize)> {
    paths_from_root(rel, src, false)
}

/// Like [`crate_paths`], and with `relative` also the `super::` and `self::` paths that
/// stay below the root, resolved against the file's module (`super::x` in
/// `src/a/b.rs` is `a::x`).
fn paths_from_root(rel: &str, src: &str, relative: bool) -> Vec<(String, usize)> {
    let code: Vec<char> = without_test_modules(&code_only(src)).chars().collect();
    let module = module_path(rel);
    let depth = module.len();
    let inline_mods = src.contains("mod ") && src.contains('{') && has_inline_mod(&code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if !is_ident(code[i]) || (i > 0 && (is_ident(code[i - 1]) || code[i - 1] == '$')) {
            i += 1;
            continue;
        }
        let word = path_at(code.as_slice(), i);
        // (the path's base below the root, where the rest of the path starts)
        let start: Option<(Vec<String>, usize)> = if word == "crate" || word.starts_with("crate::")
        {
            Some((Vec::new(), i + "crate::".len()))
        } else if word.starts_with("super::") && !inline_mods {
            let supers = word.split("::").take_while(|s| *s == "super").count();
            let at = i + supers * "super::".len();
            if supers >= depth {
                Some((Vec::new(), at))
            } else {
                relative.then(|| (module[..depth - supers].to_vec(), at))
            }
        } else if word.starts_with("self::") && relative && !inline_mods {
            Some((module.clone(), i + "self::".len()))
        } else {
            None
        };
        if let Some((base, rest_at)) = start
            && code.get(rest_at - 2) == Some(&':')
        {
            let paths = if code.get(rest_at) == Some(&'{') {
                group_items(&code, rest_at)
            } else {
                expand(&code, rest_at)
            };
            let prefix: String = base.iter().map(|m| format!("{m}::")).collect();
            out.extend(
                paths
                    .into_iter()
                    .map(|(p, at)| (format!("{prefix}{p}"), line_of(&code, at))),
            );
        }
        i += word.len().max(1);
    }
    out
}

/// The import circles among the files of one folder: strongly connected sets of sibling
/// modules (`a.rs` or `a/mod.rs` is module `a` of its folder) that use each other.
fn folder_circles(files: &[(String, String)]) -> Vec<Vec<String>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(rel, _)| module_path(rel)).collect();
    let mut edges: std::collections::BTreeMap<Vec<String>, BTreeSet<Vec<String>>> =
        Default::default();
    for (rel, src) in files {
        let from = module_path(rel);
        let Some((_, folder)) = from.split_last() else {
            continue;
        };
        for (path, _) in paths_from_root(rel, src, true) {
            let parts: Vec<String> = path.split("::").map(str::to_owned).collect();
            let target = (1..=parts.len())
                .rev()
                .map(|k| parts[..k].to_vec())
                .find(|m| modules.contains(m));
            if let Some(to) = target
                && to != from
                && to.split_last().is_some_and(|(_, f)| f == folder)
            {
                edges.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    // Two modules are in one circle when each reaches the other.
    let reach = |a: &Vec<String>| -> BTreeSet<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![a.clone()];
        while let Some(m) = todo.pop() {
            for n in edges.get(&m).into_iter().flatten() {
                if seen.insert(n.clone()) {
                    todo.push(n.clone());
                }
            }
        }
        seen
    };
    let reached: std::collections::BTreeMap<&Vec<String>, BTreeSet<Vec<String>>> =
        edges.keys().map(|m| (m, reach(m))).collect();
    let mut circles: BTreeSet<Vec<String>> = BTreeSet::new();
    for (m, r) in &reached {
        let mut circle: Vec<String> = r
            .iter()
            .filter(|n| reached.get(n).is_some_and(|back| back.contains(*m)))
            .map(|n| n.join("::"))
            .collect();
        if !circle.is_empty() {
            circle.push(m.join("::"));
            circle.sort();
            circle.dedup();
            circles.insert(circle);
        }
    }
    circles.into_iter().collect()
}

/// `code` with the bodies of `#[cfg(test)] mod name { ... }` blanked: unit tests may use
/// fixtures of any layer (the simulator's CA certificate, say) without it being a
/// dependency of the product.
fn without_test_modules(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let text: Vec<char> = out.clone();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut i = 0;
    while i + marker.len() <= text.len() {
        if text[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let after: String = text[i + marker.len()..].iter().take(200).collect();
        let item = after.trim_start();
        let is_mod = item.starts_with("mod ") || item.starts_with("pub mod ");
        let open = text[i..].iter().position(|c| *c == '{').map(|o| i + o);
        let semi = text[i..].iter().position(|c| *c == ';').map(|o| i + o);
        match open {
            Some(open) if is_mod && semi.is_none_or(|s| s > open) => {
                let mut depth = 0;
                let mut j = open;
                while j < text.len() {
                    match text[j] {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        _ => {}
                    }
                    if text[j] != '\n' {
                        out[j] = ' ';
                    }
                    j += 1;
                    if depth == 0 {
                        break;
                    }
                }
                i = j;
            }
            _ => i += marker.len(),
        }
    }
    out.into_iter().collect()
}

/// Whether the file declares a module with a body (`mod tests { ... }`), inside which
/// `super::` climbs less far than the file's path says.
fn has_inline_mod(code: &[char]) -> bool {
    let text: String = code.iter().collect();
    text.split("mod ").skip(1).any(|rest| {
        let name_end = rest.find(|c: char| !is_ident(c)).unwrap_or(rest.len());
        rest[name_end..].trim_start().starts_with('{')
    })
}

/// Whether `path` is `prefix` or below it (`cloud::gcp::types::iam` is within
/// `cloud::gcp::types`; `cloud::gcp::typesx` is not).
fn within(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with("::"))
}

/// The forbidden edges of file `rel` with source `src`.
fn violations(rel: &str, src: &str) -> Vec<Edge> {
    let from = layer_of(rel);
    if ROOTS.contains(&from.as_str()) {
        return Vec::new();
    }
    let allowed: &[&str] = ALLOWED
        .iter()
        .find(|(l, _)| *l == from)
        .map(|(_, a)| *a)
        .unwrap_or(&[]);
    crate_paths(rel, src)
        .into_iter()
        .filter_map(|(path, line)| {
            let to = path.split("::").next().unwrap_or("").to_owned();
            let ok = to.is_empty()
                || to == "self"
                || to == from
                || allowed.iter().any(|a| within(&path, a));
            (!ok).then(|| Edge {
                file: rel.to_owned(),
                line,
                from: from.clone(),
                to,
                path,
            })
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

fn crate_files() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(root)
                .expect("below the crate")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
            (rel, text)
        })
        .collect()
}

#[test]
fn imports_follow_the_layers() {
    let files = crate_files();
    assert!(files.len() > 100, "found only {} files", files.len());
    let known: BTreeSet<String> = ALLOWED
        .iter()
        .map(|(l, _)| l.to_string())
        .chain(ROOTS.iter().map(|r| r.to_string()))
        .collect();
    let unknown: BTreeSet<String> = files
        .iter()
        .map(|(rel, _)| layer_of(rel))
        .filter(|l| !known.contains(l))
        .collect();
    assert!(
        unknown.is_empty(),
        "modules without a layer (add them to ALLOWED and the README): {unknown:?}"
    );
    let bad: BTreeSet<Edge> = files
        .iter()
        .flat_map(|(rel, text)| violations(rel, text))
        .collect();
    assert!(
        bad.is_empty(),
        "{} imports against the layers (README, \"How it works\"):\n{}",
        bad.len(),
        bad.iter().map(|e| format!("  {e}\n")).collect::<String>()
    );
}

/// Where SQL is written: the store (and the private PostgreSQL of `--dev`).
const SQL_HOMES: &[&str] = &["src/store/", "src/devdb/"];

/// The lines of `src` (file `rel`) that run SQL outside [`SQL_HOMES`].
fn sql_outside_store(rel: &str, src: &str) -> Vec<usize> {
    if SQL_HOMES.iter().any(|home| rel.starts_with(home)) {
        return Vec::new();
    }
    let code = without_test_modules(&code_only(src));
    code.lines()
        .enumerate()
        .filter(|(_, l)| l.contains("sqlx::query") || l.contains("sqlx::raw_sql"))
        .map(|(n, _)| n + 1)
        .collect()
}

/// Circles that stay, each with why (issue 25 allows at most four): none today.
const ALLOWED_CIRCLES: &[(&[&str], &str)] = &[];

/// README ("Where a test lives"): no two files of one folder import each other, directly
/// or round a loop; a type both need lives in a module of its own.
#[test]
fn no_import_circles_inside_a_folder() {
    let circles: Vec<Vec<String>> = folder_circles(&crate_files())
        .into_iter()
        .filter(|c| {
            !ALLOWED_CIRCLES
                .iter()
                .any(|(members, _why)| c.iter().map(String::as_str).eq(members.iter().copied()))
        })
        .collect();
    assert!(
        circles.is_empty(),
        "import circles inside folders (move what both sides need into its own module):\n{}",
        circles
            .iter()
            .map(|c| c.join(" <-> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_circle_check_finds_a_circle_and_nothing_else() {
    let files = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(r, s)| (r.to_string(), s.to_string()))
            .collect()
    };
    let loop_ = files(&[
        ("src/a/mod.rs", "mod x; mod y; mod z;\n"),
        ("src/a/x.rs", "use super::y::Y;\n"),
        ("src/a/y.rs", "use crate::a::{z::Z, q};\n"),
        ("src/a/z.rs", "fn f() { self::g(); super::x::X::new(); }\n"),
    ]);
    assert_eq!(
        folder_circles(&loop_),
        [vec!["a::x".to_owned(), "a::y".into(), "a::z".into()]]
    );
    let chain = files(&[
        ("src/a/mod.rs", "use self::x::X;\n"),
        ("src/a/x.rs", "use super::y::Y;\n// use super::x;\n"),
        ("src/a/y.rs", "use crate::b::x::X;\n"),
        ("src/b/x.rs", "use crate::a::x::X;\n"),
    ]);
    assert!(
        folder_circles(&chain).is_empty(),
        "{:?}",
        folder_circles(&chain)
    );
}

#[test]
fn sql_only_in_the_store() {
    let bad: Vec<String> = crate_files()
        .iter()
        .flat_map(|(rel, text)| {
            sql_outside_store(rel, text)
                .into_iter()
                .map(move |line| format!("  {rel}:{line}\n"))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "SQL outside src/store/ (add a store function instead):\n{}",
        bad.concat()
    );
    let snippet = "// sqlx::query in a comment\nfn f() { sqlx::query_scalar(\"SELECT 1\"); }\n";
    assert_eq!(sql_outside_store("src/service/x.rs", snippet), [2]);
    assert!(sql_outside_store("src/store/x.rs", snippet).is_empty());
}

#[test]
fn the_checker_catches_a_bad_snippet() {
    let bad = r#"//! Docs may say crate::store::Db; strings too.
use crate::{
    service::clusters,
    store::{self, Db},
};
use crate::ops::queue::Idempotency;

fn f() -> &'static str {
    let _ = crate::app::http_client();
    let _c = 'c';
    // crate::sim::Sim in a comment is fine
    "crate::cloud::Cloud in a string is fine"
}
"#;
    let found: Vec<String> = violations("src/api/example.rs", bad)
        .iter()
        .map(|e| format!("{}:{}", e.line, e.path))
        .collect();
    assert_eq!(
        found,
        [
            "4:store",
            "4:store::Db",
            "6:ops::queue::Idempotency",
            "9:app::http_client"
        ]
    );
    // Unit tests may use fixtures of any layer; the code after them is checked again.
    let tests =
        "#[cfg(test)]\nmod tests {\n    use crate::sim::kube::CA_PEM;\n}\nuse crate::sim::Sim;\n";
    let found: Vec<usize> = violations("src/cloud/kube/client.rs", tests)
        .iter()
        .map(|e| e.line)
        .collect();
    assert_eq!(found, [5]);
}

#[test]
fn the_checker_allows_what_the_layers_allow() {
    let good = "use crate::service::{self, clusters::ClusterPath};\nuse crate::model::Operation;\nuse super::error::ApiError;\nfn f() { crate::domain::Email::parse(\"x\"); }\n";
    assert!(violations("src/api/example.rs", good).is_empty());
    // Composition roots may use anything.
    assert!(violations("src/app/mod.rs", "use crate::store::Db;").is_empty());
    // A `super::` chain that climbs to the crate root counts as `crate::`.
    let climb = "use super::super::super::store::Db;\nuse super::super::clusters::X;\n";
    assert_eq!(
        violations("src/api/x/y.rs", climb)
            .iter()
            .map(|e| e.to.as_str())
            .collect::<Vec<_>>(),
        ["store"]
    );
    // Nested groups are expanded, and a rule may name a module of a layer.
    let nested = "use crate::cloud::{gcp::types::{iam::Policy, compute::Zone as Z}, kube::quantity};\nuse crate::cloud::{Cloud, kube::{quantity, client::X}};\n";
    let found: Vec<String> = violations("src/sim/gcp/iam/mod.rs", nested)
        .iter()
        .map(|e| format!("{}:{}", e.line, e.path))
        .collect();
    assert_eq!(found, ["2:cloud::Cloud", "2:cloud::kube::client::X"]);
    // `domain` uses nothing of ours.
    assert_eq!(
        violations("src/domain/names.rs", "use crate::model::X;").len(),
        1
    );
}
