//! Workflow runs in the daemon: started by a person (`ai run`) or an automation, one at a time
//! (queued in start order), saved under `.ai/db/runs/`, followed live or replayed
//! (`ai watch RUN`), re-verified, repaired or exported, and remembered: when a run ends, its
//! task, plan, verdict and changes are captured into memory (source `task`).

use super::llm_tasks::LlmState;
use super::state::{CaptureHandle, ConfigHandle, Lifecycle};
use ai_smartness_config::Config;
use ai_smartness_core::clock::SharedClock;
use ai_smartness_core::memory::ids;
use ai_smartness_llm::LlmClient;
use ai_smartness_proto::protocol::{CaptureRequest, ErrorCode, Response, RunAction, RunRequest};
use ai_smartness_records::retention::Keep;
use ai_smartness_records::run::{ExecuteMode, Phase, Run, RunEventData};
use ai_smartness_records::Record;
use ai_smartness_replies::{RunLine, RunList, RunShown, RunStarted, RunSummary};
use ai_smartness_store::JsonFolder;
use ai_smartness_workflow::pipeline::{fail, Pipeline, RunHandle, Settings};
use ai_smartness_workflow::sandbox::Sandbox;
use ai_smartness_workflow::tools::{ToolConfig, Toolbox};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};

/// Why a run accepted could not start its work (it is marked failed with this).
#[derive(Debug, thiserror::Error)]
enum RunStartError {
    #[error("no model is configured: set llm.provider in .ai/config.json")]
    NoLlm,
    #[error("the sandbox copy {0} is gone")]
    SandboxGone(String),
    #[error("could not copy the workspace: {0}")]
    Copy(std::io::Error),
}

/// Id prefix of runs.
pub const RUN_PREFIX: &str = <Run as Record>::PREFIX;
/// Sandbox copies go under this folder of the temporary directory.
const SANDBOX_DIR: &str = "runs";
/// The prefix of the workflow settings read from the daemon's environment.
pub const ENV_PREFIX: &str = "AI_SMARTNESS_";
/// Longest task text.
const MAX_TASK_CHARS: usize = 20_000;

/// The runs the daemon knows.
pub struct RunRegistry {
    /// Where each run is saved (one file each, and its events next to it).
    dir: PathBuf,
    /// Every run, by id.
    runs: Mutex<BTreeMap<String, Arc<RunHandle>>>,
    /// One run works at a time: two runs in one workspace would trip over each other.
    slot: Arc<Semaphore>,
    /// Counts the runs started and ended: the dashboard's list follows it (a value, so a slow
    /// reader never holds anything up).
    changed: tokio::sync::watch::Sender<u64>,
}

impl RunRegistry {
    /// Loads the stored runs; a run a crash interrupted is marked failed (it can be
    /// re-verified or repaired). Unreadable files are quarantined.
    pub fn open(
        db_dir: &Path,
        clock: ai_smartness_core::clock::SharedClock,
    ) -> Result<RunRegistry, ai_smartness_store::StoreError> {
        let folder = JsonFolder::<Run>::open(db_dir)?;
        let dir = folder.dir().to_path_buf();
        let loaded = folder.load()?;
        for (path, why) in &loaded.quarantined {
            tracing::warn!("quarantined {}: {why}", path.display());
        }
        let mut runs = BTreeMap::new();
        for (path, run) in loaded.records {
            let interrupted = !run.phase.is_final();
            let id = run.id.clone();
            let h = RunHandle::new(run, path, clock.clone());
            if interrupted {
                fail(&h, "interrupted: the daemon stopped during the run".into());
            }
            runs.insert(id, h);
        }
        Ok(RunRegistry {
            dir,
            runs: Mutex::new(runs),
            slot: Arc::new(Semaphore::new(1)),
            changed: tokio::sync::watch::channel(0).0,
        })
    }

    fn get(&self, id: &str) -> Option<Arc<RunHandle>> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Forgets the finished runs `keep` no longer keeps (the oldest past its count or age) and
    /// deletes their files (each run's events are in its file). A run in progress is never
    /// concerned. Blocking: file removals.
    pub fn prune_finished(
        &self,
        keep: Keep,
        now: chrono::DateTime<chrono::Utc>,
    ) -> std::io::Result<usize> {
        let gone = {
            let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
            let finished = runs
                .values()
                .filter_map(|h| {
                    let (phase, created, finished) = h.times();
                    phase
                        .is_final()
                        .then(|| (finished.unwrap_or(created), h.id()))
                })
                .collect();
            let gone = ai_smartness_store::retention::expired(finished, keep, now);
            gone.into_iter()
                .filter_map(|id| runs.remove(&id))
                .collect::<Vec<_>>()
        };
        for h in &gone {
            let log = ai_smartness_workflow::pipeline::events_path(h.path());
            for path in [h.path(), log.as_path()] {
                ai_smartness_store::retention::remove_if_present(path)?;
            }
        }
        if !gone.is_empty() {
            ai_smartness_proto::atomic::sync_dir(&self.dir)?;
        }
        Ok(gone.len())
    }

    fn all(&self) -> Vec<Arc<RunHandle>> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }
}

/// Workflow runs with what they work with: the model, the config, the journal their outcome
/// is remembered through.
#[derive(Clone)]
pub struct Runs {
    /// The runs known, and the slot one works in at a time.
    registry: Arc<RunRegistry>,
    /// The model every step calls.
    llm: Arc<LlmState>,
    /// The workflow settings, read when a run starts.
    config: ConfigHandle,
    /// A finished run is remembered as a capture.
    capture: CaptureHandle,
    /// Runs work as tracked tasks.
    life: Lifecycle,
    /// Dates runs and their events.
    clock: SharedClock,
    /// The project: a run's workspace unless the settings name another.
    root: PathBuf,
}

/// Says a run ended when dropped (see [`Runs::subscribe_changes`]).
struct RunEnded(Arc<RunRegistry>);

impl Drop for RunEnded {
    fn drop(&mut self) {
        self.0.changed.send_modify(|n| *n += 1);
    }
}

/// The workflow's settings: config, overridden by the daemon's environment, where each is named
/// `AI_SMARTNESS_` + the setting (`AI_SMARTNESS_EXECUTE_MODE`): the daemon inherits whatever
/// environment started it (often a hook's), and an unprefixed `EXECUTE_MODE` there could be
/// anybody's.
fn settings(config: &Config) -> (Settings, ExecuteMode, Option<String>) {
    settings_with(config, |k| std::env::var(k).ok())
}

/// [`settings`] with the environment given as a lookup.
fn settings_with(
    config: &Config,
    var: impl Fn(&str) -> Option<String>,
) -> (Settings, ExecuteMode, Option<String>) {
    let w = &config.workflow;
    let env = |k: &str| var(&format!("{ENV_PREFIX}{k}")).filter(|v| !v.trim().is_empty());
    let num = |k: &str, d: u32| env(k).and_then(|v| v.parse().ok()).unwrap_or(d);
    let mode = match env("EXECUTE_MODE")
        .unwrap_or(w.execute_mode.clone())
        .as_str()
    {
        "sandbox" => ExecuteMode::Sandbox,
        _ => ExecuteMode::Direct,
    };
    let fallback = config.llm.model_for(config.mode);
    let s = Settings {
        executor_model: env("EXECUTOR_MODEL")
            .or(w.executor_model.clone())
            .or(fallback.clone()),
        verifier_model: env("VERIFIER_MODEL")
            .or(w.verifier_model.clone())
            .or(fallback),
        max_iterations: num("MAX_ITERATIONS", w.max_iterations),
        max_repair_cycles: num("MAX_REPAIR_CYCLES", w.max_repair_cycles),
        verify_required: env("VERIFY_REQUIRED")
            .map(|v| v != "false" && v != "0")
            .unwrap_or(w.verify_required),
        max_tokens: config.orchestrator.max_output_tokens,
        call_timeout: Duration::from_secs(w.call_timeout_secs.max(1)),
    };
    (s, mode, env("WORKSPACE_DIR").or(w.workspace_dir.clone()))
}

fn toolbox(config: &Config, workspace: &Path, sandbox: bool, write: bool) -> Toolbox {
    let w = &config.workflow;
    let mut bases: Vec<PathBuf> = ["/home", "/workspace", "/tmp", "/var/www", "/opt"]
        .iter()
        .map(PathBuf::from)
        .collect();
    bases.push(workspace.to_path_buf());
    Toolbox::new(ToolConfig {
        workspace: workspace.to_path_buf(),
        sandbox,
        write_enabled: write,
        allowed_commands: w.allowed_commands.clone(),
        test_command: w.test_command.clone(),
        lint_command: w.lint_command.clone(),
        search_bases: bases,
        command_timeout: Duration::from_secs(w.command_timeout_secs.max(1)),
        max_output_bytes: 20_000,
    })
}

/// What a pipeline task does.
#[derive(Clone, Copy)]
enum Work {
    Full,
    Reverify,
    Repair,
}

/// Where sandbox copies go: a folder of this user's own (0700), never a shared one another
/// user could create first and read the copies from (or plant files in).
fn sandbox_root() -> std::io::Result<PathBuf> {
    sandbox_root_in(ai_smartness_proto::paths::user_cache_dir())
}

fn sandbox_root_in(cache: Option<PathBuf>) -> std::io::Result<PathBuf> {
    let root = cache
        .ok_or_else(|| std::io::Error::other("no HOME or XDG_CACHE_HOME for sandbox copies"))?
        .join(SANDBOX_DIR);
    ai_smartness_proto::paths::ensure_private_dir(&root)?;
    Ok(root)
}

/// Whether a sandboxed run's copy was pruned or has otherwise disappeared.
fn sandbox_gone(run: &Run) -> bool {
    run.mode == ExecuteMode::Sandbox
        && run.copied_from.is_some()
        && (run.sandbox_removed_at.is_some() || !Path::new(&run.workspace).is_dir())
}

fn summary(r: &Run) -> RunSummary {
    RunSummary {
        id: r.id.clone(),
        task: r.task.clone(),
        phase: r.phase,
        mode: r.mode,
        verdict: r.verdict.as_ref().map(|v| v.status),
        repair_cycles: r.repair_cycles,
        iterations: r.iterations,
        created_at: r.created_at,
        finished_at: r.finished_at,
        started_by: r.started_by.clone(),
    }
}

impl Runs {
    pub fn new(
        registry: Arc<RunRegistry>,
        llm: Arc<LlmState>,
        config: ConfigHandle,
        capture: CaptureHandle,
        life: Lifecycle,
        clock: SharedClock,
        root: PathBuf,
    ) -> Runs {
        Runs {
            registry,
            llm,
            config,
            capture,
            life,
            clock,
            root,
        }
    }

    /// Forgets the finished runs `keep` no longer keeps (see [`RunRegistry::prune_finished`]).
    /// Blocking: file removals.
    pub fn prune_finished(
        &self,
        keep: Keep,
        now: chrono::DateTime<chrono::Utc>,
    ) -> std::io::Result<usize> {
        self.registry.prune_finished(keep, now)
    }

    fn pipeline(&self, run: &Run) -> Result<Pipeline, RunStartError> {
        let llm: LlmClient = self
            .llm
            .runtime()
            .map(|l| l.client().clone())
            .ok_or(RunStartError::NoLlm)?;
        let config = self.config.get();
        let (settings, _, _) = settings(&config);
        let tools = toolbox(
            &config,
            Path::new(&run.workspace),
            run.mode == ExecuteMode::Sandbox,
            run.write_enabled,
        );
        Ok(Pipeline {
            llm,
            tools: Arc::new(tools),
            settings,
        })
    }

    /// Changes when a run starts or ends.
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.registry.changed.subscribe()
    }

    fn spawn(&self, h: Arc<RunHandle>, work: Work) {
        let d = self.clone();
        self.registry.changed.send_modify(|n| *n += 1);
        self.life.spawn(async move {
            // However the run ends (done, failed early, cancelled at shutdown), it is said.
            let _ended = RunEnded(d.registry.clone());
            let slot = d.registry.slot.clone();
            let Ok(_permit) = slot.acquire_owned().await else {
                return;
            };
            let ready = match d.make_sandbox(&h).await {
                Ok(()) => d.pipeline(&h.snapshot()),
                Err(e) => Err(e),
            };
            let p = match ready {
                Ok(p) => p,
                Err(e) => {
                    fail(&h, e.to_string());
                    return;
                }
            };
            match work {
                Work::Full => p.run(&h).await,
                Work::Reverify => p.reverify(&h).await,
                Work::Repair => p.force_repair(&h).await,
            }
            d.remember(&h.snapshot()).await;
        });
    }

    /// Copies the workspace for a sandboxed run that has no copy yet (off the async workers: a
    /// big workspace takes a while). The copy is kept after the run: re-verify and repair use
    /// it. Making one removes the copies beyond the newest `workflow.keep_sandboxes`.
    async fn make_sandbox(&self, h: &RunHandle) -> Result<(), RunStartError> {
        let run = h.snapshot();
        if run.mode != ExecuteMode::Sandbox {
            return Ok(());
        }
        if run.copied_from.is_some() {
            // A re-verify or repair accepted just before its copy was pruned: say so, rather than
            // run the tools in a folder that is gone.
            if sandbox_gone(&run) {
                return Err(RunStartError::SandboxGone(run.workspace));
            }
            return Ok(());
        }
        let source = PathBuf::from(&run.workspace);
        let copy = tokio::task::spawn_blocking(move || {
            let parent = sandbox_root()?;
            Sandbox::create(&source, &parent).map(Sandbox::keep)
        })
        .await
        .map_err(|e| RunStartError::Copy(std::io::Error::other(e)))?
        .map_err(RunStartError::Copy)?;
        h.update(|r| {
            r.copied_from = Some(std::mem::replace(
                &mut r.workspace,
                copy.display().to_string(),
            ))
        });
        self.prune_sandboxes(self.sandboxes_kept()).await;
        Ok(())
    }

    /// How many sandbox copies stay (at least the working run's).
    fn sandboxes_kept(&self) -> usize {
        self.config.get().workflow.keep_sandboxes.max(1)
    }

    /// Removes the sandbox copies of all but the `keep` newest sandboxed runs (`keep` ≥ 1: the
    /// one that works now is the newest). Runs not yet over are left alone: a queued re-verify
    /// may be about to use its copy.
    /// Only folders under the sandbox root are removed, whatever a run file says.
    async fn prune_sandboxes(&self, keep: usize) {
        let mut copies: Vec<(Run, Arc<RunHandle>)> = self
            .registry
            .all()
            .into_iter()
            .map(|h| (h.snapshot(), h))
            .filter(|(r, _)| {
                r.mode == ExecuteMode::Sandbox
                    && r.copied_from.is_some()
                    && r.sandbox_removed_at.is_none()
            })
            .collect();
        copies.sort_by(|(a, _), (b, _)| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        let Ok(root) = sandbox_root().and_then(|r| r.canonicalize()) else {
            return;
        };
        for (run, h) in copies.into_iter().skip(keep) {
            if !run.phase.is_final() {
                continue;
            }
            let path = PathBuf::from(&run.workspace);
            if !path.starts_with(&root) || path == root {
                tracing::warn!(
                    "run {}: its copy {} is not under {}; left alone",
                    run.id,
                    path.display(),
                    root.display()
                );
                continue;
            }
            let removed =
                tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                })
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e)));
            match removed {
                Ok(()) => {
                    let now = self.clock.now();
                    h.update(|r| r.sandbox_removed_at = Some(now));
                    tracing::info!("run {}: sandbox copy removed", run.id);
                }
                Err(e) => tracing::warn!("run {}: could not remove its copy: {e}", run.id),
            }
        }
    }

    /// Captures what the run did into memory, as a sub-agent's report (source `task`).
    async fn remember(&self, run: &Run) {
        let verdict = run
            .verdict
            .as_ref()
            .map(|v| format!("{:?} (confidence {:.2})", v.status, v.confidence).to_uppercase())
            .unwrap_or_else(|| "none".into());
        let mut content = format!(
            "Workflow run {} ({}): {}\nResult: {} after {} repair cycle(s); verdict {verdict}.\n",
            run.id,
            run.phase.as_str(),
            run.task,
            if run.phase == Phase::Complete {
                "passed"
            } else {
                "failed"
            },
            run.repair_cycles
        );
        if !run.plan.is_empty() {
            content.push_str(&format!("Plan: {}\n", run.plan.join("; ")));
        }
        if let Some(v) = &run.verdict {
            if !v.issues.is_empty() {
                content.push_str(&format!("Issues: {}\n", v.issues.join("; ")));
            }
        }
        if !run.changes.trim().is_empty() {
            content.push_str(&format!("Changed:\n{}\n", run.changes.trim()));
        }
        if !run.response.is_empty() {
            content.push_str(&format!(
                "Summary: {}\n",
                ai_smartness_workflow::prompts::tail(&run.response, 1_500)
            ));
        }
        if let Some(e) = &run.error {
            content.push_str(&format!("Error: {e}\n"));
        }
        let mut metadata = serde_json::Map::new();
        metadata.insert("run_id".into(), serde_json::Value::String(run.id.clone()));
        let req = CaptureRequest {
            tool: "Task".into(),
            content,
            at: None,
            source: Some("assistant".into()),
            session_id: None,
            metadata: Some(metadata),
            hook: None,
        };
        if let Err(e) = self.capture.journal_capture(req).await {
            tracing::error!("run {} not remembered: {e}", run.id);
        }
    }

    /// Starts a run; returns its id.
    pub fn start(
        &self,
        task: &str,
        sandbox: Option<bool>,
        write: Option<bool>,
        started_by: &str,
    ) -> Result<String, Response> {
        if self.llm.runtime().is_none() {
            return Err(Response::error(
                ErrorCode::NoLlm,
                "no model is configured: set llm.provider in .ai/config.json",
            ));
        }
        let task = task.trim();
        if task.is_empty() || task.chars().count() > MAX_TASK_CHARS {
            return Err(Response::error(
                ErrorCode::BadRequest,
                format!("a task has 1 to {MAX_TASK_CHARS} characters"),
            ));
        }
        let config = self.config.get();
        let (_, mode, workspace_dir) = settings(&config);
        let mode = match sandbox {
            Some(true) => ExecuteMode::Sandbox,
            Some(false) => ExecuteMode::Direct,
            None => mode,
        };
        let workspace = workspace_dir
            .map(PathBuf::from)
            .unwrap_or_else(|| self.root.clone());
        if !workspace.is_dir() {
            return Err(Response::error(
                ErrorCode::BadRequest,
                format!("the workspace {} is not a folder", workspace.display()),
            ));
        }
        let now = self.clock.now();
        let id = ids::new_id(RUN_PREFIX, now);
        // In sandbox mode this becomes the copy's path once the run's task has made it.
        let run = Run::new(
            id.clone(),
            task.to_string(),
            mode,
            write.unwrap_or(config.workflow.write_enabled),
            workspace.display().to_string(),
            started_by.to_string(),
            now,
        );
        let runs = &self.registry;
        let h = RunHandle::new(run, runs.dir.join(format!("{id}.json")), self.clock.clone());
        // Saved before it starts: `ai runs` lists it at once, even if the daemon stops now.
        h.update(|_| {});
        runs.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), h.clone());
        self.spawn(h, Work::Full);
        Ok(id)
    }

    /// For `ai status`: how many runs, which one works now.
    pub fn overview(&self) -> ai_smartness_replies::RunsOverview {
        // Each run's phase, not a copy of the run: a copy holds every event.
        let runs: Vec<(String, Phase)> = self
            .registry
            .all()
            .iter()
            .map(|h| (h.id(), h.times().0))
            .collect();
        ai_smartness_replies::RunsOverview {
            total: runs.len(),
            running: runs
                .iter()
                .filter(|(_, phase)| !phase.is_final())
                .map(|(id, _)| id.clone())
                .collect(),
            passed: runs.iter().filter(|(_, p)| *p == Phase::Complete).count(),
            failed: runs.iter().filter(|(_, p)| *p == Phase::Failed).count(),
        }
    }

    /// `{"run": {...}}`.
    pub async fn handle(&self, r: RunRequest) -> Response {
        match r.action {
            RunAction::Start => {
                let Some(task) = r.task.as_deref() else {
                    return Response::error(ErrorCode::BadRequest, "start needs a task");
                };
                match self.start(task, r.sandbox, r.write, "person") {
                    Ok(id) => Response::reply(&RunStarted { id, started: false }),
                    Err(e) => e,
                }
            }
            RunAction::List => {
                let mut runs: Vec<_> = self
                    .registry
                    .all()
                    .iter()
                    .map(|h| h.read(|r| (r.created_at, r.id.clone(), summary(r))))
                    .collect();
                runs.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
                Response::reply(&RunList {
                    runs: runs.into_iter().map(|(_, _, s)| s).collect(),
                })
            }
            action => {
                let Some(id) = r.id.as_deref() else {
                    return Response::error(
                        ErrorCode::BadRequest,
                        "this action needs the run's id",
                    );
                };
                let Some(h) = self.registry.get(id) else {
                    return Response::error(
                        ErrorCode::NotFound,
                        format!("no run {id} (see `ai runs`)"),
                    );
                };
                let run = h.snapshot();
                match action {
                    RunAction::Export => Response::reply(&run),
                    RunAction::Show => {
                        // The events are for `export` and `watch`; a show stays readable.
                        let mut run = run;
                        let events_count = std::mem::take(&mut run.events).len();
                        Response::reply(&RunShown { run, events_count })
                    }
                    RunAction::Reverify | RunAction::Repair => {
                        if !run.phase.is_final() {
                            return Response::error(
                                ErrorCode::Conflict,
                                format!("run {id} is still in {}", run.phase.as_str()),
                            );
                        }
                        if self.llm.runtime().is_none() {
                            return Response::error(ErrorCode::NoLlm, "no model is configured");
                        }
                        if sandbox_gone(&run) {
                            return Response::error(ErrorCode::NotFound,
                            format!(
                                "the sandbox copy of run {id} is gone (the copies of the {} newest sandboxed runs are kept: workflow.keep_sandboxes); start a new run",
                                self.sandboxes_kept()
                            ),
                        );
                        }
                        let work = if action == RunAction::Reverify {
                            Work::Reverify
                        } else {
                            Work::Repair
                        };
                        // Not final again until the work is done (and `watch` follows it).
                        h.update(|r| {
                            r.phase = Phase::Verify;
                            r.finished_at = None;
                        });
                        self.spawn(h, work);
                        Response::reply(&RunStarted {
                            id: id.to_string(),
                            started: true,
                        })
                    }
                    RunAction::Start | RunAction::List => unreachable!("handled above"),
                }
            }
        }
    }

    /// The run's events for `ai watch RUN`: the stored ones, then live ones, ending after the
    /// run's `complete` event.
    pub fn watch(&self, id: &str) -> Result<mpsc::Receiver<RunLine>, Response> {
        let h = self.registry.get(id).ok_or_else(|| {
            Response::error(ErrorCode::NotFound, format!("no run {id} (see `ai runs`)"))
        })?;
        let (tx, rx) = mpsc::channel(256);
        // Subscribe before the snapshot: an event is either stored in it or received live.
        let mut live = h.subscribe();
        let run = h.snapshot();
        self.life.spawn(async move {
            let mut last = 0;
            let mut done = run.phase.is_final();
            for e in run.events {
                last = e.seq;
                if tx.send(RunLine::Event(e)).await.is_err() {
                    return;
                }
            }
            while !done {
                match live.recv().await {
                    Ok(e) if e.seq <= last => {}
                    Ok(e) => {
                        last = e.seq;
                        done = matches!(e.data, RunEventData::Complete { .. });
                        if tx.send(RunLine::Event(e)).await.is_err() {
                            return;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        let _ = tx.send(RunLine::lagged(n)).await;
                    }
                    Err(_) => return,
                }
            }
        });
        Ok(rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_settings_come_only_from_prefixed_variables() {
        let config = Config::default();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(name, _)| *name == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let (_, mode, workspace) = settings_with(
            &config,
            env(&[
                ("EXECUTE_MODE", "sandbox"),
                ("WORKSPACE_DIR", "/somebody/else"),
            ]),
        );
        assert_eq!((mode, workspace), (ExecuteMode::Direct, None));
        let (_, mode, workspace) = settings_with(
            &config,
            env(&[
                ("AI_SMARTNESS_EXECUTE_MODE", "sandbox"),
                ("AI_SMARTNESS_WORKSPACE_DIR", "/mine"),
            ]),
        );
        assert_eq!(
            (mode, workspace.as_deref()),
            (ExecuteMode::Sandbox, Some("/mine"))
        );
    }

    /// Unix modes and uids (Windows checks the folder's owner: proto's `ensure_private_dir`).
    #[cfg(unix)]
    #[test]
    fn sandbox_copies_go_to_a_private_folder_of_the_user() {
        use std::os::unix::fs::MetadataExt;
        let cache = tempfile::tempdir().unwrap();
        let root = sandbox_root_in(Some(cache.path().to_path_buf())).unwrap();
        assert!(root.starts_with(cache.path()), "{}", root.display());
        assert_eq!(std::fs::metadata(&root).unwrap().mode() & 0o777, 0o700);
        assert!(sandbox_root_in(None).is_err());
        if ai_smartness_proto::paths::current_uid() == 0 {
            // Someone else's folder there is refused, not used.
            std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
            assert!(sandbox_root_in(Some(cache.path().to_path_buf())).is_err());
        }
    }
}
