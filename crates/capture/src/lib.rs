//! Capture pipeline: from a raw tool output to text worth remembering.
//!
//! Claude Code hooks send every tool output to the daemon. Before anything
//! is stored or embedded, [`prepare`] runs the same steps in a fixed order:
//!
//! 1. strip IDE tags and our own `<system-reminder>` blocks ([`filter`]);
//! 2. drop `<private>` spans and redact secrets ([`ai_smartness_redact`]);
//! 3. extract the semantic text from JSON responses and normalise
//!    whitespace / terminal noise ([`clean`]), redacting again because JSON
//!    decoding can reveal escaped secrets;
//! 4. reject pure JSON and too-short texts ([`filter`]);
//! 5. keep it whole up to a bound ([`clean::MAX_CAPTURE_CHARS`] unless configured): past it,
//!    its head, its tail and its lines that look like errors ([`clean::keep_within`]).
//!
//! Titles, subjects and the like are produced afterwards by an
//! [`extract::Extractor`] on the prepared content.

pub mod admit;
pub mod clean;
pub mod extract;
pub mod filter;
pub mod source;
pub mod units;

pub use clean::MAX_CAPTURE_CHARS;
pub use extract::{ExtractError, Extraction, Extractor, LocalExtractor};
pub use filter::{SkipReason, MIN_CAPTURE_CHARS};
pub use source::{OriginType, SourceType};

/// What someone *said* (a prompt, an answer, a chat turn) up to this long is embedded as it is:
/// every word of it may be what a later question asks about.
pub const SAID_WHOLE_CHARS: usize = 512;
/// Tool output up to this long is embedded as it is; longer output is noisy and its subject
/// fits in a digest.
pub const SHORT_CONTENT_CHARS: usize = 200;
/// A longer content is embedded as a digest of at most this many characters. The model runs
/// about 5,500 word pieces a second on two cores: embedding whole 5,000-character outputs
/// would hold the daemon to a dozen captures a second and balloon ONNX Runtime's memory, while
/// the subject of a tool output fits in a few dozen word pieces.
pub const DIGEST_CHARS: usize = 100;

/// What gets embedded for a capture: a short content as it is (what is short depends on who
/// produced it: see [`SAID_WHOLE_CHARS`]), a long one as its digest: the
/// extractor's title and key concepts, then the head of the content, within [`DIGEST_CHARS`].
/// The capture path and `ai reindex` both use this, so a thread's vectors always come from
/// the same kind of text.
pub fn embedding_text(content: &str, extraction: &Extraction, source: SourceType) -> String {
    let content = content.trim();
    let whole = match source {
        SourceType::Prompt | SourceType::Response => SAID_WHOLE_CHARS,
        _ => SHORT_CONTENT_CHARS,
    };
    if content.chars().count() <= whole {
        return content.to_string();
    }
    let mut text = String::with_capacity(DIGEST_CHARS + 8);
    let mut push = |part: &str, sep: &str| {
        let room = DIGEST_CHARS.saturating_sub(text.chars().count());
        if room <= sep.len() || part.is_empty() {
            return;
        }
        if !text.is_empty() {
            text.push_str(sep);
        }
        text.extend(part.chars().take(room - sep.len()));
    };
    push(extraction.title.trim(), "");
    push(&extraction.key_concepts.join(", "), ". ");
    push(content, ". ");
    text
}

#[cfg(test)]
mod embedding_text_tests {
    use super::*;

    #[test]
    fn short_contents_are_embedded_whole_and_long_ones_as_a_bounded_digest() {
        let e = Extraction {
            title: "Connection pool timeouts".into(),
            key_concepts: vec!["PostgreSQL".into(), "max_connections".into()],
            ..Extraction::default()
        };
        assert_eq!(
            embedding_text("  a short prompt  ", &e, SourceType::Prompt),
            "a short prompt"
        );
        // 300 characters: whole when said, a digest when a tool printed it.
        let said = "word ".repeat(60);
        assert_eq!(embedding_text(&said, &e, SourceType::Response), said.trim());
        assert!(
            embedding_text(&said, &e, SourceType::Command)
                .chars()
                .count()
                <= DIGEST_CHARS
        );
        let long = "x ".repeat(2000);
        let d = embedding_text(&long, &e, SourceType::Prompt);
        assert!(
            d.starts_with("Connection pool timeouts. PostgreSQL, max_connections. x x"),
            "{d}"
        );
        assert!(d.chars().count() <= DIGEST_CHARS);
    }
}

/// A capture ready to become (or join) a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// Kind of interaction, from the tool name.
    pub source: SourceType,
    /// Cleaned, redacted text, whole up to the bound it was prepared within.
    pub content: String,
    /// Number of secrets redacted and `<private>` spans dropped.
    pub redactions: usize,
}

impl Prepared {
    /// The thread origin this capture maps to.
    pub fn origin(&self) -> OriginType {
        source::origin_for_source(self.source)
    }
}

/// Runs the capture pipeline on one tool output (or prompt / answer).
///
/// `tool` is the Claude Code tool name (`Bash`, `Read`, `mcp__x__y`, ...,
/// or `UserPrompt` / `Response`); `raw_content` is the tool response as
/// received, usually JSON. Returns why the capture was skipped otherwise.
pub fn prepare(tool: &str, raw_content: &str) -> Result<Prepared, SkipReason> {
    prepare_within(tool, raw_content, MAX_CAPTURE_CHARS)
}

/// [`prepare`], keeping at most `max_chars` characters (see [`clean::keep_within`]).
pub fn prepare_within(
    tool: &str,
    raw_content: &str,
    max_chars: usize,
) -> Result<Prepared, SkipReason> {
    let source = source::source_for_tool(tool);
    if raw_content.trim().is_empty() {
        return Err(SkipReason::Empty);
    }

    // 1. Injected context never gets re-captured.
    let stripped = filter::strip_ide_tags(raw_content);
    if stripped.trim().is_empty() {
        return Err(SkipReason::InjectedOnly);
    }

    // 2. Secrets out before anything else looks at the text.
    let first = ai_smartness_redact::redact(&stripped);
    if first.text.trim().is_empty() {
        return Err(if first.count > 0 {
            SkipReason::PrivateOnly
        } else {
            SkipReason::Empty
        });
    }

    // 3. JSON → semantic text. An unclosed `<private>` (or a PEM block
    //    spanning two fields) can break the redacted document; then parse
    //    the unredacted text instead: nothing is stored from it, and its
    //    extraction is fully redacted below (so the first count is dropped
    //    to avoid counting the same secrets twice).
    let (extracted, mut redactions) = match clean::parse_json_document(&first.text) {
        Some(value) => (Some(clean::extract_semantic_text(&value)), first.count),
        None => match clean::parse_json_document(&stripped) {
            Some(value) => (Some(clean::extract_semantic_text(&value)), 0),
            None => (None, first.count),
        },
    };
    let text = match extracted {
        Some(semantic) if semantic.trim().is_empty() => return Err(SkipReason::PureJson),
        Some(semantic) => {
            // Decoded strings may hold tags and secrets that were escaped.
            let visible = filter::strip_ide_tags(&semantic);
            if visible.trim().is_empty() {
                return Err(SkipReason::InjectedOnly);
            }
            let again = ai_smartness_redact::redact(&visible);
            redactions += again.count;
            again.text
        }
        None => first.text,
    };
    let content = clean::normalize_text(&text);

    // 4. Worth keeping?
    if content.is_empty() {
        return Err(if redactions > 0 {
            SkipReason::PrivateOnly
        } else {
            SkipReason::Empty
        });
    }
    let len = content.chars().count();
    // A note was asked for by name: however short, it is kept. So is a person's short request
    // that names something ("use treefmt", "bump serde"): what they asked is what they will
    // ask about later. One that names nothing ("continue", "ok") is only a mark. A short
    // report that something failed ("API Error: Request timed out.") is what stopped the work.
    let named_request = source == SourceType::Prompt && names_something(&content);
    if len < MIN_CAPTURE_CHARS
        && !source::is_note(tool)
        && !named_request
        && !is_short_failure_report(&content)
    {
        return Err(SkipReason::TooShort { len });
    }

    // 5. Whole, up to the bound.
    let content = clean::keep_within(&content, max_chars);
    Ok(Prepared {
        source,
        content,
        redactions,
    })
}

/// Whether `content` is a short report that something failed ("API Error: Request timed
/// out."): under [`MIN_CAPTURE_CHARS`], naming something, kept for saying that alone. Placed
/// with the work it stopped, since it has too few words to be placed by.
pub fn is_short_failure_report(content: &str) -> bool {
    content.chars().nth(MIN_CAPTURE_CHARS - 1).is_none()
        && clean::says_something_failed(content)
        && names_something(content)
}

/// Whether a short text holds a word that can name a subject, of three characters or more
/// (not "continue", "thanks", "ok", "hello").
fn names_something(text: &str) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
        .map(|w| {
            w.trim_matches(|c: char| matches!(c, '.' | '-' | '/'))
                .to_lowercase()
        })
        .any(|w| w.chars().count() >= 3 && ai_smartness_text::is_subject_word(&w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(tool: &str, raw: &str) -> Prepared {
        match prepare(tool, raw) {
            Ok(p) => p,
            Err(reason) => panic!("{tool}: unexpectedly skipped: {reason}"),
        }
    }

    #[test]
    fn bash_response_is_cleaned() {
        let raw = r#"{"stdout":"\u001b[32mrunning 3 tests\u001b[0m\ntest store::atomic::tests::rename_is_atomic ... ok\ntest store::atomic::tests::fsync_parent_dir ... FAILED\n\ntest result: FAILED. 2 passed; 1 failed; 0 ignored","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":false}"#;
        let p = ok("Bash", raw);
        assert_eq!(p.source, SourceType::Command);
        assert!(
            p.content.starts_with("running 3 tests\ntest store::atomic"),
            "{}",
            p.content
        );
        assert!(!p.content.contains("interrupted"));
        assert!(!p.content.contains('\u{1b}'));
        assert_eq!(p.redactions, 0);
    }

    #[test]
    fn read_response_keeps_path_and_content() {
        let raw = r#"{"type":"text","file":{"filePath":"/home/dev/project/src/main.rs","content":"use std::env;\n\nfn main() {\n    let args: Vec<String> = env::args().collect();\n    println!(\"{:?}\", args);\n}\n","numLines":6,"startLine":1,"totalLines":6}}"#;
        let p = ok("Read", raw);
        assert_eq!(p.source, SourceType::Read);
        assert!(p
            .content
            .starts_with("/home/dev/project/src/main.rs\nuse std::env;"));
        assert!(!p.content.contains("numLines"));
    }

    #[test]
    fn edit_response() {
        let raw = r#"{"filePath":"/home/dev/project/src/store/atomic.rs","oldString":"file.sync_all()?;","newString":"file.sync_all()?;\n    dir.sync_all()?;","originalFile":"fn write_atomic() { /* whole file */ }","structuredPatch":[{"oldStart":40,"oldLines":1,"newStart":40,"newLines":2,"lines":["     file.sync_all()?;","+    dir.sync_all()?;"]}],"userModified":false,"replaceAll":false}"#;
        let p = ok("Edit", raw);
        assert_eq!(p.source, SourceType::Write);
        assert!(p.content.contains("dir.sync_all()?;"));
        assert!(!p.content.contains("whole file"));
    }

    #[test]
    fn grep_and_glob_responses() {
        let grep = r#"{"mode":"files_with_matches","filenames":["src/store/atomic.rs","src/store/mod.rs","tests/store.rs"],"numFiles":3}"#;
        let p = ok("Grep", grep);
        assert_eq!(
            p.content,
            "src/store/atomic.rs\nsrc/store/mod.rs\ntests/store.rs"
        );
        assert!(source::is_context_tool("Grep"));
        // A single short match is not worth a thread.
        let glob = r#"{"filenames":["src/lib.rs"],"durationMs":3,"numFiles":1,"truncated":false}"#;
        assert_eq!(prepare("Glob", glob), Err(SkipReason::TooShort { len: 10 }));
    }

    #[test]
    fn skip_reasons() {
        assert_eq!(prepare("Bash", ""), Err(SkipReason::Empty));
        assert_eq!(prepare("Bash", "  \n\t "), Err(SkipReason::Empty));
        assert_eq!(
            prepare("Bash", r#"{"success":true}"#),
            Err(SkipReason::PureJson)
        );
        assert_eq!(
            prepare("mcp__github__list", "[]"),
            Err(SkipReason::PureJson)
        );
        assert_eq!(
            prepare("Task", r#"{"count": 3}"#),
            Err(SkipReason::PureJson)
        );
        assert_eq!(
            prepare(
                "Bash",
                r#"{"stdout":"","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":true}"#
            ),
            Err(SkipReason::PureJson)
        );
        assert_eq!(prepare("Bash", "ok"), Err(SkipReason::TooShort { len: 2 }));
        // A short report of a failure is what stopped the work: kept.
        assert_eq!(
            ok("Response", "API Error: Request timed out.").content,
            "API Error: Request timed out."
        );
        assert_eq!(ok("Bash", "Permission denied").content, "Permission denied");
        assert_eq!(
            prepare(
                "UserPrompt",
                "<ide_opened_file>The user opened the file /home/dev/a.rs in the IDE.</ide_opened_file>"
            ),
            Err(SkipReason::InjectedOnly)
        );
        assert_eq!(
            prepare(
                "UserPrompt",
                "<private>my home address is 12 rue des Lilas</private>"
            ),
            Err(SkipReason::PrivateOnly)
        );
        assert_eq!(
            prepare(
                "Task",
                r#"{"content":[{"type":"text","text":"\u003csystem-reminder>recall\u003c/system-reminder>"}]}"#
            ),
            Err(SkipReason::InjectedOnly)
        );
    }

    #[test]
    fn prompts_in_three_languages() {
        let fr = "<ide_selection>fn main() {}</ide_selection>Peux-tu corriger le bug dans src/store/atomic.rs ? Les écritures atomiques échouent quand le disque est plein.";
        let p = ok("UserPrompt", fr);
        assert_eq!(p.source, SourceType::Prompt);
        assert!(p.content.starts_with("Peux-tu corriger"));
        let es = "¿Puedes arreglar el error de conexión en src/db/pool.rs? El pool se agota.";
        assert_eq!(ok("UserPrompt", es).source, SourceType::Prompt);
        let en = "Why does the daemon crash when the socket file already exists?";
        assert_eq!(ok("UserPrompt", en).content, en);
    }

    #[test]
    fn system_reminders_are_never_recaptured() {
        let raw = "Here is the plan for the store refactor.\n<system-reminder>\nRelevant memory: \"Atomic writes in store/atomic.rs\"\n</system-reminder>";
        let p = ok("Response", raw);
        assert_eq!(p.content, "Here is the plan for the store refactor.");
        // Also when the reminder was JSON-escaped inside a tool response.
        let json = r#"{"content":[{"type":"text","text":"Agent report: the index is rebuilt on startup.\n<system-reminder>injected recall</system-reminder>"}]}"#;
        let p = ok("Task", json);
        assert_eq!(p.content, "Agent report: the index is rebuilt on startup.");
    }

    #[test]
    fn secrets_are_redacted_including_json_escaped_ones() {
        let raw = r#"{"type":"text","file":{"filePath":"/home/dev/project/.env","content":"DB_PASSWORD=hunter2\nGITHUB_TOKEN=ghp_1a2B3c4D5e6F7g8H9i0J1k2L3m4N5o6P7q8R\nPOSTGRES_PASSWORD=postgres\n-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oN3Yz\n-----END EC PRIVATE KEY-----\n{\"api_key\": \"live_4f9a8b7c6d5e\"}","numLines":6,"startLine":1,"totalLines":6}}"#;
        let p = ok("Read", raw);
        for leaked in [
            "hunter2",
            "ghp_1a2B",
            "=postgres",
            "MHcCAQEE",
            "live_4f9a8b7c6d5e",
        ] {
            assert!(
                !p.content.contains(leaked),
                "{leaked} leaked:\n{}",
                p.content
            );
        }
        assert!(p.content.contains("DB_PASSWORD=[REDACTED:password]"));
        assert!(p.content.contains("[REDACTED:private_key]"));
        assert!(
            p.content.contains(r#""api_key": "[REDACTED:api_key]""#),
            "{}",
            p.content
        );
        assert_eq!(p.redactions, 5);
    }

    #[test]
    fn unclosed_private_inside_json_is_still_dropped() {
        let raw = r#"{"stdout":"public build log: 14 crates compiled\n<private>token dump follows\nsecret stuff","stderr":""}"#;
        let p = ok("Bash", raw);
        assert_eq!(p.content, "public build log: 14 crates compiled");
        assert!(p.redactions >= 1);
    }

    #[test]
    fn a_long_output_is_kept_whole_up_to_the_bound() {
        let mut stdout = String::new();
        for i in 0..2000 {
            stdout.push_str(&format!("test store::case_{i} ... ok\\n"));
        }
        let raw = format!(r#"{{"stdout":"{stdout}test result: ok. 2000 passed","stderr":""}}"#);
        let p = ok("Bash", &raw);
        // 50,000 characters: every line is there.
        assert!(p.content.contains("test store::case_1000 ... ok"));
        assert!(p.content.ends_with("test result: ok. 2000 passed"));
    }

    #[test]
    fn past_the_bound_head_tail_and_errors_stay() {
        let mut log = String::new();
        for i in 0..4000 {
            log.push_str(&format!(
                "compiling crate_{i} v0.1.0 with its usual flags\n"
            ));
            if i == 2500 {
                log.push_str("error[E0308]: mismatched types in src/pool.rs:41\n");
            }
        }
        log.push_str("build failed: 1 error");
        let p = prepare_within("Bash", &log, 32 * 1024).unwrap();
        assert!(p.content.chars().count() <= 32 * 1024);
        assert!(p.content.starts_with("compiling crate_0 v0.1.0"));
        assert!(p.content.ends_with("build failed: 1 error"));
        assert!(p
            .content
            .contains("error[E0308]: mismatched types in src/pool.rs:41"));
        assert!(
            p.content.contains("left out here"),
            "says what was left out"
        );
    }

    #[test]
    fn prepared_content_feeds_the_extractor() -> Result<(), ExtractError> {
        let raw = r#"{"stdout":"running 2 tests\ntest store::atomic::tests::fsync_parent_dir ... FAILED\nthread 'store::atomic::tests::fsync_parent_dir' panicked at src/store/atomic.rs:88:9:\nassertion failed: dir_synced\ntest result: FAILED. 1 passed; 1 failed","stderr":"","interrupted":false,"isImage":false}"#;
        let p = ok("Bash", raw);
        let e = LocalExtractor.extract(&p.content, p.source)?;
        assert_eq!(e.title, "Cargo test failures in store/atomic.rs");
        assert_eq!(p.origin(), OriginType::Prompt);
        Ok(())
    }
}
