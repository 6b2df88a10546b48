//! The known providers, one entry each, `auto` detection and the
//! factory. Adding an OpenAI-compatible provider is one [`ProviderSpec`]; an unknown id with a
//! `base_url` works too, as a generic OpenAI-compatible endpoint.

use crate::anthropic::AnthropicProvider;
use crate::claude_cli::ClaudeCliProvider;
use crate::local::LocalProvider;
use crate::openai::OpenAiProvider;
use crate::{process_env, EnvLookup, ErrorKind, LlmError, Provider, ProviderSettings, Usage};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Anthropic Messages API (`/v1/messages`, SSE).
    AnthropicMessages,
    /// OpenAI chat completions (`/chat/completions`): OpenAI, DeepSeek, Ollama, llama.cpp.
    OpenAiChat,
    /// The `claude` CLI as a subprocess (uses the user's Claude Code login).
    ClaudeCli,
    /// No LLM: callers use their local heuristics.
    Local,
}

impl ProviderKind {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::AnthropicMessages => "anthropic_messages",
            ProviderKind::OpenAiChat => "open_ai_chat",
            ProviderKind::ClaudeCli => "claude_cli",
            ProviderKind::Local => "local",
        }
    }
}

/// Prices in USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached input.
    pub input_per_mtok: f64,
    /// Output.
    pub output_per_mtok: f64,
    /// Input read from the prompt cache.
    pub cache_read_per_mtok: f64,
    /// Input written to the prompt cache.
    pub cache_write_per_mtok: f64,
}

impl Pricing {
    /// Free (local models, unknown endpoints).
    pub const FREE: Pricing = Pricing::new(0.0, 0.0, 0.0, 0.0);

    /// Input, output, cache read, cache write.
    pub const fn new(input: f64, output: f64, cache_read: f64, cache_write: f64) -> Pricing {
        Pricing {
            input_per_mtok: input,
            output_per_mtok: output,
            cache_read_per_mtok: cache_read,
            cache_write_per_mtok: cache_write,
        }
    }

    /// What `usage` costs (uncached × input + cached × cache + output × output).
    pub fn cost(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok
            + usage.cache_read_tokens as f64 * self.cache_read_per_mtok
            + usage.cache_write_tokens as f64 * self.cache_write_per_mtok)
            / 1_000_000.0
    }
}

/// One provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProviderSpec {
    /// The name used in `config.json` (`llm.provider`).
    pub id: &'static str,
    /// Its protocol.
    pub kind: ProviderKind,
    /// Endpoint root (`/v1/messages` or `/chat/completions` is appended).
    pub base_url: &'static str,
    /// Model when the config names none; cheap and fast, since extraction runs often.
    pub default_model: &'static str,
    /// The variable holding the key; `None` when no key is needed.
    pub api_key_env: Option<&'static str>,
    /// Prices of the default model (see [`pricing_for`] for others).
    pub pricing: Pricing,
    /// OpenAI deprecated `max_tokens` for `max_completion_tokens`; compatible servers still
    /// expect the old name.
    pub max_tokens_field: &'static str,
}

/// Every known provider. Prices are list prices per million tokens (Anthropic's as the Claude
/// Code CLI 2.1.328 tables them); [`pricing_for`] refines them per model.
pub const PROVIDERS: &[ProviderSpec] = &[
    ProviderSpec {
        id: "anthropic",
        kind: ProviderKind::AnthropicMessages,
        base_url: "https://api.anthropic.com",
        default_model: "claude-haiku-5-5",
        api_key_env: Some("ANTHROPIC_API_KEY"),
        pricing: Pricing::new(0.10, 0.50, 0.01, 0.125),
        max_tokens_field: "max_tokens",
    },
    ProviderSpec {
        id: "openai",
        kind: ProviderKind::OpenAiChat,
        base_url: "https://api.openai.com/v1",
        default_model: "gpt-4.1-mini",
        api_key_env: Some("OPENAI_API_KEY"),
        pricing: Pricing::new(0.40, 1.60, 0.10, 0.40),
        max_tokens_field: "max_completion_tokens",
    },
    ProviderSpec {
        id: "deepseek",
        kind: ProviderKind::OpenAiChat,
        base_url: "https://api.deepseek.com/v1",
        default_model: "deepseek-chat",
        api_key_env: Some("DEEPSEEK_API_KEY"),
        pricing: Pricing::new(0.28, 0.42, 0.028, 0.28),
        max_tokens_field: "max_tokens",
    },
    ProviderSpec {
        id: "ollama",
        kind: ProviderKind::OpenAiChat,
        base_url: "http://localhost:11434/v1",
        default_model: "llama3.2",
        api_key_env: None,
        pricing: Pricing::FREE,
        max_tokens_field: "max_tokens",
    },
    ProviderSpec {
        id: "llamacpp",
        kind: ProviderKind::OpenAiChat,
        base_url: "http://localhost:8080/v1",
        // llama-server answers with whatever model it loaded, whatever the name.
        default_model: "local-model",
        api_key_env: None,
        pricing: Pricing::FREE,
        max_tokens_field: "max_tokens",
    },
    ProviderSpec {
        id: "claude-cli",
        kind: ProviderKind::ClaudeCli,
        base_url: "",
        // A CLI alias: the CLI maps it to its current Haiku (its default is Opus, too dear
        // for extraction).
        default_model: "haiku",
        api_key_env: None,
        // The CLI reports the cost itself; this is only the fallback.
        pricing: Pricing::new(0.10, 0.50, 0.01, 0.125),
        max_tokens_field: "max_tokens",
    },
    ProviderSpec {
        id: "local",
        kind: ProviderKind::Local,
        base_url: "",
        default_model: "local",
        api_key_env: None,
        pricing: Pricing::FREE,
        max_tokens_field: "max_tokens",
    },
];

/// The spec of `id` (case-insensitive; `claude`, `llama.cpp`, `llama-cpp`, `none` are aliases).
pub fn spec(id: &str) -> Option<&'static ProviderSpec> {
    let id = id.trim().to_ascii_lowercase();
    let id = match id.as_str() {
        "claude" | "claude_cli" | "claude-code" => "claude-cli",
        "llama.cpp" | "llama-cpp" | "llama_cpp" => "llamacpp",
        "none" | "" => "local",
        other => other,
    };
    PROVIDERS.iter().find(|p| p.id == id)
}

/// Per-model prices (USD per million tokens: input, output, cache read, cache write), matched
/// by prefix, longest first. Unknown models of a known provider get the provider's pricing.
const MODEL_PRICES: &[(&str, Pricing)] = &[
    ("claude-haiku-5-5", Pricing::new(0.10, 0.50, 0.01, 0.125)),
    ("claude-haiku-4-5", Pricing::new(1.0, 5.0, 0.10, 1.25)),
    ("claude-3-5-haiku", Pricing::new(0.80, 4.0, 0.08, 1.0)),
    ("claude-sonnet-5-5", Pricing::new(2.0, 10.0, 0.10, 2.5)),
    ("claude-sonnet-5", Pricing::new(2.0, 10.0, 0.20, 2.5)),
    ("claude-sonnet-4", Pricing::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-7-sonnet", Pricing::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-3-5-sonnet", Pricing::new(3.0, 15.0, 0.30, 3.75)),
    ("claude-opus-5-5", Pricing::new(4.0, 20.0, 0.20, 5.0)),
    ("claude-opus-5", Pricing::new(5.0, 25.0, 0.50, 6.25)),
    ("claude-opus-4-0", Pricing::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4-1", Pricing::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4-2025", Pricing::new(15.0, 75.0, 1.50, 18.75)),
    ("claude-opus-4", Pricing::new(5.0, 25.0, 0.50, 6.25)),
    ("gpt-4.1-nano", Pricing::new(0.10, 0.40, 0.025, 0.10)),
    ("gpt-4.1-mini", Pricing::new(0.40, 1.60, 0.10, 0.40)),
    ("gpt-4.1", Pricing::new(2.0, 8.0, 0.50, 2.0)),
    ("gpt-4o-mini", Pricing::new(0.15, 0.60, 0.075, 0.15)),
    ("gpt-4o", Pricing::new(2.50, 10.0, 1.25, 2.50)),
    ("deepseek-", Pricing::new(0.28, 0.42, 0.028, 0.28)),
];

/// The prices of `model` at `provider` (free for local servers and unknown endpoints).
pub fn pricing_for(provider: &str, model: &str) -> Pricing {
    let Some(spec) = spec(provider) else {
        return Pricing::FREE;
    };
    if spec.pricing == Pricing::FREE {
        return Pricing::FREE;
    }
    let model = model.to_ascii_lowercase();
    MODEL_PRICES
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, p)| *p)
        .unwrap_or(spec.pricing)
}

fn pick_spec(id: &str) -> &'static ProviderSpec {
    spec(id).expect("a registry id")
}

/// What `auto` picks: anthropic if `ANTHROPIC_API_KEY` is set, else openai if `OPENAI_API_KEY`,
/// else deepseek if `DEEPSEEK_API_KEY`, else claude-cli if a `claude` binary is found, else local.
pub fn detect(env: &dyn Fn(&str) -> Option<String>) -> &'static ProviderSpec {
    let set = |var: &str| env(var).is_some_and(|v| !v.trim().is_empty());
    for id in ["anthropic", "openai", "deepseek"] {
        let s = pick_spec(id);
        if s.api_key_env.is_some_and(set) {
            return s;
        }
    }
    if find_claude(env).is_some() {
        return pick_spec("claude-cli");
    }
    pick_spec("local")
}

/// A `claude` executable on `PATH`, or where its installer puts it (`~/.local/bin`,
/// `~/.claude/local`): a daemon started from a hook may have a short PATH.
pub fn find_claude(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = env("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = env("HOME") {
        dirs.push(Path::new(&home).join(".local/bin"));
        dirs.push(Path::new(&home).join(".claude/local"));
    }
    dirs.into_iter()
        .filter(|d| !d.as_os_str().is_empty())
        .flat_map(|d| EXECUTABLE_NAMES.map(|name| d.join(name)))
        .find(|p| is_executable(p))
}

/// The names the `claude` executable goes by: npm installs a `.cmd` shim on Windows.
#[cfg(unix)]
const EXECUTABLE_NAMES: [&str; 1] = ["claude"];
#[cfg(windows)]
const EXECUTABLE_NAMES: [&str; 2] = ["claude.exe", "claude.cmd"];

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Windows has no execute bit: a file by one of [`EXECUTABLE_NAMES`] is run.
#[cfg(windows)]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

/// Builds the provider the settings name, reading the process environment.
pub fn build(settings: &ProviderSettings) -> Result<Arc<dyn Provider>, LlmError> {
    build_with_env(settings, process_env())
}

/// [`build`] with an injected environment (keys and `auto` detection read it).
pub fn build_with_env(
    settings: &ProviderSettings,
    env: EnvLookup,
) -> Result<Arc<dyn Provider>, LlmError> {
    let requested = settings.provider.trim().to_ascii_lowercase();
    let spec: ProviderSpec = if requested == "auto" {
        match detect(&*env) {
            // A configured claude path counts as "a claude binary is found".
            s if s.kind == ProviderKind::Local
                && settings.claude_path.as_deref().is_some_and(is_executable) =>
            {
                *pick_spec("claude-cli")
            }
            s => *s,
        }
    } else if let Some(s) = spec(&requested) {
        *s
    } else if settings.base_url.is_some() {
        // An OpenAI-compatible endpoint the registry does not know (Qwen, vLLM, LiteLLM, ...).
        ProviderSpec {
            id: "",
            kind: ProviderKind::OpenAiChat,
            base_url: "",
            default_model: "",
            api_key_env: None,
            pricing: Pricing::FREE,
            max_tokens_field: "max_tokens",
        }
    } else {
        let known: Vec<&str> = PROVIDERS.iter().map(|p| p.id).collect();
        return Err(LlmError::new(
            ErrorKind::Internal,
            format!(
                "unknown LLM provider {:?} (known: auto, none, {}; or give a base_url for an \
                 OpenAI-compatible endpoint)",
                settings.provider,
                known.join(", ")
            ),
        ));
    };
    let id = if spec.id.is_empty() {
        requested.clone()
    } else {
        spec.id.to_string()
    };
    let model = settings
        .model
        .clone()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| spec.default_model.to_string());
    let base_url = settings
        .base_url
        .clone()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| spec.base_url.to_string());
    let key_env = settings
        .api_key_env
        .clone()
        .filter(|k| !k.trim().is_empty())
        .or_else(|| spec.api_key_env.map(str::to_string));
    Ok(match spec.kind {
        ProviderKind::AnthropicMessages => Arc::new(AnthropicProvider::new(
            id, base_url, model, key_env, env, settings,
        )?),
        ProviderKind::OpenAiChat => {
            if model.is_empty() {
                return Err(LlmError::internal(format!(
                    "provider {id:?} needs a model (llm.model)"
                )));
            }
            Arc::new(OpenAiProvider::new(
                id,
                base_url,
                model,
                key_env,
                spec.max_tokens_field,
                env,
                settings,
            )?)
        }
        ProviderKind::ClaudeCli => {
            let path = match &settings.claude_path {
                Some(p) => p.clone(),
                None => find_claude(&*env).ok_or_else(|| {
                    LlmError::internal(
                        "provider claude-cli: no `claude` binary on PATH (set llm.claude_cli_path)",
                    )
                })?,
            };
            let provider = settings.child_env.iter().fold(
                ClaudeCliProvider::new(path, model).with_ping_timeout(settings.ping_timeout),
                |p, (name, value)| p.with_env(name, value),
            );
            Arc::new(provider)
        }
        ProviderKind::Local => Arc::new(LocalProvider),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    fn lookup(pairs: &[(&str, &str)]) -> EnvLookup {
        Arc::new(env_of(pairs))
    }

    #[cfg(unix)]
    fn fake_claude_dir() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    #[cfg(unix)]
    #[test]
    fn auto_detection_order() {
        let claude = fake_claude_dir();
        let path = claude.path().to_str().unwrap();
        let all = [
            ("ANTHROPIC_API_KEY", "a"),
            ("OPENAI_API_KEY", "o"),
            ("DEEPSEEK_API_KEY", "d"),
            ("PATH", path),
        ];
        assert_eq!(detect(&env_of(&all)).id, "anthropic");
        assert_eq!(detect(&env_of(&all[1..])).id, "openai");
        assert_eq!(detect(&env_of(&all[2..])).id, "deepseek");
        assert_eq!(detect(&env_of(&all[3..])).id, "claude-cli");
        assert_eq!(detect(&env_of(&[("PATH", "/nonexistent")])).id, "local");
        // Empty keys count as unset; ~/.local/bin is searched too.
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".local")).unwrap();
        std::fs::rename(claude.path(), home.path().join(".local/bin")).unwrap();
        let h = home.path().to_str().unwrap();
        assert_eq!(
            detect(&env_of(&[("ANTHROPIC_API_KEY", " "), ("HOME", h)])).id,
            "claude-cli"
        );
        // Not executable: not a claude.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("claude"), "").unwrap();
        assert_eq!(
            detect(&env_of(&[("PATH", dir.path().to_str().unwrap())])).id,
            "local"
        );
    }

    #[cfg(unix)]
    #[test]
    fn builds_every_provider() {
        let claude = fake_claude_dir();
        let env = lookup(&[("PATH", claude.path().to_str().unwrap())]);
        for (id, kind, model) in [
            (
                "anthropic",
                ProviderKind::AnthropicMessages,
                "claude-haiku-5-5",
            ),
            ("openai", ProviderKind::OpenAiChat, "gpt-4.1-mini"),
            ("deepseek", ProviderKind::OpenAiChat, "deepseek-chat"),
            ("ollama", ProviderKind::OpenAiChat, "llama3.2"),
            ("llama.cpp", ProviderKind::OpenAiChat, "local-model"),
            ("claude-cli", ProviderKind::ClaudeCli, "haiku"),
            ("none", ProviderKind::Local, "local"),
            ("local", ProviderKind::Local, "local"),
            ("auto", ProviderKind::ClaudeCli, "haiku"),
        ] {
            let s = ProviderSettings {
                provider: id.into(),
                ..ProviderSettings::default()
            };
            let p = build_with_env(&s, env.clone()).unwrap();
            assert_eq!(p.kind(), kind, "{id}");
            assert_eq!(p.default_model(), model, "{id}");
        }
        let s = ProviderSettings {
            provider: "anthropic".into(),
            model: Some("claude-sonnet-5-5".into()),
            ..ProviderSettings::default()
        };
        assert_eq!(
            build_with_env(&s, env.clone()).unwrap().default_model(),
            "claude-sonnet-5-5"
        );
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_claude_cli_gets_the_callers_variables() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(
            &bin,
            "#!/bin/sh\ncat > /dev/null\nprintf '{\"type\":\"result\",\"result\":\"%s\"}' \"$A_CALLERS_GUARD\"\n",
        )
        .unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let s = ProviderSettings {
            provider: "claude-cli".into(),
            claude_path: Some(bin),
            child_env: vec![("A_CALLERS_GUARD".into(), "1".into())],
            ..ProviderSettings::default()
        };
        let p = build_with_env(&s, lookup(&[])).unwrap();
        let r = p
            .complete(&crate::ChatRequest::simple("", "hi"), None)
            .await
            .unwrap();
        assert_eq!(r.text, "1");
    }

    #[test]
    fn unknown_providers() {
        let env = lookup(&[]);
        let s = ProviderSettings {
            provider: "qwen".into(),
            ..ProviderSettings::default()
        };
        let e = build_with_env(&s, env.clone()).unwrap_err();
        assert!(e.message.contains("unknown LLM provider"), "{e}");
        let s = ProviderSettings {
            provider: "qwen".into(),
            base_url: Some("https://dashscope.example/compatible-mode/v1".into()),
            model: Some("qwen-plus".into()),
            api_key_env: Some("QWEN_API_KEY".into()),
            ..ProviderSettings::default()
        };
        let p = build_with_env(&s, env.clone()).unwrap();
        assert_eq!((p.id(), p.kind()), ("qwen", ProviderKind::OpenAiChat));
        let s = ProviderSettings {
            provider: "claude-cli".into(),
            ..ProviderSettings::default()
        };
        assert!(build_with_env(&s, lookup(&[("PATH", "/nonexistent")])).is_err());
    }

    #[test]
    fn keys_never_appear_in_debug() {
        let secret = "sk-ant-SECRET-123";
        let env = lookup(&[("ANTHROPIC_API_KEY", secret), ("OPENAI_API_KEY", secret)]);
        for id in ["anthropic", "openai"] {
            let s = ProviderSettings {
                provider: id.into(),
                ..ProviderSettings::default()
            };
            let p = build_with_env(&s, env.clone()).unwrap();
            let dbg = format!("{p:?}");
            assert!(!dbg.contains(secret), "{dbg}");
            assert!(dbg.contains("_API_KEY"), "{dbg}");
        }
    }

    #[test]
    fn pricing() {
        let u = Usage {
            input_tokens: 1_000_000,
            output_tokens: 1_000_000,
            cache_read_tokens: 1_000_000,
            cache_write_tokens: 1_000_000,
        };
        let cost = |p: &str, m: &str| (pricing_for(p, m).cost(&u) * 1000.0).round() / 1000.0;
        assert_eq!(cost("anthropic", "claude-haiku-4-5-20251001"), 7.35);
        assert_eq!(cost("anthropic", "claude-opus-4-1-20250805"), 110.25);
        assert_eq!(cost("anthropic", "claude-opus-4-20250514"), 110.25);
        assert_eq!(cost("anthropic", "claude-opus-4-6"), 36.75);
        assert_eq!(cost("anthropic", "claude-haiku-5-5"), 0.735);
        assert_eq!(cost("anthropic", "some-future-model"), 0.735);
        assert_eq!(cost("openai", "gpt-4o-mini-2024-07-18"), 0.975);
        assert_eq!(cost("openai", "gpt-4o"), 16.25);
        assert_eq!(cost("ollama", "gpt-4o"), 0.0);
        assert_eq!(cost("qwen", "qwen-plus"), 0.0);
    }
}
