//! Heuristic filters: decide what is not worth remembering.
//!
//! Three things are thrown away before anything else happens:
//!
//! * IDE context tags (`<ide_selection>`, `<ide_opened_file>`, any
//!   `<ide_*>` element) which the IDE integration prepends to prompts: they
//!   describe editor state, not the user's intent.
//! * `<system-reminder>` blocks. We inject those ourselves (memory recalls,
//!   hook notices); capturing them again would make memory feed on itself.
//! * Pure JSON structure (`{"success":true}`, `[]`, `{"count": 3}`): tool
//!   acknowledgements carry no semantic text.
//!
//! Whatever survives must still be at least [`MIN_CAPTURE_CHARS`] long.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use super::clean::{extract_semantic_text, parse_json_document};

/// Minimum number of characters (not bytes) a cleaned capture must have.
/// Shorter texts ("ok", "Done.", a bare path) never make a useful thread.
pub const MIN_CAPTURE_CHARS: usize = 30;

/// Why [`super::prepare`] declined to capture something.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// Nothing but whitespace (or nothing at all) was sent.
    Empty,
    /// The text only contained IDE tags / system reminders.
    InjectedOnly,
    /// Everything was inside `<private>` spans.
    PrivateOnly,
    /// JSON structure without any semantic text.
    PureJson,
    /// Cleaned text shorter than [`MIN_CAPTURE_CHARS`] characters.
    TooShort {
        /// Length of the cleaned text, in characters.
        len: usize,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Empty => f.write_str("empty content"),
            SkipReason::InjectedOnly => {
                f.write_str("only IDE tags or system reminders (injected context)")
            }
            SkipReason::PrivateOnly => f.write_str("only <private> content"),
            SkipReason::PureJson => f.write_str("pure JSON without semantic text"),
            SkipReason::TooShort { len } => write!(
                f,
                "too short after cleaning ({len} chars, minimum {MIN_CAPTURE_CHARS})"
            ),
        }
    }
}

impl std::error::Error for SkipReason {}

/// Opening tag of an element to remove: `<ide_...>` or `<system-reminder>`,
/// with optional attributes and an optional self-closing slash.
static OPEN_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)<(ide_[a-z0-9_\-]*|system-reminder)(?:\s[^<>]*?)?(/)?>")
        .expect("valid OPEN_TAG regex")
});

/// Closing tags left over without an opening one (e.g. after truncation).
static STRAY_CLOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)</(?:ide_[a-z0-9_\-]*|system-reminder)\s*>").expect("valid STRAY_CLOSE regex")
});

/// Removes `<ide_*>...</ide_*>` and `<system-reminder>...</system-reminder>`
/// elements, content included.
///
/// The `regex` crate has no back-references, so closing tags are matched by
/// hand (ASCII case-insensitively). An opening tag without its closing tag
/// only loses the tag itself: injected blocks are always well-formed, so an
/// unmatched tag is most likely a *mention* of the tag (in source code or
/// docs) and dropping everything after it would destroy real content.
pub fn strip_ide_tags(text: &str) -> String {
    if !text.contains('<') {
        return text.to_string();
    }
    // ASCII lowercasing keeps byte offsets identical to `text`.
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while pos < text.len() {
        let Some(caps) = OPEN_TAG.captures_at(text, pos) else {
            break;
        };
        let (Some(whole), Some(name)) = (caps.get(0), caps.get(1)) else {
            break;
        };
        out.push_str(&text[pos..whole.start()]);
        if caps.get(2).is_some() {
            // Self-closing: `<ide_marker/>`.
            pos = whole.end();
            continue;
        }
        let closing = format!("</{}", name.as_str().to_ascii_lowercase());
        pos = match find_closing(&lower, whole.end(), &closing) {
            Some(end) => end,
            None => whole.end(),
        };
    }
    if pos < text.len() {
        out.push_str(&text[pos..]);
    }
    STRAY_CLOSE.replace_all(&out, "").into_owned()
}

/// Finds `closing` (e.g. `</ide_selection`) followed by optional whitespace
/// and `>` at or after `from`; returns the byte offset just past the `>`.
fn find_closing(lower: &str, from: usize, closing: &str) -> Option<usize> {
    let mut search = from;
    while let Some(rel) = lower.get(search..)?.find(closing) {
        let after = search + rel + closing.len();
        let rest = lower.get(after..)?;
        let trimmed = rest.trim_start();
        if trimmed.starts_with('>') {
            return Some(after + (rest.len() - trimmed.len()) + 1);
        }
        // `</ide_selection_extra>` is another tag: keep looking.
        search = after;
    }
    None
}

/// True when `text` is a JSON document (object, array or string) that
/// carries no semantic text once noise keys, numbers and booleans are
/// ignored: `{"success":true}`, `[]`, `{"count": 3}`, `{"id":"abc"}`.
///
/// Plain text, or JSON with real content (`{"stdout":"3 tests passed"}`),
/// returns false.
pub fn is_pure_json(text: &str) -> bool {
    match parse_json_document(text) {
        Some(value) => extract_semantic_text(&value).trim().is_empty(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_ide_selection_and_opened_file() {
        let prompt = "<ide_opened_file>The user opened the file /home/dev/project/src/lib.rs in the IDE. This may or may not be related to the current task.</ide_opened_file>\n<ide_selection>The user selected the lines 10 to 12 from /home/dev/project/src/lib.rs:\nfn main() {}\n</ide_selection>\nWhy does the store lose writes after a crash?";
        let out = strip_ide_tags(prompt);
        assert_eq!(out.trim(), "Why does the store lose writes after a crash?");
    }

    #[test]
    fn strips_any_ide_element_with_attributes_and_case() {
        let text = "before <IDE_Diagnostics level=\"error\">E0308 mismatched types</IDE_Diagnostics> after <ide_marker/> end";
        assert_eq!(strip_ide_tags(text), "before  after  end");
    }

    #[test]
    fn strips_system_reminders_multiline() {
        let text = "Real output line\n<system-reminder>\nMemory recall: thread \"Atomic writes\" (0.82)\n</system-reminder>\nmore output";
        let out = strip_ide_tags(text);
        assert!(!out.contains("Memory recall"));
        assert!(out.contains("Real output line"));
        assert!(out.contains("more output"));
    }

    #[test]
    fn unmatched_tag_only_drops_the_tag() {
        let code = "const OPEN: &str = \"<system-reminder>\";\nfn keep_me() {}";
        let out = strip_ide_tags(code);
        assert!(out.contains("fn keep_me() {}"));
        assert!(!out.contains("<system-reminder>"));
    }

    #[test]
    fn similar_tag_names_are_not_confused() {
        let text = "<ide_selection>a</ide_selection_extra> keep? </ide_selection> tail";
        assert_eq!(strip_ide_tags(text), " tail");
    }

    #[test]
    fn unrelated_markup_is_kept() {
        let text = "<div class=\"x\">hello</div> and Vec<String> and a < b";
        assert_eq!(strip_ide_tags(text), text);
    }

    #[test]
    fn multibyte_text_around_tags() {
        let text = "Écris ça <ide_selection>sélection é</ide_selection> ensuite ñandú";
        assert_eq!(strip_ide_tags(text), "Écris ça  ensuite ñandú");
    }

    #[test]
    fn pure_json_detection() {
        assert!(is_pure_json(r#"{"success":true}"#));
        assert!(is_pure_json("[]"));
        assert!(is_pure_json(r#"{"count": 3}"#));
        assert!(is_pure_json(
            r#"  {"ok": true, "ids": [1, 2, 3], "id": "a1b2"}  "#
        ));
        assert!(is_pure_json(
            r#"{"stdout":"","stderr":"","interrupted":false,"isImage":false,"noOutputExpected":true}"#
        ));
        // stdout that is itself pure JSON.
        assert!(is_pure_json(
            r#"{"stdout":"{\"success\":true}","stderr":"","interrupted":false,"isImage":false}"#
        ));
    }

    #[test]
    fn json_with_text_is_not_pure() {
        assert!(!is_pure_json(
            r#"{"stdout":"running 3 tests\ntest result: ok","stderr":"","interrupted":false}"#
        ));
        assert!(!is_pure_json(
            r#"{"filenames":["src/a.rs","src/b.rs"],"numFiles":2}"#
        ));
        assert!(!is_pure_json("just some text {\"a\": 1}"));
        assert!(!is_pure_json("not json at all"));
        assert!(!is_pure_json(""));
    }

    #[test]
    fn skip_reason_display() {
        assert_eq!(
            SkipReason::TooShort { len: 12 }.to_string(),
            "too short after cleaning (12 chars, minimum 30)"
        );
        assert_eq!(
            SkipReason::PureJson.to_string(),
            "pure JSON without semantic text"
        );
    }
}
