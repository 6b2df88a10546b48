//! Where a capture comes from.
//!
//! Two small vocabularies are persisted with every thread, so their string
//! forms are part of the on-disk format and must stay stable:
//!
//! * [`SourceType`]: the *kind* of tool interaction that produced the text
//!   (serialised lowercase: `"read"`, `"command"`, ...). It drives how the
//!   text is cleaned and titled.
//! * [`OriginType`]: why a thread exists at all (serialised
//!   `SCREAMING_SNAKE_CASE`: `"PROMPT"`, `"FILE_READ"`, ...). Captures map
//!   onto it through [`origin_for_source`]; `SPLIT` and `REACTIVATION` are
//!   produced by the thread manager, never by capture.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The kind of interaction a captured text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// Something the user typed.
    Prompt,
    /// A file or directory was looked at (Read, Glob, Grep).
    Read,
    /// A file was changed (Write, Edit, MultiEdit, NotebookEdit).
    Write,
    /// A sub-agent reported back (Task, Agent).
    Task,
    /// Content came from outside the machine (WebFetch, WebSearch, MCP tools).
    Fetch,
    /// The assistant's own answer.
    Response,
    /// A shell command ran; also the fallback for unknown tools.
    Command,
}

impl SourceType {
    /// Every variant, in declaration order (handy for tests and CLI help).
    pub const ALL: [SourceType; 7] = [
        SourceType::Prompt,
        SourceType::Read,
        SourceType::Write,
        SourceType::Task,
        SourceType::Fetch,
        SourceType::Response,
        SourceType::Command,
    ];

    /// The stable string form, identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::Prompt => "prompt",
            SourceType::Read => "read",
            SourceType::Write => "write",
            SourceType::Task => "task",
            SourceType::Fetch => "fetch",
            SourceType::Response => "response",
            SourceType::Command => "command",
        }
    }
}

impl fmt::Display for SourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Error returned when parsing an unknown source or origin name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what}: {value:?}")]
pub struct UnknownName {
    /// Which vocabulary was being parsed ("source type" / "origin type").
    pub what: &'static str,
    /// The rejected input.
    pub value: String,
}

impl FromStr for SourceType {
    type Err = UnknownName;

    /// Accepts the serialised form, case-insensitively, so CLI arguments and
    /// stored values parse the same way.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        SourceType::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| UnknownName {
                what: "source type",
                value: s.to_string(),
            })
    }
}

/// Why a thread was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OriginType {
    /// Conversation text: prompts, answers and shell output.
    Prompt,
    /// Reading or writing files.
    FileRead,
    /// A sub-agent's report.
    Task,
    /// External content (web, MCP).
    Fetch,
    /// Created by splitting an existing thread.
    Split,
    /// Revived from the archive.
    Reactivation,
}

impl OriginType {
    /// Every variant, in declaration order.
    pub const ALL: [OriginType; 6] = [
        OriginType::Prompt,
        OriginType::FileRead,
        OriginType::Task,
        OriginType::Fetch,
        OriginType::Split,
        OriginType::Reactivation,
    ];

    /// The stable string form, identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            OriginType::Prompt => "PROMPT",
            OriginType::FileRead => "FILE_READ",
            OriginType::Task => "TASK",
            OriginType::Fetch => "FETCH",
            OriginType::Split => "SPLIT",
            OriginType::Reactivation => "REACTIVATION",
        }
    }
}

impl fmt::Display for OriginType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OriginType {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim();
        OriginType::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(wanted))
            .ok_or_else(|| UnknownName {
                what: "origin type",
                value: s.to_string(),
            })
    }
}

/// Prefix Claude Code gives to tools served by MCP servers
/// (`mcp__<server>__<tool>`).
const MCP_PREFIX: &str = "mcp__";

/// Maps a Claude Code tool name to the kind of capture it produces.
///
/// Names are matched exactly (Claude Code's spelling); MCP tools count as
/// external content, and anything unknown is treated as a command because
/// that is the least specific kind. `UserPromptSubmit` (the hook event name)
/// is accepted as an alias of `UserPrompt` so a caller forwarding the event
/// name does not silently get `command`.
pub fn source_for_tool(tool: &str) -> SourceType {
    let tool = tool.trim();
    match tool {
        "Read" | "Glob" | "Grep" => SourceType::Read,
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => SourceType::Write,
        "Task" | "Agent" => SourceType::Task,
        "WebFetch" | "WebSearch" => SourceType::Fetch,
        "Bash" => SourceType::Command,
        "UserPrompt" | "UserPromptSubmit" => SourceType::Prompt,
        "Response" => SourceType::Response,
        NOTE_TOOL => SourceType::Prompt,
        _ if tool.starts_with(MCP_PREFIX) => SourceType::Fetch,
        _ => SourceType::Command,
    }
}

/// Maps a capture kind to the origin recorded on the thread it creates.
///
/// Writes are recorded as `FILE_READ` on purpose: both are "file work" and
/// the original design keeps a single file origin.
pub fn origin_for_source(source: SourceType) -> OriginType {
    match source {
        SourceType::Prompt | SourceType::Response | SourceType::Command => OriginType::Prompt,
        SourceType::Read | SourceType::Write => OriginType::FileRead,
        SourceType::Task => OriginType::Task,
        SourceType::Fetch => OriginType::Fetch,
    }
}

/// Tools whose output is context for the next step (search results) rather
/// than a topic of its own; the thread manager links their captures as
/// children of the thread that follows.
pub const CONTEXT_TOOLS: [&str; 2] = ["Glob", "Grep"];

/// The "tool" of a note someone asked to keep (`remember`): stored as a thread of its own,
/// whatever its length.
pub const NOTE_TOOL: &str = "Note";

/// Metadata key set (to `true`) on a recap of the conversation so far that the client wrote
/// itself and sent as the user's turn (Claude Code's summary when it compacts a session): it
/// names every subject of the session, and asks for none of them.
pub const RECAP_KEY: &str = "recap";

/// True for a capture whose metadata marks it as a recap ([`RECAP_KEY`]).
pub fn is_recap(metadata: &serde_json::Map<String, serde_json::Value>) -> bool {
    metadata
        .get(RECAP_KEY)
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// True for a note someone asked to keep.
pub fn is_note(tool: &str) -> bool {
    tool.trim() == NOTE_TOOL
}

/// True for tools listed in [`CONTEXT_TOOLS`].
pub fn is_context_tool(tool: &str) -> bool {
    CONTEXT_TOOLS.contains(&tool.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_map_matches_spec() {
        let cases = [
            ("Read", SourceType::Read),
            ("Write", SourceType::Write),
            ("Edit", SourceType::Write),
            ("MultiEdit", SourceType::Write),
            ("NotebookEdit", SourceType::Write),
            ("Glob", SourceType::Read),
            ("Grep", SourceType::Read),
            ("Task", SourceType::Task),
            ("Agent", SourceType::Task),
            ("WebFetch", SourceType::Fetch),
            ("WebSearch", SourceType::Fetch),
            ("Bash", SourceType::Command),
            ("UserPrompt", SourceType::Prompt),
            ("UserPromptSubmit", SourceType::Prompt),
            ("Response", SourceType::Response),
            ("mcp__github__create_issue", SourceType::Fetch),
            ("mcp__context7__get-library-docs", SourceType::Fetch),
            ("TodoWrite", SourceType::Command),
            ("", SourceType::Command),
            ("read", SourceType::Command),
        ];
        for (tool, want) in cases {
            assert_eq!(source_for_tool(tool), want, "tool {tool:?}");
        }
    }

    #[test]
    fn origin_map_matches_spec() {
        let cases = [
            (SourceType::Prompt, OriginType::Prompt),
            (SourceType::Read, OriginType::FileRead),
            (SourceType::Write, OriginType::FileRead),
            (SourceType::Task, OriginType::Task),
            (SourceType::Fetch, OriginType::Fetch),
            (SourceType::Response, OriginType::Prompt),
            (SourceType::Command, OriginType::Prompt),
        ];
        for (source, want) in cases {
            assert_eq!(origin_for_source(source), want, "source {source}");
        }
    }

    #[test]
    fn serde_forms_are_stable() -> Result<(), serde_json::Error> {
        assert_eq!(
            serde_json::to_string(&SourceType::Response)?,
            "\"response\""
        );
        assert_eq!(
            serde_json::to_string(&OriginType::FileRead)?,
            "\"FILE_READ\""
        );
        assert_eq!(
            serde_json::to_string(&OriginType::Reactivation)?,
            "\"REACTIVATION\""
        );
        for s in SourceType::ALL {
            assert_eq!(serde_json::to_string(&s)?, format!("\"{s}\""));
            let back: SourceType = serde_json::from_str(&format!("\"{s}\""))?;
            assert_eq!(back, s);
        }
        for o in OriginType::ALL {
            assert_eq!(serde_json::to_string(&o)?, format!("\"{o}\""));
            let back: OriginType = serde_json::from_str(&format!("\"{o}\""))?;
            assert_eq!(back, o);
        }
        Ok(())
    }

    #[test]
    fn from_str_round_trips() {
        assert_eq!("FETCH".parse::<SourceType>(), Ok(SourceType::Fetch));
        assert_eq!("file_read".parse::<OriginType>(), Ok(OriginType::FileRead));
        assert!("nope".parse::<SourceType>().is_err());
    }

    #[test]
    fn context_tools() {
        assert!(is_context_tool("Glob"));
        assert!(is_context_tool("Grep"));
        assert!(!is_context_tool("Read"));
        assert!(!is_context_tool("glob"));
    }
}
