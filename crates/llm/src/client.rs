//! [`LlmClient`]: what the daemon calls. A provider plus the spending checked before a call and
//! told after it, the retries, and one structured log event per call (`llm_call`) and per retry
//! (`llm_retry`), on the tracing target `llm`. Logged: provider, model, timings, tokens, cost,
//! outcome, error kind. Never logged: the key, the prompt, the answer.

use crate::cost::{CallEstimate, Spending};
use crate::registry::pricing_for;
use crate::retry::{with_retries_if, RetryPolicy};
use crate::{ChatRequest, ChatResponse, EventSink, LlmError, Provider, ProviderKind, StreamEvent};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A provider with retries, limits, accounting and logs.
#[derive(Debug, Clone)]
pub struct LlmClient {
    provider: Arc<dyn Provider>,
    retry: RetryPolicy,
    /// What checks and counts the calls; `None`: no limits, no ledger (tests, one-off calls).
    costs: Option<Arc<dyn Spending>>,
}

impl LlmClient {
    /// `provider` with the default retry policy and no ledger.
    pub fn new(provider: Arc<dyn Provider>) -> LlmClient {
        LlmClient {
            provider,
            retry: RetryPolicy::default(),
            costs: None,
        }
    }

    /// Replaces the retry policy.
    pub fn with_retry(mut self, policy: RetryPolicy) -> LlmClient {
        self.retry = policy;
        self
    }

    /// Asks `spending` before each call and tells it what each call used.
    pub fn with_costs(mut self, spending: Arc<dyn Spending>) -> LlmClient {
        self.costs = Some(spending);
        self
    }

    /// The provider.
    pub fn provider(&self) -> &Arc<dyn Provider> {
        &self.provider
    }

    /// Whether a real LLM is behind this client (else callers use their local fallbacks).
    pub fn has_llm(&self) -> bool {
        self.provider.kind() != ProviderKind::Local
    }

    /// One completion: limits, then the call with retries, then accounting and the log line.
    ///
    /// A failure after part of the answer was streamed to `on_event` is not retried (the
    /// caller would see the text twice).
    pub async fn complete(
        &self,
        req: &ChatRequest,
        on_event: Option<&EventSink<'_>>,
    ) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        let provider = self.provider.id();
        let model = req
            .model
            .clone()
            .unwrap_or_else(|| self.provider.default_model().to_string());
        let pricing = pricing_for(provider, &model);
        if let Some(t) = &self.costs {
            if let Err(e) = t.check(&CallEstimate::for_request(req, &pricing)) {
                log_failure(provider, &model, "refused", started, 0, &e);
                return Err(e);
            }
        }

        let streamed = AtomicBool::new(false);
        let forward = |ev: StreamEvent| {
            streamed.store(true, Ordering::SeqCst);
            if let Some(sink) = on_event {
                sink(ev);
            }
        };
        let sink: Option<&EventSink<'_>> = on_event.map(|_| &forward as &EventSink<'_>);
        let mut attempts = 0;
        let result = with_retries_if(
            &self.retry,
            |attempt| {
                attempts = attempt;
                self.provider.complete(req, sink)
            },
            |e| e.retryable() && !streamed.load(Ordering::SeqCst),
            |n| {
                tracing::warn!(
                    target: "llm",
                    event = "llm_retry",
                    provider,
                    model = %model,
                    attempt = n.attempt,
                    error_kind = n.error.kind.as_str(),
                    status = n.error.status,
                    wait_ms = n.wait.as_millis() as u64,
                    message = %crate::truncate(&n.error.message, 300),
                );
            },
        )
        .await;

        match result {
            Ok(mut resp) => {
                // Priced as the model that answered (an alias may resolve to a dated model).
                let cost = resp
                    .cost_usd
                    .unwrap_or_else(|| pricing_for(provider, &resp.model).cost(&resp.usage));
                resp.cost_usd = Some(cost);
                if let Some(t) = &self.costs {
                    t.record(provider, &resp.model, &resp.usage, cost);
                }
                let u = resp.usage;
                tracing::info!(
                    target: "llm",
                    event = "llm_call",
                    provider,
                    model = %resp.model,
                    outcome = "ok",
                    duration_ms = started.elapsed().as_millis() as u64,
                    attempts,
                    input_tokens = u.input_tokens,
                    output_tokens = u.output_tokens,
                    cache_read_tokens = u.cache_read_tokens,
                    cache_write_tokens = u.cache_write_tokens,
                    cost_usd = cost,
                    stop_reason = resp.stop_reason.as_deref().unwrap_or(""),
                    tool_calls = resp.tool_calls.len() as u64,
                );
                Ok(resp)
            }
            Err(e) => {
                if let Some(t) = &self.costs {
                    t.record_failure(provider, &model);
                }
                log_failure(provider, &model, "error", started, attempts, &e);
                Err(e)
            }
        }
    }

    /// Proves the provider answers (`ai health`); returns how long it took.
    pub async fn ping(&self) -> Result<Duration, LlmError> {
        let started = Instant::now();
        let r = self.provider.ping().await;
        let duration_ms = started.elapsed().as_millis() as u64;
        match &r {
            Ok(()) => tracing::info!(
                target: "llm",
                event = "llm_ping",
                provider = self.provider.id(),
                outcome = "ok",
                duration_ms,
            ),
            Err(e) => tracing::warn!(
                target: "llm",
                event = "llm_ping",
                provider = self.provider.id(),
                outcome = "error",
                duration_ms,
                error_kind = e.kind.as_str(),
                status = e.status,
                message = %crate::truncate(&e.message, 300),
            ),
        }
        r.map(|()| started.elapsed())
    }
}

fn log_failure(
    provider: &str,
    model: &str,
    outcome: &str,
    started: Instant,
    attempts: u32,
    e: &LlmError,
) {
    tracing::warn!(
        target: "llm",
        event = "llm_call",
        provider,
        model,
        outcome,
        duration_ms = started.elapsed().as_millis() as u64,
        attempts,
        error_kind = e.kind.as_str(),
        status = e.status,
        message = %crate::truncate(&e.message, 300),
    );
}
