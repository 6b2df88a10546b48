//! The README's crate table is the architecture a newcomer reads first: it must say exactly
//! what the manifests say, or it teaches a graph the compiler does not enforce.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Our crates' names start with this; the table names them without it.
const PREFIX: &str = "ai-smartness-";

type Graph = BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)>;

/// Each package of the workspace: (our crates, other crates) among its normal dependencies.
fn manifests() -> Graph {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let ours: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut graph = Graph::new();
    for p in packages {
        let name = p["name"]
            .as_str()
            .expect("a package has a name")
            .to_string();
        let (mut mine, mut other) = (BTreeSet::new(), BTreeSet::new());
        for d in p["dependencies"].as_array().into_iter().flatten() {
            if !d["kind"].is_null() {
                continue; // dev and build dependencies are not the architecture
            }
            let dep = d["name"].as_str().expect("a dependency has a name");
            if ours.contains(dep) {
                mine.insert(dep.trim_start_matches(PREFIX).to_string());
            } else {
                other.insert(dep.to_string());
            }
        }
        graph.insert(name, (mine, other));
    }
    graph
}

/// The README's table: `| \`crate\` | ours, ... | others, ... |`, "(none)" for an empty cell.
fn readme_table() -> Graph {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme
        .find("| crate | our crates it depends on | other crates |")
        .expect("the README has the crate table");
    let cell = |s: &str| -> BTreeSet<String> {
        s.split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty() && *w != "(none)")
            .map(str::to_string)
            .collect()
    };
    let mut graph = Graph::new();
    for line in readme[start..].lines().skip(2) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() != 5 {
            break;
        }
        let name = cells[1].trim_matches('`').to_string();
        graph.insert(name, (cell(cells[2]), cell(cells[3])));
    }
    graph
}

#[test]
fn readme_crate_table_is_what_the_manifests_say() {
    let want = manifests();
    let have = readme_table();
    let mut wrong = Vec::new();
    for (name, deps) in &want {
        match have.get(name) {
            None => wrong.push(format!("{name}: missing from the README's table")),
            Some(h) if h != deps => wrong.push(format!(
                "{name}: the README says {h:?}, the manifests {deps:?}"
            )),
            Some(_) => {}
        }
    }
    for name in have.keys().filter(|n| !want.contains_key(*n)) {
        wrong.push(format!(
            "{name}: in the README's table, not in the workspace"
        ));
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn hooks_crate_is_at_the_top_level() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for entry in [
        "Cargo.toml",
        "src",
        "hooks",
        "install.sh",
        "tests",
        ".ai-template",
        "README.md",
    ] {
        assert!(root.join(entry).exists(), "{entry} at the top level");
    }
    let manifest =
        std::fs::read_to_string(root.join("hooks/Cargo.toml")).expect("hooks/Cargo.toml");
    assert!(manifest.contains("name = \"ai-smartness-hooks\""));
}
