//! Hand edits of `.ai/config.json` and `.ai/user_rules.json`, picked up while the daemon runs.
//!
//! The folder is watched (saves replace the files by renaming, which a watch on the file itself
//! would lose). A valid edit applies within a second; an invalid one is logged once, reported by
//! `ai health`, and the last valid config stays in force until the file is fixed.
//!
//! Applied live: `mode`, `settings`, `guardcode`, `inject`, `orchestrator` (but `tick_secs`),
//! `workflow`, `retention`, `language`, and the LLM's spending limits (`llm.max_tokens_per_call`,
//! `llm.max_cost_per_day_usd`: a limit lowered to stop spending must not wait for a restart).
//! Read once at start (a restart applies them): the rest of `llm`, `daemon`,
//! `orchestrator.tick_secs`. User rules are read afresh on every use, so an edit of them
//! always applies at the next prompt; the watch only checks that the file is still valid.

use super::state::{ConfigHandle, Lifecycle, PruneHandle, StatsHandle};
use crate::llm_tasks::costs::CostTracker;
use crate::llm_tasks::limits_of;
use ai_smartness_config::{Config, LlmConfig};
use ai_smartness_core::clock::SharedClock;
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_replies::ConfigProblem;
use notify::event::{AccessKind, AccessMode};
use notify::{EventKind, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Editors write a file in several steps: changes are gathered for this long, then read once.
const SETTLE: Duration = Duration::from_millis(150);

/// The files watched, by name in `.ai/`.
const CONFIG: &str = "config.json";
const RULES: &str = "user_rules.json";

/// Picks up hand edits of the config and the user rules.
pub struct ConfigWatch {
    /// Where `.ai/` and its files are.
    paths: ProjectPaths,
    /// Where a valid edit of `config.json` is put in force.
    config: ConfigHandle,
    /// An invalid file is reported there, for `ai health`.
    stats: StatsHandle,
    /// A lower quota asks for a prune at once.
    prune: PruneHandle,
    /// The stop the watch ends at.
    life: Lifecycle,
    /// Reloaded when `user_rules.json` is edited.
    rules: std::sync::Arc<ai_smartness_store::rules::RulesFile>,
    /// Dates a problem (since when a file is invalid).
    clock: SharedClock,
    /// The LLM's spending ledger, when an LLM is in use: edited limits go there at once.
    costs: Option<Arc<CostTracker>>,
}

impl ConfigWatch {
    pub fn new(
        paths: ProjectPaths,
        config: ConfigHandle,
        stats: StatsHandle,
        prune: PruneHandle,
        life: Lifecycle,
        clock: SharedClock,
        rules: std::sync::Arc<ai_smartness_store::rules::RulesFile>,
    ) -> ConfigWatch {
        ConfigWatch {
            paths,
            config,
            stats,
            prune,
            life,
            rules,
            clock,
            costs: None,
        }
    }

    /// Edited LLM limits go to `costs` (the ledger of the LLM in use, if any) at once.
    pub fn with_llm_costs(mut self, costs: Option<Arc<CostTracker>>) -> ConfigWatch {
        self.costs = costs;
        self
    }

    /// Watches until shutdown. Without a working watch (no inotify), edits apply at restart.
    pub async fn run(self) {
        // notify calls back on its own thread: changes come through a small bounded channel. A full
        // channel drops the event, which is fine: one pending change is enough to trigger a reload.
        let (tx, mut rx) = mpsc::channel::<PathBuf>(16);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            for path in edited_paths(event) {
                let _ = tx.try_send(path);
            }
        });
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("cannot watch the config for edits ({e}): edits apply at restart");
                return;
            }
        };
        let dir = self.paths.ai_dir.clone();
        if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            tracing::warn!(
                "cannot watch {} for edits ({e}): edits apply at restart",
                dir.display()
            );
            return;
        }
        // An edit made after the daemon read its config but before the watch began sent no event:
        // read both files once now that nothing more can slip by, after the same settling time as
        // an event gets (a write caught half-way would be reported as a broken file).
        tokio::time::sleep(SETTLE).await;
        self.reload_config().await;
        self.check_rules().await;
        let mut shutdown = self.life.subscribe_shutdown();
        loop {
            let first = tokio::select! {
                p = rx.recv() => match p { Some(p) => p, None => return },
                _ = shutdown.recv() => return,
            };
            let mut changed = vec![first];
            tokio::time::sleep(SETTLE).await;
            while let Ok(p) = rx.try_recv() {
                changed.push(p);
            }
            let named = |name: &str| changed.iter().any(|p| is_named(p, name));
            if named(CONFIG) {
                self.reload_config().await;
            }
            if named(RULES) {
                self.check_rules().await;
            }
        }
    }

    /// Reads config.json again and applies it when valid and different.
    pub async fn reload_config(&self) {
        let path = self.paths.config();
        let loaded = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || Config::load(&path)).await
        };
        let config = match loaded {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                self.report_problem(CONFIG, e.to_string());
                return;
            }
            Err(_) => return,
        };
        self.clear_problem(CONFIG);
        let before = self.config.get();
        if config == before {
            return;
        }
        let quota_lower = config.quota() < before.quota();
        let limits = limits_of(&config.llm);
        let limits_changed = limits != limits_of(&before.llm);
        // The llm section but its limits: those apply now.
        let llm_rest_changed = before.llm
            != LlmConfig {
                max_tokens_per_call: before.llm.max_tokens_per_call,
                max_cost_per_day_usd: before.llm.max_cost_per_day_usd,
                ..config.llm.clone()
            };
        let restart_needed = llm_rest_changed
            || config.daemon != before.daemon
            || config.orchestrator.tick_secs != before.orchestrator.tick_secs;
        self.config.set(config);
        if limits_changed {
            if let Some(costs) = &self.costs {
                costs.set_limits(limits);
            }
        }
        tracing::info!(
            "{} changed: applied{}",
            path.display(),
            if restart_needed {
                " (the llm section but its limits, the daemon section and orchestrator.tick_secs apply at the next restart)"
            } else {
                ""
            }
        );
        if quota_lower {
            // A lower quota suspends the lightest threads at once, as `ai mode` does.
            if let Some(done) = self.prune.run_now(true, false).await {
                let _ = done.await;
            }
        }
    }

    async fn check_rules(&self) {
        let rules = self.rules.clone();
        let loaded = tokio::task::spawn_blocking(move || rules.reload()).await;
        match loaded {
            Ok(Ok(_)) => {
                if self.clear_problem(RULES) {
                    tracing::info!("{RULES} is valid again");
                }
            }
            Ok(Err(e)) => self.report_problem(RULES, e.to_string()),
            Err(_) => {}
        }
    }

    /// Records an invalid file for `ai health`, logging it once per distinct error.
    fn report_problem(&self, file: &str, error: String) {
        let now = self.clock.now();
        let mut stats = self.stats.lock();
        let known = stats
            .config_problems
            .get(file)
            .is_some_and(|p| p.error == error);
        if !known {
            tracing::error!(
                "{file} was edited and is not valid, the last valid one stays in force: {error}"
            );
            stats
                .config_problems
                .insert(file.to_string(), ConfigProblem { error, since: now });
        }
    }

    /// Forgets a file's problem; true when there was one.
    fn clear_problem(&self, file: &str) -> bool {
        self.stats.lock().config_problems.remove(file).is_some()
    }
}

/// Whether a watch event can mean new content: a file created, written, renamed or removed.
/// Opening and reading are not: every reload opens the file it reloads (and each prompt opens
/// the user rules), so taking them for edits kept the daemon reloading both files forever.
fn is_edit(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The watched files a watch event says were edited (none for an error or a mere read). The
/// rest of `.ai/` (the logs written at every hook, the journal) is no one's business here.
fn edited_paths(event: notify::Result<notify::Event>) -> Vec<PathBuf> {
    match event {
        Ok(event) if is_edit(&event.kind) => event
            .paths
            .into_iter()
            .filter(|p| is_named(p, CONFIG) || is_named(p, RULES))
            .collect(),
        _ => Vec::new(),
    }
}

fn is_named(path: &Path, name: &str) -> bool {
    path.file_name().is_some_and(|n| n == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc as std_mpsc;

    /// Through the real watch backend: reading a watched file sends nothing on (it used to, and
    /// each reload's own read set off the next), writing it does.
    #[test]
    fn reading_a_watched_file_is_no_edit_writing_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(CONFIG);
        std::fs::write(&file, "{}").unwrap();
        let (tx, rx) = std_mpsc::channel::<PathBuf>();
        let mut watcher = notify::recommended_watcher(move |e| {
            for path in edited_paths(e) {
                let _ = tx.send(path);
            }
        })
        .unwrap();
        watcher
            .watch(dir.path(), RecursiveMode::NonRecursive)
            .unwrap();
        for _ in 0..3 {
            std::fs::read(&file).unwrap();
        }
        std::fs::write(dir.path().join("inject.log"), "a hook's line\n").unwrap();
        assert!(
            rx.recv_timeout(Duration::from_millis(500)).is_err(),
            "a read, or a write to another file, was taken for an edit"
        );
        std::fs::write(&file, r#"{"mode": "heavy"}"#).unwrap();
        let seen = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("the write is seen");
        assert!(is_named(&seen, CONFIG), "{}", seen.display());
    }

    #[test]
    fn opening_and_reading_are_not_edits() {
        use notify::event::{CreateKind, ModifyKind, RemoveKind};
        assert!(!is_edit(&EventKind::Access(AccessKind::Open(
            AccessMode::Any
        ))));
        assert!(!is_edit(&EventKind::Access(AccessKind::Close(
            AccessMode::Read
        ))));
        assert!(!is_edit(&EventKind::Access(AccessKind::Read)));
        assert!(is_edit(&EventKind::Access(AccessKind::Close(
            AccessMode::Write
        ))));
        assert!(is_edit(&EventKind::Create(CreateKind::File)));
        assert!(is_edit(&EventKind::Modify(ModifyKind::Any)));
        assert!(is_edit(&EventKind::Remove(RemoveKind::File)));
    }
}
