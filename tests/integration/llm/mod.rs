//! The LLM providers against fake servers speaking each real wire protocol on 127.0.0.1, the
//! real `claude` CLI pointed at a fake Anthropic API, and ([`daemon`]) a real daemon whose
//! background LLM work goes to the fake Anthropic server.

mod anthropic;
mod claude_cli;
mod client;
mod daemon;
mod fake_server;
mod openai;

use ai_smartness::llm::{EnvLookup, ProviderSettings, StreamEvent};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An environment holding only these variables.
pub fn env_of(pairs: &[(&str, &str)]) -> EnvLookup {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(move |k| map.get(k).cloned())
}

/// Settings for `provider` at `base_url`.
pub fn settings(provider: &str, base_url: &str) -> ProviderSettings {
    ProviderSettings {
        provider: provider.into(),
        base_url: Some(base_url.into()),
        connect_timeout: Duration::from_secs(2),
        ping_timeout: Duration::from_secs(5),
        ..ProviderSettings::default()
    }
}

/// Collects stream events.
#[derive(Default, Clone)]
pub struct Events(Arc<Mutex<Vec<StreamEvent>>>);

impl Events {
    pub fn sink(&self) -> impl Fn(StreamEvent) + Send + Sync + '_ {
        move |e| self.0.lock().unwrap().push(e)
    }

    pub fn all(&self) -> Vec<StreamEvent> {
        self.0.lock().unwrap().clone()
    }

    pub fn text(&self) -> String {
        self.all()
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}
