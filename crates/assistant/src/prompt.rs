//! The prompt in levels: level 1 (role, reply format, commands with the
//! session's limits, and for automations the `completed` contract), level 2 (the user's data:
//! rules and a memory overview), both rebuilt every call and never stored; then the history
//! without its audit-only messages, consecutive USER and SYSTEM messages fused into one user
//! turn, with cache breakpoints on level 1, level 2 and the last message.

use ai_smartness_llm::{ChatMessage, ChatRequest, ContentBlock, Role, SystemBlock};
use ai_smartness_records::assistant::types::{
    prompt_messages, AILimitsConfig, MessageBody, SessionKind, SessionMessage, SystemMessage,
};
use ai_smartness_records::assistant::vocabulary;
use std::time::Duration;

/// Level 1: who the model is and how it must answer, for this kind of session.
pub fn level1(kind: SessionKind, limits: &AILimitsConfig) -> String {
    let role = match kind {
        SessionKind::Chat => {
            "You are the memory assistant of ai-smartness, the long-term memory of a coding agent \
working in this project. The memory is a graph of threads (topics of work, each with its \
messages) linked by bridges (typed semantic links). You talk with a developer: answer their \
questions from the memory using data commands, and change the memory with action commands when \
they ask for it or it clearly helps. Never invent thread ids: use ids that results gave you."
        }
        SessionKind::Automation | SessionKind::Seed => {
            "You are the memory assistant of ai-smartness, the long-term memory of a coding agent \
working in this project. The memory is a graph of threads (topics of work, each with its \
messages) linked by bridges (typed semantic links). You are running an automation: a task that \
runs on its own, on a schedule or on demand, with nobody to answer questions. Do the task with \
data commands and action commands, then end the run. Never invent thread ids: use ids that \
results gave you."
        }
    };
    let mut out = format!("# Role\n{role}\n\n");
    out.push_str(&vocabulary::documentation(limits, kind));
    if kind != SessionKind::Chat {
        out.push_str(
            "\n## Ending the run\nAfter successful actions the results come back to you and the \
run goes on: you do not need keepControl. When the task is done, reply \
{\"preText\": \"<what you did>\", \"completed\": true}: it is the only way to end the run \
cleanly. A run that stops sending commands without `completed` is cut off.\n",
        );
    }
    out
}

/// Level 2: the user's rules and the memory overview.
pub fn level2(rules: &[String], overview: &str) -> String {
    let mut out = String::from("# The user's rules\n");
    if rules.is_empty() {
        out.push_str("(none)\n");
    }
    for (i, r) in rules.iter().enumerate() {
        out.push_str(&format!("{}. {r}\n", i + 1));
    }
    out.push_str("\n# Memory overview\n");
    out.push_str(overview.trim_end());
    out.push('\n');
    out
}

/// How a system message reads in the prompt.
pub fn render_system(sm: &SystemMessage) -> String {
    let mut out = format!("[{}] {}", kind_name(sm), sm.summary);
    for r in &sm.command_results {
        out.push_str(&format!(
            "\n- {}: {}",
            r.command_type,
            serde_json::to_value(r.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        ));
        if let Some(d) = &r.detail {
            out.push_str(&format!(" ({d})"));
        }
    }
    if let Some(data) = &sm.formatted_data {
        out.push_str("\n\n");
        out.push_str(data);
    }
    out
}

fn kind_name(sm: &SystemMessage) -> String {
    serde_json::to_value(sm.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// One stored message as a role and a text, or none when it never reaches the model.
fn turn(m: &SessionMessage) -> Option<(Role, String)> {
    if !m.in_prompt() {
        return None;
    }
    Some(match &m.body {
        MessageBody::UserText { text_content } => (Role::User, text_content.clone()),
        MessageBody::UserRich { rich_content } => (Role::User, rich_content.linear_text.clone()),
        MessageBody::Ai {
            ai_message_json, ..
        } => (Role::Assistant, ai_message_json.clone()),
        MessageBody::AiText { text_content } => (Role::Assistant, text_content.clone()),
        MessageBody::System { system_message } => (Role::User, render_system(system_message)),
    })
}

/// The filtered history as provider turns: same-role neighbours fused (USER and SYSTEM become
/// one user turn; the APIs want turns to alternate), starting with a user turn, the last turn
/// carrying a cache breakpoint.
pub fn history(messages: &[SessionMessage]) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    for m in prompt_messages(messages) {
        let Some((role, text)) = turn(m) else {
            continue;
        };
        if text.trim().is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.content.push(ContentBlock::Text(text)),
            _ => out.push(ChatMessage {
                role,
                content: vec![ContentBlock::Text(text)],
                cache: false,
            }),
        }
    }
    if out.first().is_some_and(|m| m.role == Role::Assistant) {
        out.insert(0, ChatMessage::user("(conversation resumed)"));
    }
    if let Some(last) = out.last_mut() {
        last.cache = true;
    }
    out
}

/// What one call of the autonomous loop sends.
pub struct RequestParts<'a> {
    pub kind: SessionKind,
    pub limits: &'a AILimitsConfig,
    pub level2: String,
    pub messages: &'a [SessionMessage],
    pub model: Option<String>,
    pub max_tokens: u32,
    pub timeout: Duration,
}

/// The request: levels 1 and 2 as cached system blocks, then the history.
pub fn build(p: RequestParts<'_>) -> ChatRequest {
    ChatRequest {
        model: p.model,
        system: vec![
            SystemBlock {
                text: level1(p.kind, p.limits),
                cache: true,
            },
            SystemBlock {
                text: p.level2,
                cache: true,
            },
        ],
        messages: history(p.messages),
        tools: Vec::new(),
        max_tokens: p.max_tokens,
        temperature: None,
        timeout: p.timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_records::assistant::message::AIMessage;
    use ai_smartness_records::assistant::types::{SystemMessage, SystemMessageType};
    use chrono::Utc;

    fn user(id: &str, t: &str) -> SessionMessage {
        SessionMessage::new(
            id,
            Utc::now(),
            MessageBody::UserText {
                text_content: t.into(),
            },
        )
    }

    fn system(id: &str, kind: SystemMessageType, t: &str) -> SessionMessage {
        SessionMessage::new(
            id,
            Utc::now(),
            MessageBody::System {
                system_message: SystemMessage::note(kind, t),
            },
        )
    }

    fn ai(id: &str, json: &str) -> SessionMessage {
        SessionMessage::new(
            id,
            Utc::now(),
            MessageBody::Ai {
                ai_message: AIMessage::default(),
                ai_message_json: json.into(),
            },
        )
    }

    #[test]
    fn user_and_system_turns_are_fused_and_audit_messages_dropped() {
        let msgs = vec![
            user("1", "Question"),
            system("2", SystemMessageType::DataAdded, "enrichments"),
            ai("3", "{\"preText\":\"answer\"}"),
            system("4", SystemMessageType::NetworkError, "offline"),
            SessionMessage::post_text("5", Utc::now(), "done!".into()),
            system("6", SystemMessageType::DataAdded, "queries"),
            user("7", "Another"),
        ];
        let h = history(&msgs);
        assert_eq!(h.len(), 3);
        assert_eq!(h[0].role, Role::User);
        assert_eq!(h[0].content.len(), 2);
        assert!(
            h[0].text().contains("Question") && h[0].text().contains("[DATA_ADDED] enrichments")
        );
        assert_eq!(h[1].role, Role::Assistant);
        assert_eq!(h[2].text(), "[DATA_ADDED] queries\n\nAnother");
        assert!(!h
            .iter()
            .any(|m| m.text().contains("offline") || m.text().contains("done!")));
        assert!(h[2].cache && !h[0].cache && !h[1].cache);
    }

    #[test]
    fn levels_carry_the_contract_and_cache_breakpoints() {
        let limits = AILimitsConfig::default();
        let a = level1(SessionKind::Automation, &limits);
        assert!(a.contains("\"completed\": true") && a.contains("THREADS_IN_PERIOD"));
        assert!(a.contains("At most 20 automatic exchanges"));
        let c = level1(SessionKind::Chat, &limits);
        assert!(!c.contains("Ending the run") && c.contains("At most 10 automatic exchanges"));
        let req = build(RequestParts {
            kind: SessionKind::Chat,
            limits: &limits,
            level2: level2(&["Always answer in English.".into()], "3 threads"),
            messages: &[user("1", "hi")],
            model: None,
            max_tokens: 100,
            timeout: Duration::from_secs(1),
        });
        assert!(req.system.iter().all(|b| b.cache));
        assert!(req.system[1].text.contains("1. Always answer in English."));
        assert!(req.messages[0].cache);
    }
}
