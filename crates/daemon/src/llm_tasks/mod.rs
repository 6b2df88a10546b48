//! The LLM's work in the daemon, all of it off the hook path.
//!
//! Hooks never wait for an LLM: a capture is acknowledged once journaled, and the worker places
//! it with the local pipeline as it always does. When an LLM is configured, the worker then hands
//! [`Job`]s to one background task through a bounded queue (a full queue skips the job and
//! counts it: the local result simply stays). The task, one call at a time:
//!
//! - **extraction**: refines the thread the capture went to (title, topics,
//!   summary, decisions, questions);
//! - **coherence**: a capture whose local coherence with the pending Glob/Grep
//!   result was uncertain (0.3–0.6) and that started a thread becomes its CHILD_OF if the LLM
//!   scores it above 0.6;
//! - **borderline reactivation**: a suspended thread 0.15–0.35 similar to a
//!   capture is reactivated if the LLM says the capture concerns it, and linked to the capture's
//!   thread by a bridge (the capture stays where it was placed);
//! - **bridge typing**: new gossip EXTENDS bridges, batched, may become DEPENDS, CONTRADICTS or
//!   REPLACES.
//!
//! The compaction synthesis runs as its own task ([`Refiner::spawn_synthesis`]) so it never
//! queues behind extractions. `ai health` reads a cached reachability check, refreshed in the
//! background ([`LlmRuntime::health`]). Every call is logged on the tracing target `llm`.

mod answers;
pub mod costs;
mod jobs;
mod prompts;
mod refiner;
mod runtime;

pub use jobs::*;
pub use refiner::*;
pub use runtime::*;

use super::state::{ConfigHandle, Lifecycle, MemoryHandle};
use ai_smartness_capture::extract::Extraction;
use ai_smartness_capture::source::SourceType;
use ai_smartness_config::{Config, LlmConfig};
use ai_smartness_core::clock::SharedClock;
use ai_smartness_core::memory::engine::{CoherenceBand, Decision, Outcome};
use ai_smartness_core::memory::refine::Refinement;
use ai_smartness_core::memory::types::{BridgeStatus, BridgeType, Thread, ThreadStatus};
use ai_smartness_llm::answers::{ask_json, Answer, AskError};
use ai_smartness_llm::{ChatRequest, ErrorKind, LlmClient, ProviderKind, ProviderSettings};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_records::cost::Limits;
use ai_smartness_replies::{LlmView, UsageToday};
use chrono::{DateTime, Utc};
use costs::CostTracker;
use prompts::ThreadBrief;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome() -> Outcome {
        Outcome {
            decision: Decision::NewThread,
            thread_id: "thread_a".into(),
            message_id: "msg_a".into(),
            similarity: 0.0,
            bridges_created: 1,
            coherence: Some((0.45, CoherenceBand::Orphan)),
            context_thread: Some("thread_glob".into()),
            borderline_suspended: Some(("thread_old".into(), 0.2)),
            new_bridges: vec!["bridge_1".into()],
        }
    }

    fn kinds(jobs: &[Job]) -> Vec<&'static str> {
        jobs.iter()
            .map(|j| match j {
                Job::Refine(_) => "refine",
                Job::Coherence(_) => "coherence",
                Job::Reactivation(_) => "reactivation",
                Job::Bridges(_) => "bridges",
            })
            .collect()
    }

    fn placed(o: &Outcome) -> Placed<'_> {
        Placed {
            outcome: o,
            source: SourceType::Read,
            content: "content",
            local: Extraction::default(),
            title_before: "t".into(),
        }
    }

    #[test]
    fn a_capture_gives_the_jobs_its_outcome_calls_for() {
        let o = outcome();
        assert_eq!(
            kinds(&jobs_for(placed(&o))),
            ["refine", "coherence", "reactivation", "bridges"]
        );
        // Continued an existing thread, confident coherence, nothing borderline: extraction only.
        let o = Outcome {
            decision: Decision::Continue,
            borderline_suspended: None,
            new_bridges: Vec::new(),
            ..outcome()
        };
        assert_eq!(kinds(&jobs_for(placed(&o))), ["refine"]);
        let o = Outcome {
            coherence: Some((0.7, CoherenceBand::Child)),
            borderline_suspended: None,
            new_bridges: Vec::new(),
            ..outcome()
        };
        assert_eq!(kinds(&jobs_for(placed(&o))), ["refine"]);
    }

    #[test]
    fn none_is_off_and_an_unknown_provider_falls_back() {
        let dir = tempfile::tempdir().unwrap();
        let paths = ProjectPaths::new(dir.path().to_path_buf());
        let (state, rx) = setup(
            &Config::default(),
            &paths,
            ai_smartness_core::clock::system(),
        );
        assert!(matches!(state, LlmState::Off) && rx.is_none());
        let mut c = Config::default();
        c.llm.provider = "no-such-llm".into();
        let (state, rx) = setup(&c, &paths, ai_smartness_core::clock::system());
        assert!(matches!(state, LlmState::Fallback { .. }) && rx.is_none());
        assert_eq!(local_view(&state).unwrap().in_use, "local fallback");
        assert!(!dir.path().join(".ai/llm_usage.json").exists());
    }

    /// A provider answering from a script, recording what it was asked.
    #[derive(Debug, Default)]
    struct Scripted {
        answers: Mutex<std::collections::VecDeque<String>>,
        seen: Mutex<Vec<ChatRequest>>,
    }

    impl ai_smartness_llm::Provider for Scripted {
        fn id(&self) -> &str {
            "anthropic"
        }
        fn kind(&self) -> ProviderKind {
            ProviderKind::AnthropicMessages
        }
        fn default_model(&self) -> &str {
            "claude-haiku-5-5"
        }
        fn complete<'a>(
            &'a self,
            req: &'a ChatRequest,
            _: Option<&'a ai_smartness_llm::EventSink<'a>>,
        ) -> ai_smartness_llm::BoxFuture<
            'a,
            Result<ai_smartness_llm::ChatResponse, ai_smartness_llm::LlmError>,
        > {
            Box::pin(async move {
                lock(&self.seen).push(req.clone());
                let text = lock(&self.answers).pop_front().ok_or_else(|| {
                    ai_smartness_llm::LlmError::new(ErrorKind::Network, "the script is over")
                })?;
                Ok(ai_smartness_llm::ChatResponse {
                    text,
                    tool_calls: Vec::new(),
                    stop_reason: Some("end_turn".into()),
                    model: "claude-haiku-5-5".into(),
                    usage: ai_smartness_llm::Usage {
                        input_tokens: 100,
                        output_tokens: 20,
                        ..Default::default()
                    },
                    cost_usd: None,
                })
            })
        }
        fn ping(&self) -> ai_smartness_llm::BoxFuture<'_, Result<(), ai_smartness_llm::LlmError>> {
            Box::pin(async { Ok(()) })
        }
    }

    struct Rig {
        _dir: tempfile::TempDir,
        refiner: Refiner,
        memory: MemoryHandle,
        llm: Arc<LlmRuntime>,
        script: Arc<Scripted>,
        _jobs: mpsc::Receiver<Job>,
    }

    impl Rig {
        /// An in-process daemon over `memory` whose LLM answers `answers` in order.
        fn new(memory: ai_smartness_core::memory::engine::Memory, answers: &[&str]) -> Rig {
            let dir = tempfile::tempdir().unwrap();
            let script = Arc::new(Scripted::default());
            lock(&script.answers).extend(answers.iter().map(|a| a.to_string()));
            let costs = Arc::new(CostTracker::open(
                &dir.path().join(".ai"),
                Limits::default(),
            ));
            let client = LlmClient::new(script.clone())
                .with_retry(ai_smartness_llm::retry::RetryPolicy::none());
            let (runtime, jobs) =
                LlmRuntime::new(client, Some(costs), ai_smartness_core::clock::system());
            let llm = Arc::new(runtime);
            let daemon =
                crate::app::Daemon::for_tests(dir.path(), memory, LlmState::On(llm.clone()));
            Rig {
                _dir: dir,
                refiner: daemon.refiner().clone(),
                memory: daemon.memory().clone(),
                llm,
                script,
                _jobs: jobs,
            }
        }

        fn asked(&self) -> Vec<String> {
            lock(&self.script.seen)
                .iter()
                .map(|r| {
                    r.messages
                        .iter()
                        .map(|m| m.text())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .collect()
        }
    }

    /// A capture on a few axes of a 16-dimension space (shared axes: similar captures).
    fn cap(
        tool: &str,
        title: &str,
        topics: &[&str],
        axes: &[usize],
    ) -> ai_smartness_core::memory::engine::Capture {
        let mut v = vec![0f32; 16];
        for &a in axes {
            v[a] = 1.0;
        }
        ai_smartness_vectors::normalize(&mut v);
        ai_smartness_core::memory::engine::Capture {
            tool: tool.into(),
            source_type: ai_smartness_capture::source::source_for_tool(tool),
            author: ai_smartness_core::memory::types::Author::Assistant,
            content: format!("{title}: the content"),
            extraction: Extraction {
                title: title.into(),
                summary: format!("{title} summary"),
                subjects: topics.iter().map(|s| s.to_string()).collect(),
                ..Extraction::default()
            },
            embedding: v,
            at: Utc::now(),
            metadata: serde_json::Map::new(),
            units: Vec::new(),
        }
    }

    #[tokio::test]
    async fn an_uncertain_follow_up_becomes_a_child_when_the_llm_says_so() {
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let g = m
            .ingest(cap("Glob", "store files", &["store"], &[0]))
            .thread_id;
        let c = m.ingest(cap("Read", "parser", &["parser"], &[5])).thread_id;
        let d = m.ingest(cap("Read", "lexer", &["lexer"], &[9])).thread_id;
        let rig = Rig::new(
            m,
            &[
                r#"{"score": 0.8, "reason": "same files"}"#,
                r#"{"score": 0.4}"#,
            ],
        );
        let job = |child: &str| CoherenceJob {
            child: child.into(),
            parent: g.clone(),
            local_score: 0.45,
            source: SourceType::Read,
            content: Arc::from("fn parse() {}"),
        };
        rig.refiner.coherence(&rig.llm, job(&c)).await;
        rig.refiner.coherence(&rig.llm, job(&d)).await;
        {
            let mem = rig.memory.lock();
            assert_eq!(
                mem.graph.thread(&c).unwrap().parent_id.as_deref(),
                Some(g.as_str())
            );
            let b = mem.graph.bridge_between(&c, &g).unwrap();
            assert_eq!(b.relation_type, BridgeType::ChildOf);
            assert!(
                mem.graph.thread(&d).unwrap().parent_id.is_none(),
                "0.4: orphan"
            );
        }
        let asked = rig.asked();
        assert!(asked[0].contains("Glob result") && asked[0].contains("store files: the content"));
        let n = rig.llm.counters();
        assert_eq!((n.coherence_checks, n.coherence_children), (2, 1));
        // An adopted thread is not asked about again.
        let adopted = job(&c);
        rig.refiner.coherence(&rig.llm, adopted).await;
        assert_eq!(rig.asked().len(), 2);
    }

    #[tokio::test]
    async fn a_borderline_suspended_thread_is_woken_and_linked_once() {
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let s = m
            .ingest(cap("Read", "auth tokens", &["auth"], &[2]))
            .thread_id;
        m.set_thread_status(&s, ThreadStatus::Suspended, Utc::now())
            .unwrap();
        let r = m
            .ingest(cap("Bash", "token expiry", &["expiry"], &[3]))
            .thread_id;
        let rig = Rig::new(m, &[r#"{"related": true, "reason": "jwt"}"#]);
        let job = Job::Reactivation(ReactivationJob {
            suspended: s.clone(),
            related: r.clone(),
            similarity: 0.2,
            content: Arc::from("the jwt expires too early"),
        });
        let mut bridges = Vec::new();
        rig.refiner
            .run_job(&rig.llm, job.clone(), &mut bridges)
            .await;
        {
            let mem = rig.memory.lock();
            assert_eq!(mem.graph.thread(&s).unwrap().status, ThreadStatus::Active);
            assert!(mem.graph.bridge_between(&s, &r).is_some());
        }
        assert!(rig.asked()[0].to_lowercase().contains("title: auth tokens"));
        // Asked once per pair, whatever happens next.
        rig.memory
            .lock()
            .set_thread_status(&s, ThreadStatus::Suspended, Utc::now())
            .unwrap();
        rig.refiner.run_job(&rig.llm, job, &mut bridges).await;
        assert_eq!(rig.asked().len(), 1);
        assert_eq!(rig.llm.counters().reactivations, 1);
    }

    #[tokio::test]
    async fn gossip_bridges_are_retyped_in_one_call_and_bad_items_change_nothing() {
        use ai_smartness_core::memory::types::ThinkBridge;
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let a = m
            .ingest(cap("Read", "old cache", &["cache"], &[1]))
            .thread_id;
        let b = m
            .ingest(cap("Read", "new cache", &["redis"], &[6]))
            .thread_id;
        let c = m
            .ingest(cap("Read", "config", &["config"], &[11]))
            .thread_id;
        let bridge = |id: &str, s: &str, t: &str| ThinkBridge {
            id: id.into(),
            source_id: s.into(),
            target_id: t.into(),
            relation_type: BridgeType::Extends,
            reason: "similarity 0.6".into(),
            shared_concepts: Vec::new(),
            confidence: 0.6,
            status: BridgeStatus::Active,
            propagated_from: None,
            propagation_depth: 0,
            use_count: 0,
            last_used: None,
            weight: 1.0,
            weight_at: Utc::now(),
            created_at: Utc::now(),
        };
        m.graph.insert_bridge(bridge("bridge_ab", &a, &b));
        m.graph.insert_bridge(bridge("bridge_ac", &a, &c));
        let rig = Rig::new(
            m,
            &[
                r#"{"bridges": [{"pair": 1, "relation": "REPLACES", "direction": "B_TO_A", "reason": "redis replaces the old cache"},
                              {"pair": 2, "relation": "SIBLING"}]}"#,
            ],
        );
        let mut pending = Vec::new();
        rig.refiner
            .run_job(
                &rig.llm,
                Job::Bridges(vec!["bridge_ab".into(), "bridge_ac".into()]),
                &mut pending,
            )
            .await;
        assert_eq!(pending.len(), 2, "bridges wait for a batch");
        rig.refiner.type_bridges(&rig.llm, pending).await;
        let mem = rig.memory.lock();
        let ab = mem.graph.bridge("bridge_ab").unwrap();
        assert_eq!(ab.relation_type, BridgeType::Replaces);
        assert_eq!(
            (ab.source_id.as_str(), ab.target_id.as_str()),
            (b.as_str(), a.as_str())
        );
        assert!(ab.reason.contains("redis replaces"));
        assert_eq!(
            mem.graph.bridge("bridge_ac").unwrap().relation_type,
            BridgeType::Extends
        );
        assert_eq!(rig.asked().len(), 1, "one call for the batch");
        assert!(rig.asked()[0].contains("PAIR 2:"));
        assert_eq!(rig.llm.counters().bridges_retyped, 1);
    }

    #[tokio::test]
    async fn an_extraction_is_applied_after_one_correction_and_saved() {
        let mut m = ai_smartness_core::memory::engine::Memory::default();
        let local = cap("Bash", "pool notes", &["pool"], &[0]);
        let o = m.ingest(local.clone());
        let title_before = m.graph.thread(&o.thread_id).unwrap().title.clone();
        let rig = Rig::new(
            m,
            &[
                "not json",
                r#"{"title": "Connection Pool Sizing", "summary": "s", "subjects": ["pool"]}"#,
            ],
        );
        rig.memory.flush().await;
        rig.refiner
            .refine(
                &rig.llm,
                RefineJob {
                    thread_id: o.thread_id.clone(),
                    message_id: o.message_id.clone(),
                    title_before: title_before.clone(),
                    source: SourceType::Command,
                    content: Arc::from(local.content.as_str()),
                    local: local.extraction.clone(),
                },
            )
            .await;
        assert_eq!(rig.asked().len(), 2);
        assert!(rig.asked()[1].contains("could not be used"));
        let on_disk = rig.memory.store().load().unwrap();
        let t = on_disk
            .threads
            .iter()
            .find(|t| t.id == o.thread_id)
            .unwrap();
        assert_eq!(t.title, "Connection Pool Sizing", "saved like any edit");
        let usage = rig.llm.costs().unwrap().snapshot();
        assert_eq!(usage.today.totals.calls, 2);
        // A job for a message that went away is dropped without a call... after the call.
        assert_eq!(rig.llm.counters().extractions, 1);
    }

    #[test]
    fn a_full_queue_skips_and_counts() {
        let client = LlmClient::new(Arc::new(Scripted::default()));
        let (llm, _jobs) = LlmRuntime::new(client, None, ai_smartness_core::clock::system());
        for _ in 0..QUEUE_CAPACITY + 10 {
            llm.submit(Job::Bridges(Vec::new()));
        }
        let c = llm.counters();
        assert_eq!(
            (c.queued, c.skipped_queue_full),
            (QUEUE_CAPACITY as u64, 10)
        );
        assert_eq!(llm.queue_len(), QUEUE_CAPACITY);
    }

    #[test]
    fn settings_carry_names_never_keys() {
        let mut c = Config::default();
        c.llm.provider = "anthropic".into();
        c.llm.api_key_env = Some("MY_KEY_VAR".into());
        c.llm.claude_cli_path = Some("/opt/claude".into());
        c.llm
            .models_by_mode
            .insert("normal".into(), json!("m-normal"));
        let s = provider_settings(&c.llm, &c);
        assert_eq!(s.api_key_env.as_deref(), Some("MY_KEY_VAR"));
        assert_eq!(s.model.as_deref(), Some("m-normal"));
        assert_eq!(s.claude_path, Some(PathBuf::from("/opt/claude")));
        assert_eq!(s.ping_timeout, Duration::from_secs(10));
        // A claude CLI the daemon starts runs with the guard: our hooks stand aside inside it.
        assert_eq!(
            s.child_env,
            [(
                ai_smartness_proto::HOOK_GUARD_ENV.to_string(),
                "1".to_string()
            )]
        );
    }
}
