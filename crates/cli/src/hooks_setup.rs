//! Registers the hook binaries in a project's `.claude/settings.json` (the rules of
//! `shared/claude-code/README.md`): merge into what is there, keep every key we did not write,
//! never add a second copy of our entries, and remove exactly ours on uninstall.

use anyhow::{bail, Context, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Our hook binaries: an entry whose command runs one of these is ours.
const OUR_BINARIES: [&str; 3] = ["ai-inject", "ai-capture", "ai-compact"];

/// (event, matcher, binary, extra argument, timeout in seconds)
const HOOKS: [(&str, Option<&str>, &str, &str, u64); 5] = [
    ("UserPromptSubmit", None, "ai-inject", "", 10),
    ("PostToolUse", Some("*"), "ai-capture", "", 10),
    ("Stop", None, "ai-capture", "", 10),
    ("PreCompact", None, "ai-compact", "", 60),
    (
        "SessionStart",
        Some("startup|resume|compact"),
        "ai-inject",
        " --session-start",
        10,
    ),
];

fn settings_path(project: &Path) -> PathBuf {
    project.join(".claude").join("settings.json")
}

fn is_ours(hook: &Value) -> bool {
    let Some(cmd) = hook.get("command").and_then(Value::as_str) else {
        return false;
    };
    let program = first_word(cmd);
    let name = Path::new(&program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let name = name.strip_suffix(".exe").unwrap_or(name);
    OUR_BINARIES.contains(&name)
}

/// The program a shell command runs: its first word, with the quotes [`shell_word`] puts
/// around a path with spaces removed.
fn first_word(cmd: &str) -> String {
    let cmd = cmd.trim_start();
    let Some(quoted) = cmd.strip_prefix('"') else {
        return cmd.split_whitespace().next().unwrap_or("").to_string();
    };
    let mut word = String::new();
    let mut chars = quoted.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => word.extend(chars.next()),
            c => word.push(c),
        }
    }
    word
}

/// A path as one word of the shell Claude Code runs hook commands with (`sh -c` on Linux and
/// macOS, Git Bash on Windows): forward slashes on Windows (Git Bash reads a backslash in a
/// bare word as an escape, and Windows takes either separator), and double quotes, with `"`,
/// `\`, `$` and `` ` `` escaped, when the path holds anything but plain path characters (a
/// space in "Application Support" or in a user name).
fn shell_word(path: &Path) -> String {
    let mut text = path.display().to_string();
    if cfg!(windows) {
        // A verbatim prefix (`\\?\C:\...`, from canonicalising) means nothing to a shell.
        if let Some(rest) = text.strip_prefix(r"\\?\") {
            text = rest.to_string();
        }
        text = text.replace('\\', "/");
    }
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text;
    }
    let mut quoted = String::from("\"");
    for c in text.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

fn load(path: &Path) -> Result<Option<Map<String, Value>>> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Some(Map::new())),
        Ok(bytes) => match serde_json::from_slice(&bytes) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(_) => bail!("{} is not a JSON object; not touching it", path.display()),
            Err(e) => bail!(
                "{} is not valid JSON ({e}); fix it first, it was not changed",
                path.display()
            ),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Removes our entries from `settings`, dropping groups and events left empty.
fn strip_ours(settings: &mut Map<String, Value>) {
    let Some(Value::Object(hooks)) = settings.get_mut("hooks") else {
        return;
    };
    for groups in hooks.values_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        for g in groups.iter_mut() {
            if let Some(Value::Array(list)) = g.get_mut("hooks") {
                list.retain(|h| !is_ours(h));
            }
        }
        groups.retain(|g| !matches!(g.get("hooks"), Some(Value::Array(l)) if l.is_empty()));
    }
    hooks.retain(|_, groups| !matches!(groups, Value::Array(g) if g.is_empty()));
    if hooks.is_empty() {
        settings.remove("hooks");
    }
}

/// One entry of a hook event in Claude Code's settings: the tools it matches, and our command.
#[derive(serde::Serialize)]
struct HookGroup<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    matcher: Option<&'a str>,
    hooks: [HookCommand<'a>; 1],
}

#[derive(serde::Serialize)]
struct HookCommand<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'a str,
    /// Seconds.
    timeout: u64,
}

/// Adds (or refreshes) our entries, pointing at binaries in `bin_dir`.
pub(crate) fn install(project: &Path, bin_dir: &Path) -> Result<bool> {
    let path = settings_path(project);
    let existing = load(&path)?;
    let mut settings = existing.clone().unwrap_or_default();
    strip_ours(&mut settings);
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(hooks) = hooks else {
        bail!(
            "`hooks` in {} is not an object; not touching it",
            path.display()
        );
    };
    for (event, matcher, binary, arg, timeout) in HOOKS {
        let program = bin_dir.join(format!("{binary}{}", std::env::consts::EXE_SUFFIX));
        let command = format!("{}{arg}", shell_word(&program));
        let group = HookGroup {
            matcher,
            hooks: [HookCommand {
                kind: "command",
                command: &command,
                timeout,
            }],
        };
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Value::Array(groups) = groups else {
            bail!(
                "`hooks.{event}` in {} is not a list; not touching it",
                path.display()
            );
        };
        groups.push(serde_json::to_value(&group)?);
    }
    if existing.as_ref() == Some(&settings) {
        return Ok(false);
    }
    std::fs::create_dir_all(project.join(".claude"))?;
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(settings))?;
    bytes.push(b'\n');
    ai_smartness_proto::atomic::write_atomic(&path, &bytes)?;
    Ok(true)
}

/// Removes our entries; deletes the file (and `.claude/`) when nothing else is left in them.
pub(crate) fn uninstall(project: &Path) -> Result<bool> {
    let path = settings_path(project);
    let Some(existing) = load(&path)? else {
        return Ok(false);
    };
    let mut settings = existing.clone();
    strip_ours(&mut settings);
    if settings == existing {
        return Ok(false);
    }
    if settings.is_empty() {
        std::fs::remove_file(&path)?;
        // Only removes the folder when empty.
        let _ = std::fs::remove_dir(project.join(".claude"));
    } else {
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(settings))?;
        bytes.push(b'\n');
        ai_smartness_proto::atomic::write_atomic(&path, &bytes)?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The command written for a binary in a folder with a space, a quote and a dollar sign
    /// runs that binary under `sh -c`, as Claude Code runs it, and is recognised as ours.
    #[cfg(unix)]
    #[test]
    fn commands_run_from_a_folder_with_spaces_and_quotes() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("Application Support/it's \"ai\" $HOME");
        std::fs::create_dir_all(&bin).unwrap();
        let program = bin.join("ai-inject");
        let witness = root.path().join("ran");
        std::fs::write(
            &program,
            format!("#!/bin/sh\necho \"$@\" > '{}'\n", witness.display()),
        )
        .unwrap();
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        let command = format!("{} --session-start", shell_word(&program));
        let status = std::process::Command::new("sh")
            .args(["-c", &command])
            .status()
            .unwrap();
        assert!(status.success(), "{command}");
        assert_eq!(
            std::fs::read_to_string(&witness).unwrap().trim(),
            "--session-start"
        );
        assert!(is_ours(&json!({ "command": command })));
        assert_eq!(
            shell_word(Path::new("/usr/local/bin/ai-inject")),
            "/usr/local/bin/ai-inject"
        );
        assert!(!is_ours(
            &json!({ "command": "\"/opt/my tools/other\" ai-inject" })
        ));
    }

    #[test]
    fn merge_is_idempotent_keeps_foreign_keys_and_uninstall_restores() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        std::fs::create_dir_all(p.join(".claude")).unwrap();
        let original = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/other-tool"}]}]}
        });
        std::fs::write(
            settings_path(p),
            serde_json::to_vec_pretty(&original).unwrap(),
        )
        .unwrap();
        assert!(install(p, Path::new("/opt/bin")).unwrap());
        let once = std::fs::read(settings_path(p)).unwrap();
        assert!(
            !install(p, Path::new("/opt/bin")).unwrap(),
            "second install changes nothing"
        );
        assert_eq!(once, std::fs::read(settings_path(p)).unwrap());
        let v: Value = serde_json::from_slice(&once).unwrap();
        assert_eq!(v["permissions"], original["permissions"]);
        assert_eq!(v["hooks"]["PostToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            v["hooks"]["SessionStart"][0]["hooks"][0]["command"],
            "/opt/bin/ai-inject --session-start"
        );
        assert_eq!(v["hooks"]["PreCompact"][0]["hooks"][0]["timeout"], 60);
        // A new bin dir replaces our entries instead of adding a second copy.
        install(p, Path::new("/other/bin")).unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(settings_path(p)).unwrap()).unwrap();
        assert_eq!(v["hooks"]["UserPromptSubmit"].as_array().unwrap().len(), 1);
        assert!(uninstall(p).unwrap());
        let v: Value = serde_json::from_slice(&std::fs::read(settings_path(p)).unwrap()).unwrap();
        assert_eq!(v, original);
    }

    #[test]
    fn uninstall_removes_a_file_it_created_and_bad_json_is_never_touched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        install(p, Path::new("/opt/bin")).unwrap();
        assert!(uninstall(p).unwrap());
        assert!(!p.join(".claude").exists());
        std::fs::create_dir_all(p.join(".claude")).unwrap();
        std::fs::write(settings_path(p), "{ not json").unwrap();
        assert!(install(p, Path::new("/opt/bin")).is_err());
        assert_eq!(
            std::fs::read_to_string(settings_path(p)).unwrap(),
            "{ not json"
        );
    }
}
