//! The prompts the daemon sends: extraction per source type, coherence of
//! a follow-up with a Glob/Grep result, borderline reactivation, the
//! compaction synthesis and the typing of gossip bridges.
//!
//! Each asks for one strict JSON object and states its exact shape; [`crate::answers`]
//! checks the answer. Inputs are cut to the limits below. What is sent has been
//! cleaned and redacted by the capture pipeline already: no secret reaches a provider.

use ai_smartness_capture::source::SourceType;
use ai_smartness_llm::{cut, ChatMessage, ChatRequest, SystemBlock};
use std::fmt::Write;
use std::time::Duration;

/// Characters of a capture sent for extraction.
pub const MAX_EXTRACTION_INPUT: usize = 3000;
/// Characters of each side of a coherence or reactivation question.
pub const MAX_COHERENCE_INPUT: usize = 1500;
/// Characters of each recent message quoted in a synthesis prompt.
pub const MAX_SYNTHESIS_MESSAGE: usize = 500;
/// Output caps: an extraction is a small object, a yes/no smaller, a synthesis a page.
const EXTRACTION_MAX_TOKENS: u32 = 700;
const VERDICT_MAX_TOKENS: u32 = 200;
const SYNTHESIS_MAX_TOKENS: u32 = 1500;
const RELATION_MAX_TOKENS_EACH: u32 = 80;

/// The shared system prompt: what the model is, and the output discipline.
const SYSTEM: &str = "You are the semantic analyser of a coding agent's long-term memory. \
You read pieces of the agent's work (prompts, files, commands, answers) and describe them so \
they can be found and linked later. You answer with ONE strict JSON object, exactly in the shape \
asked: no prose before or after, no code fence, no comments.";

/// The focus of an extraction per source type.
pub fn focus(source: SourceType) -> &'static str {
    match source {
        SourceType::Prompt => {
            "a message the user typed. Focus on the user's intention: what they want and why"
        }
        SourceType::Read => {
            "a file (or a file listing, or search results) the agent read. Focus on the file's \
             structure and content: what it is, what it defines, what matters in it"
        }
        SourceType::Write => {
            "a change the agent made to a file. Focus on the modifications: what changed, where, \
             and to what end"
        }
        SourceType::Task => {
            "the report of a sub-agent. Focus on its result: what it found, did or concluded"
        }
        SourceType::Fetch => {
            "content fetched from the web or an external tool. Focus on what it says that \
             matters to the project"
        }
        SourceType::Response => {
            "an answer the assistant gave. Focus on what it explained, decided or proposed"
        }
        SourceType::Command => {
            "the output of a shell command. Focus on what the output shows: results, errors, \
             the state of the system"
        }
    }
}

/// The language values are written in, from the config's `language`.
fn language_name(code: &str) -> &'static str {
    match code.trim().to_ascii_lowercase().as_str() {
        "fr" => "French",
        "es" => "Spanish",
        _ => "English",
    }
}

fn request(user: String, max_tokens: u32, timeout: Duration) -> ChatRequest {
    ChatRequest {
        system: vec![SystemBlock {
            text: SYSTEM.into(),
            // The same system prompt for every call: cached where the provider can.
            cache: true,
        }],
        messages: vec![ChatMessage::user(user)],
        max_tokens,
        temperature: Some(0.0),
        timeout,
        ..ChatRequest::default()
    }
}

/// The extraction: title, intent, summary, subjects, questions, decisions, key concepts.
pub fn extraction(
    source: SourceType,
    content: &str,
    language: &str,
    timeout: Duration,
) -> ChatRequest {
    let intent = if source == SourceType::Prompt {
        "What the user wants (1 sentence)"
    } else {
        "What this content is for in the work (1 sentence)"
    };
    let user = format!(
        "Analyse {focus}, and extract:\n\n\
         CONTENT ({source}):\n<content>\n{content}\n</content>\n\n\
         Answer in strict JSON:\n\
         {{\n  \"title\": \"Title of the subject (3-5 words, nouns not verbs: the subject, not the action)\",\n  \
         \"intent\": \"{intent}\",\n  \
         \"summary\": \"Summary (1-2 sentences)\",\n  \
         \"subjects\": [\"subject1\", \"subject2\"],\n  \
         \"questions\": [\"question asked or implied\"],\n  \
         \"decisions\": [\"decision made\"],\n  \
         \"key_concepts\": [\"important technical concept\"]\n}}\n\n\
         subjects: 2 to 6 short lowercase topics; key_concepts: up to 8 identifiers, file names \
         or technical terms as written; questions and decisions: empty lists when there are none. \
         Write the text values in {lang}.",
        focus = focus(source),
        content = cut(content, MAX_EXTRACTION_INPUT),
        lang = language_name(language),
    );
    request(user, EXTRACTION_MAX_TOKENS, timeout)
}

/// Coherence: does the content that followed a Glob/Grep result belong under it?
pub fn coherence(
    context_tool: &str,
    context: &str,
    source: SourceType,
    content: &str,
    timeout: Duration,
) -> ChatRequest {
    let user = format!(
        "The agent ran {tool}; its result is the CONTEXT. The NEXT CONTENT came right after it.\n\n\
         CONTEXT ({tool} result):\n<context>\n{context}\n</context>\n\n\
         NEXT CONTENT ({source}):\n<content>\n{content}\n</content>\n\n\
         How coherent is the next content with the context: is it the follow-up of that search \
         (about the files or the subject it found)?\n\
         Answer in strict JSON: {{\"score\": 0.0, \"reason\": \"one short sentence\"}}\n\
         score from 0.0 to 1.0: above 0.6 the content is a direct follow-up of the context; \
         0.3 to 0.6 related but independent; below 0.3 unrelated.",
        tool = if context_tool.is_empty() {
            "a search"
        } else {
            context_tool
        },
        context = cut(context, MAX_COHERENCE_INPUT),
        content = cut(content, MAX_COHERENCE_INPUT),
    );
    request(user, VERDICT_MAX_TOKENS, timeout)
}

/// What the daemon knows of a thread, for the prompts that show threads.
#[derive(Debug, Clone, Default)]
pub struct ThreadBrief {
    /// The thread's title.
    pub title: String,
    /// Its summary.
    pub summary: String,
    /// Its first topics.
    pub topics: Vec<String>,
    /// Its decisions (synthesis only).
    pub decisions: Vec<String>,
    /// Its open questions (synthesis only).
    pub questions: Vec<String>,
    /// Its latest messages, oldest first (synthesis only).
    pub recent: Vec<String>,
}

impl ThreadBrief {
    fn describe(&self, out: &mut String) {
        let _ = writeln!(out, "title: {}", self.title.trim());
        if !self.summary.trim().is_empty() {
            let _ = writeln!(out, "summary: {}", cut(&self.summary, MAX_COHERENCE_INPUT));
        }
        if !self.topics.is_empty() {
            let topics: Vec<&str> = self.topics.iter().take(12).map(String::as_str).collect();
            let _ = writeln!(out, "topics: {}", topics.join(", "));
        }
    }
}

/// Borderline reactivation: does this capture concern this dormant thread?
pub fn reactivation(thread: &ThreadBrief, content: &str, timeout: Duration) -> ChatRequest {
    let mut desc = String::new();
    thread.describe(&mut desc);
    let user = format!(
        "A THREAD of earlier work is dormant. A new MESSAGE arrived.\n\n\
         THREAD:\n{desc}\nMESSAGE:\n<message>\n{content}\n</message>\n\n\
         Does this message concern this thread (the same subject, so the thread should be \
         reactivated)?\n\
         Answer in strict JSON: {{\"related\": true, \"reason\": \"one short sentence\"}}",
        content = cut(content, MAX_COHERENCE_INPUT),
    );
    request(user, VERDICT_MAX_TOKENS, timeout)
}

/// The synthesis written before a compaction.
pub fn synthesis(threads: &[ThreadBrief], language: &str, timeout: Duration) -> ChatRequest {
    let mut desc = String::new();
    for (i, t) in threads.iter().enumerate() {
        let _ = writeln!(desc, "THREAD {}:", i + 1);
        t.describe(&mut desc);
        for (label, items) in [("decisions", &t.decisions), ("questions", &t.questions)] {
            if !items.is_empty() {
                let _ = writeln!(desc, "{label}: {}", items.join(" | "));
            }
        }
        for m in &t.recent {
            let _ = writeln!(desc, "recent: {}", cut(m, MAX_SYNTHESIS_MESSAGE));
        }
        desc.push('\n');
    }
    let user = format!(
        "The agent's context is about to be compacted. From the most active threads of work \
         below, write the synthesis that lets it continue without losing the thread.\n\n\
         {desc}\
         Answer in strict JSON:\n\
         {{\n  \"summary\": \"Where the work stands (2-5 sentences)\",\n  \
         \"decisions_made\": [\"decision, with its reason\"],\n  \
         \"open_questions\": [\"what is still to decide or find out\"],\n  \
         \"key_insights\": [\"what was learnt that matters next\"]\n}}\n\n\
         At most 8 items per list; empty lists when there is nothing. Write the text values in \
         {lang}.",
        lang = language_name(language),
    );
    request(user, SYNTHESIS_MAX_TOKENS, timeout)
}

/// Bridge typing: for each pair of linked threads, the relation an LLM reads in them.
pub fn relations(pairs: &[(ThreadBrief, ThreadBrief)], timeout: Duration) -> ChatRequest {
    let mut desc = String::new();
    for (i, (a, b)) in pairs.iter().enumerate() {
        let _ = writeln!(desc, "PAIR {}:", i + 1);
        desc.push_str("A ");
        a.describe(&mut desc);
        desc.push_str("B ");
        b.describe(&mut desc);
        desc.push('\n');
    }
    let user = format!(
        "Each PAIR below is two threads of work found similar. Say how they relate.\n\n\
         {desc}\
         Relations: EXTENDS (one continues or details the other; the default), DEPENDS (one \
         needs the other), CONTRADICTS (they disagree: a fact or decision of one conflicts with \
         the other), REPLACES (one supersedes the other, e.g. a new approach instead of an old \
         one). direction: A_TO_B when A is the one that depends, replaces or extends; B_TO_A \
         otherwise.\n\
         Answer in strict JSON, one item per pair:\n\
         {{\"bridges\": [{{\"pair\": 1, \"relation\": \"EXTENDS\", \"direction\": \"A_TO_B\", \
         \"reason\": \"one short sentence\"}}]}}"
    );
    let max_tokens = 100 + RELATION_MAX_TOKENS_EACH * pairs.len() as u32;
    request(user, max_tokens, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_type_has_its_focus_and_the_content_is_cut() {
        let long = "x".repeat(5000);
        for s in SourceType::ALL {
            let r = extraction(s, &long, "fr", Duration::from_secs(30));
            let text = r.messages[0].text();
            assert!(text.contains(focus(s)), "{s}");
            assert!(text.contains(&format!("CONTENT ({s})")));
            assert!(text.contains("French"));
            assert!(text.len() < 3000 + 2000, "cut to 3,000 characters");
            assert_eq!(r.timeout, Duration::from_secs(30));
        }
        assert!(focus(SourceType::Prompt).contains("intention"));
        assert!(focus(SourceType::Write).contains("modifications"));
        assert_eq!(cut("  abcdef ", 3), "abc [...]");
        assert_eq!(cut("abc", 3), "abc");
    }

    #[test]
    fn question_prompts_show_both_sides() {
        let r = coherence(
            "Grep",
            "src/a.rs:1: fn parse",
            SourceType::Read,
            "fn parse() {}",
            Duration::from_secs(15),
        );
        let t = r.messages[0].text();
        assert!(t.contains("Grep result") && t.contains("fn parse() {}"));
        let brief = ThreadBrief {
            title: "Auth tokens".into(),
            topics: vec!["jwt".into()],
            ..ThreadBrief::default()
        };
        let t = reactivation(&brief, "jwt expiry", Duration::from_secs(15)).messages[0].text();
        assert!(t.contains("title: Auth tokens") && t.contains("topics: jwt"));
        let r = relations(&[(brief.clone(), brief.clone())], Duration::from_secs(30));
        assert!(r.messages[0].text().contains("PAIR 1:"));
        assert_eq!(r.max_tokens, 180);
        let t = synthesis(&[brief], "en", Duration::from_secs(60)).messages[0].text();
        assert!(t.contains("THREAD 1:") && t.contains("decisions_made"));
    }
}
