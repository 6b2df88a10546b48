//! "No LLM" (`provider: none` or `local`): every caller has a deterministic fallback
//!, so this provider only says it cannot answer.

use crate::{
    BoxFuture, ChatRequest, ChatResponse, ErrorKind, EventSink, LlmError, Provider, ProviderKind,
};

/// The provider when no LLM is configured.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalProvider;

impl Provider for LocalProvider {
    fn id(&self) -> &str {
        "local"
    }

    fn kind(&self) -> ProviderKind {
        ProviderKind::Local
    }

    fn default_model(&self) -> &str {
        "local"
    }

    fn complete<'a>(
        &'a self,
        _req: &'a ChatRequest,
        _on_event: Option<&'a EventSink<'a>>,
    ) -> BoxFuture<'a, Result<ChatResponse, LlmError>> {
        Box::pin(async {
            Err(LlmError::new(
                ErrorKind::Internal,
                "no LLM configured (provider local): use the local heuristics",
            ))
        })
    }

    /// Always answers: the local heuristics need nothing.
    fn ping(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }
}
