//! Extraction: title, intent, summary, subjects, questions, decisions and
//! key concepts of a prepared capture.
//!
//! An LLM-backed [`Extractor`] will come later; [`LocalExtractor`] is the
//! always-available fallback. It is deterministic, needs no network and
//! runs in well under a millisecond on a 3,000-character capture, so the
//! daemon can call it inline for every tool output.
//!
//! How the local extractor works:
//!
//! * tokens are words, code identifiers (`CamelCase`, `snake_case`,
//!   `dotted.names`, `a::b` paths) and file paths;
//! * English, French and Spanish stopwords, action verbs ("fix",
//!   "corriger", "arreglar"...), polite filler and language keywords are
//!   dropped;
//! * each term is scored by (sub-linear) frequency with boosts for
//!   identifiers, file names from paths (`src/store/atomic.rs` gives the
//!   topic `atomic.rs` and the directory `store`), capitalised technical
//!   terms, and words near the start (where the subject is usually
//!   stated); word pairs that repeat become two-word topics;
//! * the title is a *subject* noun phrase built from the top terms
//!   ("Atomic writes in store/atomic.rs"), never an action
//!   ("Fixing the store").

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::source::SourceType;

mod language;
mod ranking;
mod sentences;
mod terms;
mod title;
mod vocabulary;

use language::*;
use ranking::*;
use sentences::*;
use terms::*;
use title::*;
use vocabulary::*;

/// Only the first this-many characters are analysed: the subject of a
/// capture is stated early, and it bounds the cost per capture.
pub const MAX_EXTRACTION_INPUT: usize = 3000;
/// Shortest accepted topic, in characters.
pub const MIN_TOPIC_CHARS: usize = 3;
/// At most this many `subjects`.
pub const MAX_SUBJECTS: usize = 6;
/// At most this many `key_concepts`.
pub const MAX_KEY_CONCEPTS: usize = 8;
/// Maximum `summary` length, in characters.
pub const MAX_SUMMARY_CHARS: usize = 240;
/// Maximum `intent` length, in characters.
pub const MAX_INTENT_CHARS: usize = 160;
/// At most this many `questions` and `decisions`.
pub const MAX_LIST_ITEMS: usize = 5;
/// Title length bounds, in words.
pub const TITLE_MIN_WORDS: usize = 3;
/// See [`TITLE_MIN_WORDS`].
pub const TITLE_MAX_WORDS: usize = 8;

/// What an extractor found in a capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// Subject of the capture, 3-8 words, a noun phrase.
    pub title: String,
    /// For prompts: what the user asked (first sentence). Empty otherwise.
    pub intent: String,
    /// The most informative one or two sentences.
    pub summary: String,
    /// 3-6 lowercase topics used for matching threads.
    pub subjects: Vec<String>,
    /// Sentences that ask something.
    pub questions: Vec<String>,
    /// Sentences that record a decision.
    pub decisions: Vec<String>,
    /// Up to 8 salient terms, identifiers in their original case.
    pub key_concepts: Vec<String>,
}

/// Why an extraction failed.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// Nothing to analyse.
    #[error("nothing to extract: content is empty")]
    EmptyContent,
    /// The backend (e.g. an LLM endpoint) cannot be reached or is disabled.
    #[error("extractor unavailable: {0}")]
    Unavailable(String),
    /// The backend answered with an error.
    #[error("extractor backend failed: {0}")]
    Backend(String),
    /// The backend answered something that is not a valid extraction.
    #[error("invalid extractor output: {0}")]
    InvalidOutput(String),
    /// The backend did not answer in time.
    #[error("extractor timed out after {0:?}")]
    Timeout(std::time::Duration),
}

/// Turns prepared content into an [`Extraction`].
///
/// An LLM extractor will implement this later; the local one needs no
/// network. Implementations must be cheap to share between threads.
pub trait Extractor: Send + Sync {
    /// Extracts from `content` (already cleaned and redacted).
    fn extract(&self, content: &str, source: SourceType) -> Result<Extraction, ExtractError>;
    /// Short stable name, recorded with the extraction for diagnostics.
    fn name(&self) -> &'static str;
}

/// Deterministic heuristic extractor (English, French, Spanish).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalExtractor;

impl Extractor for LocalExtractor {
    fn extract(&self, content: &str, source: SourceType) -> Result<Extraction, ExtractError> {
        let limited = limit_chars(content.trim(), MAX_EXTRACTION_INPUT);
        if limited.trim().is_empty() {
            return Err(ExtractError::EmptyContent);
        }
        Ok(extract_local(limited, source))
    }

    fn name(&self) -> &'static str {
        "local"
    }
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// First `max` characters of `s` (on a char boundary).
fn limit_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Runs the local heuristics on already-limited text.
fn extract_local(text: &str, source: SourceType) -> Extraction {
    let text = PIPELINE_MARKERS.replace_all(text, " ");
    let text = text.as_ref();
    let analysis = analyse(text);
    let ranked = rank(&analysis);
    let sents = sentences(text);
    let parts = title_parts(&analysis, &ranked);
    Extraction {
        title: build_title(source, text, &analysis, &ranked),
        intent: if source == SourceType::Prompt {
            intent(&sents)
        } else {
            String::new()
        },
        summary: summary(&sents, &ranked, &parts),
        subjects: select_subjects(&ranked),
        questions: questions(&sents),
        decisions: decisions(&sents),
        key_concepts: select_concepts(&ranked),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(content: &str, source: SourceType) -> Extraction {
        match LocalExtractor.extract(content, source) {
            Ok(e) => e,
            Err(e) => panic!("extraction failed: {e}"),
        }
    }

    fn assert_title_rules(e: &Extraction) {
        let n = e.title.split_whitespace().count();
        assert!(
            e.title.chars().next().is_some_and(|c| !c.is_lowercase()),
            "title not capitalised: {:?}",
            e.title
        );
        assert!((3..=8).contains(&n), "title word count {n}: {:?}", e.title);
        let first = e
            .title
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_lowercase();
        assert!(
            !ACTION_SET.contains(first.as_str()),
            "action verb title: {:?}",
            e.title
        );
        for s in &e.subjects {
            assert!(s.chars().count() >= MIN_TOPIC_CHARS, "short subject {s:?}");
            assert_eq!(s, &s.to_lowercase(), "subject not lowercase {s:?}");
            assert!(!s.chars().all(|c| c.is_ascii_digit()));
        }
        assert!(e.subjects.len() <= MAX_SUBJECTS);
        assert!(e.key_concepts.len() <= MAX_KEY_CONCEPTS);
        assert!(e.summary.chars().count() <= MAX_SUMMARY_CHARS);
        assert!(e.intent.chars().count() <= MAX_INTENT_CHARS);
    }

    const ATOMIC_READ: &str = "/home/dev/ai-smartness/src/store/atomic.rs
//! Atomic writes for the thread store.
//!
//! Atomic writes go through a temporary file in the same directory, then a
//! rename. The rename is atomic on POSIX, so readers never see a partial
//! thread file.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `data` to `path` atomically: temp file, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new(\".\"));
    let tmp = dir.join(format!(\".{}.tmp\", std::process::id()));
    let mut file = File::create(&tmp)?;
    file.write_all(data)?;
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()?;
    Ok(())
}";

    #[test]
    fn read_of_atomic_store_file() {
        let e = run(ATOMIC_READ, SourceType::Read);
        assert_title_rules(&e);
        assert_eq!(e.title, "Atomic writes in store/atomic.rs");
        assert!(
            e.subjects.contains(&"atomic writes".to_string()),
            "{:?}",
            e.subjects
        );
        assert!(
            e.subjects.contains(&"atomic.rs".to_string()),
            "{:?}",
            e.subjects
        );
        assert!(
            e.key_concepts.iter().any(|c| c == "write_atomic"),
            "{:?}",
            e.key_concepts
        );
        assert!(e.summary.contains("Atomic writes"), "{}", e.summary);
        assert!(e.intent.is_empty());
    }

    #[test]
    fn cargo_test_failure_output() {
        let out = "running 3 tests
test store::atomic::tests::rename_is_atomic ... ok
test store::atomic::tests::fsync_parent_dir ... FAILED
test store::atomic::tests::partial_write_recovery ... ok

failures:

---- store::atomic::tests::fsync_parent_dir stdout ----
thread 'store::atomic::tests::fsync_parent_dir' panicked at src/store/atomic.rs:88:9:
assertion failed: dir_synced

failures:
    store::atomic::tests::fsync_parent_dir

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out";
        let e = run(out, SourceType::Command);
        assert_title_rules(&e);
        assert_eq!(e.title, "Cargo test failures in store/atomic.rs");
        assert!(
            e.key_concepts.iter().any(|c| c == "fsync_parent_dir"),
            "{:?}",
            e.key_concepts
        );
    }

    #[test]
    fn command_line_prefix_names_the_command() {
        let out = "$ git status --short\n M src/store/atomic.rs\n?? src/capture/redact.rs";
        let e = run(out, SourceType::Command);
        assert!(e.title.starts_with("Git status in "), "{}", e.title);
        assert_title_rules(&e);
    }

    #[test]
    fn english_prompt() {
        let prompt = "Can you fix the connection pool timeouts in src/db/pool.rs? \
Under load the connection pool runs out of connections after 30 seconds. \
We decided to switch to deadpool instead of r2d2.";
        let e = run(prompt, SourceType::Prompt);
        assert_title_rules(&e);
        assert!(e.title.starts_with("Connection pool"), "{}", e.title);
        assert!(e.title.ends_with("db/pool.rs"), "{}", e.title);
        assert_eq!(
            e.intent,
            "Can you fix the connection pool timeouts in src/db/pool.rs?"
        );
        assert_eq!(e.questions, vec![e.intent.clone()]);
        assert_eq!(
            e.decisions,
            vec!["We decided to switch to deadpool instead of r2d2.".to_string()]
        );
        assert!(
            e.subjects.contains(&"connection pool".to_string()),
            "{:?}",
            e.subjects
        );
    }

    #[test]
    fn french_prompt() {
        let prompt = "Peux-tu corriger le bug dans src/store/atomic.rs ? \
Les écritures atomiques échouent quand le disque est plein, et le fichier \
temporaire reste sur le disque. On garde le renommage atomique mais on \
utilise un fsync du répertoire.";
        let e = run(prompt, SourceType::Prompt);
        assert_title_rules(&e);
        assert_eq!(e.title, "Bug dans store/atomic.rs");
        assert_eq!(
            e.intent,
            "Peux-tu corriger le bug dans src/store/atomic.rs ?"
        );
        assert_eq!(e.questions.len(), 1);
        assert_eq!(e.decisions.len(), 1, "{:?}", e.decisions);
        assert!(e.subjects.iter().any(|s| s == "disque"), "{:?}", e.subjects);
        assert!(!e.subjects.iter().any(|s| s == "corriger" || s == "peux"));
    }

    #[test]
    fn spanish_prompt() {
        let prompt = "¿Puedes arreglar el error de conexión en src/db/pool.rs? \
El pool de conexiones se agota con mucha carga y las consultas fallan. \
Decidimos usar deadpool en lugar de r2d2.";
        let e = run(prompt, SourceType::Prompt);
        assert_title_rules(&e);
        assert!(e.title.ends_with(" en db/pool.rs"), "{}", e.title);
        assert!(!e.title.to_lowercase().starts_with("arreglar"));
        assert_eq!(e.questions.len(), 1);
        assert_eq!(
            e.decisions,
            vec!["Decidimos usar deadpool en lugar de r2d2.".to_string()]
        );
        assert!(
            e.subjects
                .iter()
                .any(|s| s == "conexión" || s == "conexiones"),
            "{:?}",
            e.subjects
        );
    }

    #[test]
    fn grep_file_list() {
        let out =
            "src/store/atomic.rs\nsrc/store/mod.rs\nsrc/store/index.rs\ntests/store_roundtrip.rs";
        let e = run(out, SourceType::Read);
        assert_title_rules(&e);
        assert!(e.subjects.iter().any(|s| s == "store"), "{:?}", e.subjects);
    }

    #[test]
    fn assistant_response_with_identifiers() {
        let text = "The ThreadManager keeps every thread in a BTreeMap keyed by ThreadId. \
When the embedding index is rebuilt, ThreadManager::reindex walks the map and \
recomputes each vector. I chose to keep the embedding index in memory; let's go with \
a full rebuild on startup.";
        let e = run(text, SourceType::Response);
        assert_title_rules(&e);
        assert!(
            e.key_concepts.iter().any(|c| c == "ThreadManager"),
            "{:?}",
            e.key_concepts
        );
        assert!(
            e.subjects.iter().any(|s| s == "thread manager"),
            "{:?}",
            e.subjects
        );
        assert_eq!(e.decisions.len(), 1, "{:?}", e.decisions);
    }

    #[test]
    fn title_never_starts_with_action_verb() {
        for text in [
            "Fix fix fixing the parser crash when the input has a BOM marker.",
            "Implement caching caching caching for the embedding model downloads.",
            "Corriger corriger le cache des embeddings qui grossit sans limite.",
            "Arreglar arreglar la caché de embeddings que crece sin límite.",
        ] {
            let e = run(text, SourceType::Prompt);
            assert_title_rules(&e);
        }
    }

    #[test]
    fn subjects_skip_numbers_and_hashes() {
        let text = "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Dev <dev@example.com>\n\n    Store: fsync the parent directory after rename\n\n    Refs 550e8400-e29b-41d4-a716-446655440000, 12345";
        let e = run(text, SourceType::Command);
        assert_title_rules(&e);
        for s in &e.subjects {
            assert!(!s.contains("9fceb02d"), "{s}");
            assert!(!s.contains("550e8400"), "{s}");
            assert_ne!(s, "12345");
        }
    }

    #[test]
    fn pipeline_markers_are_ignored() {
        let text = "GITHUB_TOKEN=[REDACTED:github_token] configured for the release workflow.\n[... 1200 chars truncated ...]\nrelease workflow finished";
        let e = run(text, SourceType::Command);
        for c in e.subjects.iter().chain(&e.key_concepts) {
            let c = c.to_lowercase();
            assert!(
                !c.contains("redacted") && c != "chars" && c != "truncated",
                "{c}"
            );
        }
    }

    #[test]
    fn empty_content_is_an_error() {
        assert!(matches!(
            LocalExtractor.extract("   \n ", SourceType::Read),
            Err(ExtractError::EmptyContent)
        ));
        assert_eq!(LocalExtractor.name(), "local");
    }

    #[test]
    fn code_only_gets_a_fallback_summary() {
        let code = "fn main() {\n    let cfg = Config::load(\"app.toml\")?;\n    Server::bind(cfg.addr).serve(router()).await?;\n}";
        let e = run(code, SourceType::Read);
        assert_title_rules(&e);
        assert!(!e.summary.is_empty());
    }

    #[test]
    fn deterministic() {
        let a = run(ATOMIC_READ, SourceType::Read);
        for _ in 0..5 {
            assert_eq!(run(ATOMIC_READ, SourceType::Read), a);
        }
    }

    #[test]
    fn long_input_is_extracted_within_its_bounds() {
        // Its speed is measured where speed is measured: `cargo bench --bench daemon` (capture
        // throughput, extraction included).
        let mut big = String::new();
        while big.chars().count() < 20_000 {
            big.push_str(ATOMIC_READ);
            big.push('\n');
        }
        let e = run(&big, SourceType::Read);
        assert!(!e.title.is_empty());
        assert!(!e.subjects.is_empty());
        assert!(e.summary.chars().count() <= MAX_SUMMARY_CHARS);
    }

    #[test]
    fn decision_markers() {
        let sents: Vec<String> = [
            "We’ll use SQLite for the index.",
            "We go without tests for now.",
            "Al final decidimos mantener el formato JSON.",
            "Bon, on garde le format actuel.",
            "This is algo with extra words.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let found = decisions(&sents);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(!found.iter().any(|d| d.contains("without")));
    }

    #[test]
    fn hexish_tokens() {
        assert!(is_hexish("9fceb02d0ae598e95dc970b74767f19372d61af8"));
        assert!(is_hexish("550e8400-e29b-41d4-a716-446655440000"));
        assert!(is_hexish("0xDEADBEEF"));
        assert!(!is_hexish("abc-defg1"));
        assert!(!is_hexish("cafe"));
        assert!(!is_hexish("atomic"));
    }

    #[test]
    fn camel_splitting() {
        assert_eq!(split_camel("AtomicWriter"), "atomic writer");
        assert_eq!(split_camel("parseHTTPHeader"), "parse http header");
        assert_eq!(split_camel("BTreeMap"), "b tree map");
    }

    #[test]
    fn serde_round_trip() -> Result<(), serde_json::Error> {
        let e = run(ATOMIC_READ, SourceType::Read);
        let json = serde_json::to_string(&e)?;
        let back: Extraction = serde_json::from_str(&json)?;
        assert_eq!(back, e);
        Ok(())
    }
}
