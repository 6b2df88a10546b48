//! `ai init`: creates `.ai/` from the template, idempotently (an existing config keeps its
//! values; only the flags given change it).

use ai_smartness_config::{Config, Mode};
use ai_smartness_core::memory::rules::UserRules;
use ai_smartness_proto::paths::ProjectPaths;
use anyhow::{Context, Result};
use std::process::ExitCode;

/// The template shipped in the binary, so `ai init` works from anywhere.
const TEMPLATE_CONFIG: &str = include_str!("../../../.ai-template/config.json");

pub(crate) fn init(
    root: &std::path::Path,
    mode: Option<&str>,
    lang: Option<&str>,
    json: bool,
) -> Result<ExitCode> {
    let (paths, config, existed) = create(root, mode, lang)?;
    let root = &paths.root;
    if json {
        println!(
            "{}",
            serde_json::to_string(&ai_smartness_replies::Initialised {
                project: root.clone(),
                created: !existed,
                mode: config.mode,
                language: config.language.clone(),
            })?
        );
    } else if existed {
        println!(
            "{} already initialised (mode {}, language {})",
            paths.ai_dir.display(),
            config.mode,
            config.language
        );
    } else {
        println!(
            "initialised {} (mode {}, language {})",
            paths.ai_dir.display(),
            config.mode,
            config.language
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Creates `.ai/` under `root` (or completes it), printing nothing: the project's paths, its
/// config, and whether the config existed before.
pub(crate) fn create(
    root: &std::path::Path,
    mode: Option<&str>,
    lang: Option<&str>,
) -> Result<(ProjectPaths, Config, bool)> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let root = root
        .canonicalize()
        .with_context(|| format!("resolving {}", root.display()))?;
    let paths = ProjectPaths::new(&root);
    for dir in ["threads", "bridges", "synthesis", "quarantine", "journal"] {
        std::fs::create_dir_all(paths.db().join(dir))?;
    }
    paths
        .ensure_private_ai_dir()
        .with_context(|| format!("making {} private", paths.ai_dir.display()))?;
    let existed = paths.config().exists();
    let mut config = if existed {
        Config::load(&paths.config())?
    } else {
        let mut c: Config =
            serde_json::from_str(TEMPLATE_CONFIG).context("the built-in template")?;
        c.project_name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Wall clock: a stamp for people reading the config; no daemon or clock runs yet.
        c.initialized_at = Some(chrono::Utc::now().to_rfc3339());
        c
    };
    if let Some(m) = mode.and_then(Mode::parse) {
        config.mode = m;
    }
    if let Some(l) = lang {
        config.language = l.to_string();
    }
    let created = !existed && config.create(&paths.config())?;
    if !created {
        // Only the keys given change; a running daemon picks the edit up from the file.
        let mut edits: Vec<(&[&str], serde_json::Value)> = Vec::new();
        if let Some(m) = mode.and_then(Mode::parse) {
            edits.push((&["mode"], m.as_str().into()));
        }
        if let Some(l) = lang {
            edits.push((&["language"], l.into()));
        }
        config = if edits.is_empty() {
            Config::load(&paths.config())?
        } else {
            Config::set_keys(&paths.config(), &edits)?
        };
    }
    if !paths.user_rules().exists() {
        ai_smartness_store::rules::write_rules(&paths.user_rules(), &UserRules::default())?;
    }
    Ok((paths, config, existed))
}
