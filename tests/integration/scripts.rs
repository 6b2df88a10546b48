//! The scripts a user runs on their own machine (`install.sh`, the asset fetch it calls, the
//! plugin's hook scripts) must run under macOS's bash, 3.2: none of bash 4's features.

use std::path::Path;

/// Bash 4 (and later) features, as they are spelled in a script, with what to use instead.
const BASH4: &[(&str, &str)] = &[
    ("declare -A", "indexed arrays side by side"),
    ("local -A", "indexed arrays side by side"),
    ("typeset -A", "indexed arrays side by side"),
    ("mapfile", "a while-read loop"),
    ("readarray", "a while-read loop"),
    (",,}", "tr '[:upper:]' '[:lower:]'"),
    ("^^}", "tr '[:lower:]' '[:upper:]'"),
    ("[[ -v ", "${name+set}"),
    ("local -n", "no name references"),
    ("declare -n", "no name references"),
    ("declare -g", "a global assignment"),
    ("&>>", ">>file 2>&1"),
    ("|&", "2>&1 |"),
    ("coproc", "a background job and a fifo"),
    ("wait -n", "wait on each job"),
    ("EPOCHSECONDS", "date +%s"),
    ("EPOCHREALTIME", "date +%s"),
    ("globstar", "find"),
];

/// The scripts that run on a user's machine (the others run in CI, on Linux).
const USER_SCRIPTS: &[&str] = &[
    "install.sh",
    "scripts/fetch-assets.sh",
    "plugin/scripts/run.sh",
    "plugin/scripts/setup.sh",
];

#[test]
fn the_scripts_a_user_runs_need_no_more_than_bash_3_2() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for script in USER_SCRIPTS {
        let text =
            std::fs::read_to_string(root.join(script)).unwrap_or_else(|e| panic!("{script}: {e}"));
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with('#') {
                continue;
            }
            for (feature, instead) in BASH4 {
                if code.contains(feature) {
                    found.push(format!("{script}:{}: `{feature}` (use {instead})", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "bash 4 features in scripts macOS runs with bash 3.2:\n{}",
        found.join("\n")
    );
}
