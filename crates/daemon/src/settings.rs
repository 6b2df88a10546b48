//! What a person sets while the daemon runs: the mode (`ai mode`) and the user rules
//! (`ai rules`). Each change is written through the file's one owner, off the async workers.

use crate::service_error::ServiceError;
use crate::state::{ConfigHandle, MemoryHandle, PruneHandle};
use ai_smartness_config::{Config, Mode};
use ai_smartness_core::memory::types::ThreadStatus;
use ai_smartness_proto::protocol::ErrorCode;
use ai_smartness_replies::{ModeReply, RulesReply};
use ai_smartness_store::rules::RulesFile;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Clone)]
pub struct Settings {
    /// `config.json`, where a mode change is written.
    config_file: PathBuf,
    /// The config in force, replaced by a mode change.
    config: ConfigHandle,
    /// For the count of active threads the mode's quota applies to.
    memory: MemoryHandle,
    /// A lower quota suspends the lightest threads at once.
    prune: PruneHandle,
    /// The user rules' one owner.
    rules: Arc<RulesFile>,
}

/// One change to the user rules.
enum RuleChange {
    Add(String),
    Remove(usize),
}

impl Settings {
    pub fn new(
        config_file: PathBuf,
        config: ConfigHandle,
        memory: MemoryHandle,
        prune: PruneHandle,
        rules: Arc<RulesFile>,
    ) -> Settings {
        Settings {
            config_file,
            config,
            memory,
            prune,
            rules,
        }
    }

    /// `ai mode`: the mode in force, or (with `set`) the mode changed.
    pub async fn mode(&self, set: Option<&str>) -> Result<ModeReply, ServiceError> {
        let Some(name) = set else {
            let config = self.config.get();
            let active = self
                .memory
                .lock()
                .graph
                .count_by_status(ThreadStatus::Active);
            return Ok(ModeReply {
                mode: config.mode,
                quota: config.quota(),
                active_threads: active,
                suspended: None,
            });
        };
        let mode = Mode::parse(name).ok_or_else(|| {
            ServiceError::bad_request(format!("unknown mode `{name}` (light, normal, heavy, max)"))
        })?;
        // The file as it is now, with only `mode` changed: a person's edits since the daemon
        // started are kept, and the daemon takes them too.
        let path = self.config_file.clone();
        let config = tokio::task::spawn_blocking(move || {
            Config::set_key(&path, &["mode"], serde_json::Value::from(mode.as_str()))
        })
        .await
        .map_err(|e| ServiceError::internal(e.to_string()))?
        .map_err(|e| ServiceError::new(ErrorCode::Config, format!("mode not changed: {e}")))?;
        let quota = config.quota();
        self.config.set(config);
        let rx = self
            .prune
            .run_now(true, false)
            .await
            .ok_or_else(ServiceError::shutting_down)?;
        let report = rx.await.unwrap_or_default();
        Ok(ModeReply {
            mode,
            quota,
            active_threads: report.active_threads,
            suspended: Some(report.suspended_by_quota + report.suspended_by_decay),
        })
    }

    /// `ai rules`: the rules, or one added or removed.
    pub async fn rules(
        &self,
        add: Option<String>,
        remove: Option<usize>,
    ) -> Result<RulesReply, ServiceError> {
        let owner = self.rules.clone();
        let change = match (add, remove) {
            (Some(_), Some(_)) => return Err(ServiceError::bad_request("add or remove, not both")),
            (None, None) => {
                return Ok(RulesReply {
                    rules: owner.rules().rules,
                })
            }
            (Some(text), None) => RuleChange::Add(text),
            (None, Some(n)) => RuleChange::Remove(n),
        };
        let ((), rules) = tokio::task::spawn_blocking(move || {
            owner.update(|r| match &change {
                RuleChange::Add(text) => r.add(text),
                RuleChange::Remove(n) => r.remove(*n).map(|_| ()),
            })
        })
        .await
        .map_err(|e| ServiceError::storage(e.to_string()))??;
        Ok(RulesReply { rules: rules.rules })
    }
}
