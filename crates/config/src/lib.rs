//! `.ai/config.json`: the original schema with our additions (`llm`, `daemon`).
//! Every field has a default so a partial or older file still loads; keys we do not know are kept
//! when the file is rewritten (by `ai mode`, say).

use ai_smartness_records::retention::Keep;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;
use std::path::Path;

/// How much the memory keeps active: the quota of active threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Light,
    #[default]
    Normal,
    Heavy,
    Max,
}

impl Mode {
    pub const ALL: [Mode; 4] = [Mode::Light, Mode::Normal, Mode::Heavy, Mode::Max];

    /// Active threads allowed.
    pub fn quota(self) -> usize {
        match self {
            Mode::Light => 15,
            Mode::Normal => 50,
            Mode::Heavy => 100,
            Mode::Max => 200,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Light => "light",
            Mode::Normal => "normal",
            Mode::Heavy => "heavy",
            Mode::Max => "max",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.as_str() == s.trim())
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    pub extraction_model: Option<String>,
    pub embedding_model: String,
    pub auto_capture: bool,
    /// Overrides the mode's quota when set.
    pub active_threads_limit: Option<usize>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            extraction_model: None,
            embedding_model: "sentence-transformers/all-MiniLM-L6-v2".into(),
            auto_capture: true,
            active_threads_limit: None,
            extra: Map::new(),
        }
    }
}

/// GuardCode rules, each switched on or off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GuardCode {
    pub enforce_plan_mode: bool,
    pub warn_quick_solutions: bool,
    pub require_all_choices: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for GuardCode {
    fn default() -> Self {
        GuardCode {
            enforce_plan_mode: true,
            warn_quick_solutions: true,
            require_all_choices: true,
            extra: Map::new(),
        }
    }
}

/// The optional LLM; `provider: "none"` means the local fallbacks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmConfig {
    /// A registry id (`anthropic`, `openai`, `deepseek`, `ollama`, `llamacpp`, `claude-cli`),
    /// `auto` (detect from the environment), or `none` (no LLM: the local pipeline only).
    pub provider: String,
    /// The model when `models_by_mode` names none for the current mode; else the provider's.
    pub model: Option<String>,
    /// A model per mode (`{"light": "...", "heavy": "..."}`): bigger projects may afford more.
    pub models_by_mode: Map<String, Value>,
    /// Overrides the provider's endpoint (a proxy, a remote Ollama, a test server).
    pub base_url: Option<String>,
    /// The NAME of the environment variable holding the key, never the key.
    pub api_key_env: Option<String>,
    /// The `claude` binary for `claude-cli`; else found on PATH.
    pub claude_cli_path: Option<String>,
    /// A call whose prompt (estimated) plus its output cap exceeds this is refused before it
    /// is made; `null` for no limit.
    pub max_tokens_per_call: Option<u32>,
    /// Calls are refused once today's spend (UTC day) plus a call's worst case would exceed
    /// this; `null` for no limit.
    pub max_cost_per_day_usd: Option<f64>,
    /// Time limits per use.
    pub timeouts: LlmTimeouts,
    /// Keys we do not know, kept when the file is rewritten.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            provider: "none".into(),
            model: None,
            models_by_mode: Map::new(),
            base_url: None,
            api_key_env: None,
            claude_cli_path: None,
            max_tokens_per_call: Some(8_000),
            max_cost_per_day_usd: Some(1.0),
            timeouts: LlmTimeouts::default(),
            extra: Map::new(),
        }
    }
}

impl LlmConfig {
    /// Whether an LLM is configured at all (`none`, `local` and an empty name mean no).
    pub fn is_enabled(&self) -> bool {
        !matches!(
            self.provider.trim().to_ascii_lowercase().as_str(),
            "" | "none" | "local"
        )
    }

    /// The model for `mode`: `models_by_mode[mode]`, else `model`, else `None` (the
    /// provider's default).
    pub fn model_for(&self, mode: Mode) -> Option<String> {
        self.models_by_mode
            .get(mode.as_str())
            .and_then(Value::as_str)
            .or(self.model.as_deref())
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
    }
}

/// Seconds each LLM use may take, retries included in none of them (each attempt has its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmTimeouts {
    /// An extraction, and a batch of bridges to type (seed: 30 s).
    pub extraction_secs: u64,
    /// A coherence check or a borderline reactivation, yes-or-no questions (seed: 15 s).
    pub coherence_secs: u64,
    /// A compaction synthesis (seed: 60 s).
    pub synthesis_secs: u64,
    /// The reachability check of `ai health` (short: it runs in the background, but a stale
    /// answer is worse than a quick "no").
    pub ping_secs: u64,
}

impl Default for LlmTimeouts {
    fn default() -> Self {
        LlmTimeouts {
            extraction_secs: 30,
            coherence_secs: 15,
            synthesis_secs: 60,
            ping_secs: 10,
        }
    }
}

/// What `ai-inject` adds to a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InjectConfig {
    /// Tokens (characters / 4) of context at most.
    pub budget_tokens: usize,
    /// Threads shown at most. Not a budget: the token budget already pays for every header.
    /// A question whose answers were said on different days often finds them filed under
    /// different threads (one subject each), and a cap of 10 left out messages that ranked
    /// within the budget (LoCoMo at 1,000 tokens: recall 0.832 at 10, 0.837 at 30, the same
    /// with no cap).
    pub max_threads: usize,
    /// A message below this relevance is not injected.
    pub min_relevance: f64,
    /// Injection at all (false: prompts are remembered, nothing is injected).
    pub enabled: bool,
    /// Injection into subagents' prompts too.
    pub subagents: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for InjectConfig {
    fn default() -> Self {
        InjectConfig {
            budget_tokens: 1200,
            max_threads: 30,
            min_relevance: 0.15,
            enabled: true,
            subagents: false,
            extra: Map::new(),
        }
    }
}

/// Daemon timers and log rotation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DaemonConfig {
    /// Seconds between automatic prunes (seed: 300).
    pub prune_interval_secs: u64,
    /// Daily-rotated log files kept.
    pub log_files_kept: usize,
    /// Seconds without a request before the threads are tidied (merged, split, retitled);
    /// 0 turns the idle pass off (`ai consolidate` still works).
    pub consolidate_idle_secs: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        DaemonConfig {
            prune_interval_secs: 300,
            log_files_kept: 7,
            consolidate_idle_secs: 60,
            extra: Map::new(),
        }
    }
}

/// What the periodic prune keeps of the records that pile up beside the memory. Work still
/// going on (a run in progress, a session that has not ended) is never deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RetentionConfig {
    /// Finished workflow runs, with their events.
    pub runs: Keep,
    /// Ended assistant sessions (chats and automation runs); automations themselves stay.
    pub sessions: Keep,
    /// Compaction syntheses (the newest always stays: a continuation reads it).
    pub synthesis: Keep,
    /// Files moved aside because they could not be read, with their reason notes.
    pub quarantine: Keep,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            runs: Keep::default(),
            sessions: Keep {
                max_count: 500,
                max_age_days: 180,
            },
            synthesis: Keep {
                max_count: 50,
                max_age_days: 30,
            },
            quarantine: Keep {
                max_count: 200,
                max_age_days: 30,
            },
            extra: Map::new(),
        }
    }
}

/// What a project shares with its team without being asked thread by thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TeamShare {
    /// Nothing until a person shares a thread.
    #[default]
    None,
    /// Every thread not marked private.
    All,
}

/// Team memory on PostgreSQL (off while `url` is empty; `ai team join` sets it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TeamConfig {
    /// The store's address without its password (`postgres://USER@HOST:PORT/DATABASE`).
    pub url: String,
    /// The team: several can share one database.
    pub name: String,
    /// The name shared items carry as their author.
    pub author: String,
    pub share: TeamShare,
    /// The kinds of message that may leave (`prompt`, `response`, `write`, `command`, `read`,
    /// `task`, `fetch`, `note`): a rule over everything shared, by the project setting or
    /// thread by thread. Empty: every kind.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub share_kinds: Vec<String>,
    /// The environment variable holding the password (else `PGPASSWORD`, else `~/.pgpass`).
    pub password_env: Option<String>,
    /// How long a prompt's context waits for the team store before going on without it.
    pub inject_budget_ms: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for TeamConfig {
    fn default() -> Self {
        TeamConfig {
            url: String::new(),
            name: String::new(),
            author: String::new(),
            share: TeamShare::None,
            share_kinds: Vec::new(),
            password_env: None,
            inject_budget_ms: 150,
            extra: Map::new(),
        }
    }
}

impl TeamConfig {
    /// Whether this project is in a team.
    pub fn joined(&self) -> bool {
        !self.url.is_empty()
    }

    /// Whether a message of this kind (its `source_type`) may leave the machine.
    pub fn shares_kind(&self, kind: Option<&str>) -> bool {
        self.share_kinds.is_empty() || kind.is_some_and(|k| self.share_kinds.iter().any(|s| s == k))
    }
}

/// The assistant: chat and automation sessions over the memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct OrchestratorConfig {
    /// The autonomous loop's limits per session kind.
    pub limits: ai_smartness_records::assistant::types::AILimitsConfig,
    /// Application level of the validation hierarchy: every action waits for a person.
    pub require_validation: bool,
    /// Action types that always wait for a person (the ones that lose information by default).
    pub validate_actions: Vec<String>,
    /// Threads whose changes always wait for a person.
    pub validate_threads: Vec<String>,
    /// Day start hour and week start day for periods.
    pub periods: ai_smartness_records::assistant::period::PeriodConfig,
    /// A CHAT nobody wrote to for this long gives the slot up (default 5 minutes).
    pub chat_inactivity_secs: u64,
    /// Seconds between scheduler ticks (default 5 minutes); changes also tick at once.
    pub tick_secs: u64,
    /// An automation that cannot reach the model tries again after this (default 30 s).
    pub network_retry_secs: u64,
    /// Output cap of one model reply.
    pub max_output_tokens: u32,
    /// One model call, streaming included.
    pub call_timeout_secs: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        OrchestratorConfig {
            limits: Default::default(),
            require_validation: false,
            validate_actions: ["MERGE_THREADS", "DELETE_BRIDGE", "REMOVE_RULE"]
                .map(String::from)
                .to_vec(),
            validate_threads: Vec::new(),
            periods: Default::default(),
            chat_inactivity_secs: 300,
            tick_secs: 300,
            network_retry_secs: 30,
            max_output_tokens: 4096,
            call_timeout_secs: 120,
            extra: Map::new(),
        }
    }
}

/// Workflow runs (`AI_SMARTNESS_EXECUTOR_MODEL`, `..._VERIFIER_MODEL`, `..._MAX_ITERATIONS`,
/// `..._MAX_REPAIR_CYCLES`, `..._VERIFY_REQUIRED`, `..._EXECUTE_MODE` and `..._WORKSPACE_DIR` in
/// the daemon's environment override these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkflowConfig {
    /// SPEC, PLAN, EXECUTE and REPAIR; none: the LLM's model.
    pub executor_model: Option<String>,
    /// The judge; none: the LLM's model.
    pub verifier_model: Option<String>,
    /// ReAct steps per EXECUTE or REPAIR (seed: 10).
    pub max_iterations: u32,
    /// Seed: 3.
    pub max_repair_cycles: u32,
    /// A run with no check and no verdict cannot pass.
    pub verify_required: bool,
    /// `direct` (in the workspace) or `sandbox` (in a throwaway copy).
    pub execute_mode: String,
    /// Where runs work; none: the project folder.
    pub workspace_dir: Option<String>,
    /// Whether write_file is offered (`ai run --write` turns it on for one run).
    pub write_enabled: bool,
    /// The project's tests, a shell command line run in the workspace (`cargo test`, `npm test`).
    pub test_command: Option<String>,
    /// The project's linter.
    pub lint_command: Option<String>,
    /// Programs run_command may start.
    pub allowed_commands: Vec<String>,
    /// One command's time limit.
    pub command_timeout_secs: u64,
    /// One model call's time limit.
    pub call_timeout_secs: u64,
    /// Sandbox copies kept (the newest sandboxed runs'): re-verify and repair work in them, but
    /// each is a whole workspace, so older ones are removed when a new one is made.
    pub keep_sandboxes: usize,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for WorkflowConfig {
    fn default() -> Self {
        WorkflowConfig {
            executor_model: None,
            verifier_model: None,
            max_iterations: 10,
            max_repair_cycles: 3,
            verify_required: true,
            execute_mode: "direct".into(),
            workspace_dir: None,
            write_enabled: false,
            test_command: None,
            lint_command: None,
            allowed_commands: ["ls", "cat", "head", "wc", "grep", "find", "git"]
                .map(String::from)
                .to_vec(),
            command_timeout_secs: 300,
            call_timeout_secs: 120,
            keep_sandboxes: 5,
            extra: Map::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    pub project_name: String,
    pub language: String,
    pub version: String,
    pub initialized_at: Option<String>,
    pub mode: Mode,
    pub settings: Settings,
    pub guardcode: GuardCode,
    pub llm: LlmConfig,
    pub inject: InjectConfig,
    pub daemon: DaemonConfig,
    pub orchestrator: OrchestratorConfig,
    pub workflow: WorkflowConfig,
    pub retention: RetentionConfig,
    pub mcp: McpConfig,
    pub team: TeamConfig,
    pub capture: CaptureConfig,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a capture keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CaptureConfig {
    /// A capture is stored whole up to this many KiB (of characters); past it, its head, its
    /// tail and the lines that look like errors are kept, and the message says what was left
    /// out.
    pub max_kib: usize,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        CaptureConfig {
            max_kib: 256,
            extra: Map::new(),
        }
    }
}

impl CaptureConfig {
    /// The bound in characters, never below 4 KiB (a capture must keep room for its head and
    /// tail).
    pub fn max_chars(&self) -> usize {
        self.max_kib.clamp(4, 16 * 1024) * 1024
    }
}

/// What the MCP tools (`ai mcp`) may do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpConfig {
    /// `forget` with `delete` in a run no person watches (print mode, an SDK, our own
    /// automations): refused unless this is true.
    pub delete_when_unattended: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            project_name: String::new(),
            language: "en".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            initialized_at: None,
            mode: Mode::Normal,
            settings: Settings::default(),
            guardcode: GuardCode::default(),
            llm: LlmConfig::default(),
            inject: InjectConfig::default(),
            daemon: DaemonConfig::default(),
            orchestrator: OrchestratorConfig::default(),
            workflow: WorkflowConfig::default(),
            retention: RetentionConfig::default(),
            mcp: McpConfig::default(),
            team: TeamConfig::default(),
            capture: CaptureConfig::default(),
            extra: Map::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a valid config: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    /// The change could not be made to the file as it is; worded as an invalid file, as the
    /// person has always been told.
    #[error("{path} is not a valid config: {source}")]
    Edit {
        path: String,
        source: ConfigEditError,
    },
}

/// Why an edit could not be made to the config document, before it is checked as a config.
#[derive(Debug, thiserror::Error)]
pub enum ConfigEditError {
    /// A key path with no key in it.
    #[error("an empty key")]
    EmptyKey,
    /// A key on the way to the one set is held by something other than an object.
    #[error("`{0}` is inside something that is not an object")]
    InsideNonObject(String),
    /// The value meant to hold the key set (a dotted path) is not an object.
    #[error("`{0}` is not an object")]
    ParentNotObject(String),
    /// The whole document is not an object.
    #[error("the config is not an object")]
    DocumentNotObject,
    /// A value that cannot be turned into JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// Attempts at an edit while the file keeps changing under it.
const EDIT_ATTEMPTS: usize = 5;

/// Holds the config's lock, a file beside it (`config.json.lock`): the config itself is
/// replaced on every write, so it cannot carry the lock. Released when dropped.
fn lock_for(path: &Path) -> std::io::Result<std::fs::File> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path.with_file_name(name))?;
    file.lock()?;
    Ok(file)
}

/// Sets `key` (a path of object keys) in a config document to `value`, making the objects on
/// the way.
fn set_in(doc: &mut Value, key: &[&str], value: Value) -> Result<(), ConfigEditError> {
    let Some((last, parents)) = key.split_last() else {
        return Err(ConfigEditError::EmptyKey);
    };
    let mut node = doc;
    for part in parents {
        let Value::Object(map) = node else {
            return Err(ConfigEditError::InsideNonObject(part.to_string()));
        };
        node = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = node else {
        return Err(ConfigEditError::ParentNotObject(parents.join(".")));
    };
    map.insert(last.to_string(), value);
    Ok(())
}

impl Config {
    /// Reads the config; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|source| ConfigError::Parse {
                path: path.display().to_string(),
                source,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Io {
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// Changes one key of the config file (`["mode"]`, `["inject", "budget_tokens"]`); see
    /// [`Config::edit`]. Returns the config as written.
    pub fn set_key(path: &Path, key: &[&str], value: Value) -> Result<Config, ConfigError> {
        Config::set_keys(path, &[(key, value)])
    }

    /// Changes some keys of the config file at once; see [`Config::edit`].
    pub fn set_keys(path: &Path, edits: &[(&[&str], Value)]) -> Result<Config, ConfigError> {
        Config::edit(path, |doc| {
            for (key, value) in edits {
                set_in(doc, key, value.clone())?;
            }
            Ok(())
        })
    }

    /// The one way the product writes `config.json`: under the config's lock, it reads the file
    /// as it is at that moment, lets `change` edit its keys, checks that the result is a valid
    /// config, and writes it back atomically. Everything `change` does not touch stays as the
    /// file has it, whatever was loaded before: a person's edits are never reverted, unknown
    /// keys never dropped (keys come out in alphabetical order, values as written). When the
    /// file changes while the edit is made (an editor that does not take the lock), the edit is
    /// made again on the new file. A file that is not valid is left alone and the error says
    /// where. Returns the config as written.
    pub fn edit(
        path: &Path,
        mut change: impl FnMut(&mut Value) -> Result<(), ConfigEditError>,
    ) -> Result<Config, ConfigError> {
        let io_error = |source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        };
        let parse_error = |source| ConfigError::Parse {
            path: path.display().to_string(),
            source,
        };
        let _lock = lock_for(path).map_err(io_error)?;
        for _ in 0..EDIT_ATTEMPTS {
            let before = match std::fs::read(path) {
                Ok(bytes) => Some(bytes),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => return Err(io_error(source)),
            };
            let mut doc: Value = match &before {
                Some(bytes) => serde_json::from_slice(bytes).map_err(parse_error)?,
                None => serde_json::to_value(Config::default()).map_err(parse_error)?,
            };
            change(&mut doc).map_err(|source| ConfigError::Edit {
                path: path.display().to_string(),
                source,
            })?;
            let config: Config = serde_json::from_value(doc.clone()).map_err(parse_error)?;
            let mut bytes = serde_json::to_vec_pretty(&doc).map_err(parse_error)?;
            bytes.push(b'\n');
            // Changed meanwhile by someone who does not take the lock: edit what is there now.
            let now = match std::fs::read(path) {
                Ok(b) => Some(b),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => return Err(io_error(source)),
            };
            if now != before {
                continue;
            }
            ai_smartness_proto::atomic::write_atomic(path, &bytes).map_err(io_error)?;
            return Ok(config);
        }
        Err(io_error(std::io::Error::other(
            "the file kept changing while it was edited; try again",
        )))
    }

    /// Writes a new config file, under the config's lock, unless one exists by then (`ai init`
    /// racing another). Returns whether it was written.
    pub fn create(&self, path: &Path) -> Result<bool, ConfigError> {
        let io_error = |source| ConfigError::Io {
            path: path.display().to_string(),
            source,
        };
        let _lock = lock_for(path).map_err(io_error)?;
        if path.exists() {
            return Ok(false);
        }
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|source| ConfigError::Parse {
            path: path.display().to_string(),
            source,
        })?;
        bytes.push(b'\n');
        ai_smartness_proto::atomic::write_atomic(path, &bytes).map_err(io_error)?;
        Ok(true)
    }

    /// The active-thread quota in force.
    pub fn quota(&self) -> usize {
        self.settings
            .active_threads_limit
            .unwrap_or_else(|| self.mode.quota())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partial_configs_load_and_unknown_keys_survive() {
        let c: Config = serde_json::from_str(
            r#"{"mode": "heavy", "custom": {"x": 1}, "guardcode": {"enforce_plan_mode": false}}"#,
        )
        .unwrap();
        assert_eq!(c.mode, Mode::Heavy);
        assert_eq!(c.quota(), 100);
        assert!(!c.guardcode.enforce_plan_mode);
        assert!(c.guardcode.warn_quick_solutions);
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(back["custom"]["x"], 1);
        assert_eq!(c.daemon.prune_interval_secs, 300);
    }

    #[test]
    fn setting_a_key_keeps_every_other_edit_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"mode": "normal", "my_note": "keep me", "guardcode": {"enforce_plan_mode": false, "custom": 1}, "inject": {"budget_tokens": 800}}"#,
        )
        .unwrap();
        let c = Config::set_key(&path, &["mode"], "heavy".into()).unwrap();
        assert_eq!(c.mode, Mode::Heavy);
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["my_note"], "keep me");
        assert_eq!(
            v["guardcode"],
            serde_json::json!({"enforce_plan_mode": false, "custom": 1})
        );
        assert_eq!(v["inject"], serde_json::json!({"budget_tokens": 800}));
        assert_eq!(v["mode"], "heavy");
        Config::set_key(&path, &["daemon", "log_files_kept"], 3.into()).unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!((c.daemon.log_files_kept, c.inject.budget_tokens), (3, 800));
    }

    #[test]
    fn concurrent_writers_lose_no_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, r#"{"mode": "normal"}"#).unwrap();
        let writers: Vec<_> = (0..16)
            .map(|i| {
                let path = path.clone();
                std::thread::spawn(move || {
                    for round in 0..5 {
                        let key = format!("custom_{i}");
                        Config::set_key(&path, &[key.as_str()], round.into()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for i in 0..16 {
            assert_eq!(v[format!("custom_{i}")], 4, "{v}");
        }
        assert_eq!(v["mode"], "normal");
    }

    #[test]
    fn an_edit_made_meanwhile_by_an_editor_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(
            &path,
            r#"{"mode": "normal", "inject": {"budget_tokens": 800}}"#,
        )
        .unwrap();
        let mut edited = false;
        // A person's editor saves while the edit is being made (it takes no lock).
        let c = Config::edit(&path, |doc| {
            if !edited {
                edited = true;
                std::fs::write(
                    &path,
                    r#"{"mode": "normal", "inject": {"budget_tokens": 2000}, "note": "mine"}"#,
                )
                .unwrap();
            }
            set_in(doc, &["mode"], "heavy".into())
        })
        .unwrap();
        assert_eq!((c.mode, c.inject.budget_tokens), (Mode::Heavy, 2000));
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["note"], "mine");
        assert_eq!(v["inject"]["budget_tokens"], 2000);
        assert_eq!(v["mode"], "heavy");
    }

    #[test]
    fn a_new_file_is_created_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        let c = Config {
            mode: Mode::Heavy,
            ..Config::default()
        };
        assert!(c.create(&path).unwrap());
        assert!(
            !Config::default().create(&path).unwrap(),
            "not over an existing one"
        );
        assert_eq!(Config::load(&path).unwrap().mode, Mode::Heavy);
    }

    #[test]
    fn an_invalid_file_or_value_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, "{\"mode\": \"normal\",\n  oops }").unwrap();
        let e = Config::set_key(&path, &["mode"], "heavy".into()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\"mode\": \"normal\",\n  oops }"
        );
        std::fs::write(&path, r#"{"mode": "normal"}"#).unwrap();
        assert!(Config::set_key(&path, &["mode"], "huge".into()).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"mode": "normal"}"#
        );
    }

    #[test]
    fn llm_defaults_limits_and_models_by_mode() {
        let c = Config::default();
        assert!(!c.llm.is_enabled());
        assert_eq!(c.llm.max_tokens_per_call, Some(8_000));
        assert_eq!(c.llm.timeouts.synthesis_secs, 60);
        let c: Config = serde_json::from_str(
            r#"{"llm": {"provider": "anthropic", "model": "m", "models_by_mode": {"heavy": "big"},
                "max_cost_per_day_usd": null, "timeouts": {"ping_secs": 2}}}"#,
        )
        .unwrap();
        assert!(c.llm.is_enabled());
        assert_eq!(c.llm.max_cost_per_day_usd, None, "null disables the limit");
        assert_eq!(c.llm.max_tokens_per_call, Some(8_000));
        assert_eq!(
            (c.llm.timeouts.ping_secs, c.llm.timeouts.coherence_secs),
            (2, 15)
        );
        assert_eq!(c.llm.model_for(Mode::Heavy).as_deref(), Some("big"));
        assert_eq!(c.llm.model_for(Mode::Light).as_deref(), Some("m"));
    }
}
