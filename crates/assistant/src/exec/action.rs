//! Action commands: change the memory once checked and approved.

use super::*;

pub(super) fn apply(
    mem: &mut Memory,
    env: &ExecEnv,
    cmd: &ActionCommand,
    note_embedding: Option<Vec<f32>>,
) -> Result<String, ExecError> {
    let name = cmd.type_name();
    let edit = |e: EditError| ExecError::edit(name, e);
    match cmd {
        // Workflow runs live in the daemon, which starts them itself (see `outcome`).
        ActionCommand::StartRun { .. } => Err(ExecError::NotAvailableHere { command: name }),
        ActionCommand::RenameThread { thread_id, title } => {
            let old = thread(mem, name, thread_id)?.title.clone();
            mem.rename_thread(thread_id, title).map_err(edit)?;
            let t = thread(mem, name, thread_id)?;
            Ok(format!(
                "{name}: {} renamed (was {:?})",
                tref(t),
                one_line(&old, 120)
            ))
        }
        ActionCommand::SuspendThread { thread_id } => {
            set_status(mem, env, name, thread_id, ThreadStatus::Suspended)
        }
        ActionCommand::ReactivateThread { thread_id } => {
            set_status(mem, env, name, thread_id, ThreadStatus::Active)
        }
        ActionCommand::ArchiveThread { thread_id } => {
            set_status(mem, env, name, thread_id, ThreadStatus::Archived)
        }
        ActionCommand::MergeThreads {
            source_id,
            target_id,
        } => {
            let s = thread(mem, name, source_id)?;
            let (source, moved) = (tref(s), s.messages.len());
            let before = mem.graph.bridges_of(target_id).count();
            mem.merge_threads(source_id, target_id, env.now)
                .map_err(edit)?;
            let t = thread(mem, name, target_id)?;
            Ok(format!(
                "{name}: {source} merged into {}: {} moved ({} in all), {} (had {before}); {source_id} no longer exists",
                tref(t),
                plural(moved, "message"),
                t.messages.len(),
                plural(mem.graph.bridges_of(target_id).count(), "bridge")
            ))
        }
        ActionCommand::CreateBridge {
            source_id,
            target_id,
            relation,
            reason,
        } => {
            let id = mem
                .create_bridge(
                    source_id,
                    target_id,
                    bridge_type(*relation),
                    reason,
                    env.now,
                )
                .map_err(edit)?;
            let b = bridge(mem, name, &id)?;
            Ok(format!("{name}: created {}", bridge_line(mem, b)))
        }
        ActionCommand::DeleteBridge { bridge_id } => {
            let line = bridge_line(mem, bridge(mem, name, bridge_id)?);
            mem.delete_bridge(bridge_id).map_err(edit)?;
            Ok(format!("{name}: deleted {line}"))
        }
        ActionCommand::AddRule { text } => {
            let mut before = Vec::new();
            let ((), rules) = env
                .rules
                .update(|r| {
                    before = r.rules.clone();
                    r.add(text)
                })
                .map_err(|e| ExecError::rule(name, e))?;
            let mut out = format!(
                "{name}: rule {} added: {:?}",
                rules.rules.len(),
                one_line(text, 500)
            );
            // UserRules keeps at most 20: past that the oldest goes.
            if let Some(dropped) = before.first().filter(|r| !rules.rules.contains(r)) {
                let _ = write!(
                    out,
                    "; the oldest rule {:?} was dropped (20 at most)",
                    one_line(dropped, 200)
                );
            }
            Ok(out)
        }
        ActionCommand::RemoveRule { index } => {
            let (removed, rules) = env
                .rules
                .update(|r| r.remove(*index as usize))
                .map_err(|e| ExecError::rule(name, e))?;
            Ok(format!(
                "{name}: rule {index} removed: {:?}; {} left (the ones after it moved up by one)",
                one_line(&removed, 500),
                plural(rules.rules.len(), "rule")
            ))
        }
        ActionCommand::WriteNote { title, content } => {
            let (title, content) = note_parts(title, content)?;
            let e = LocalExtractor
                .extract(&format!("{title}\n{content}"), SourceType::Response)
                .unwrap_or_default();
            let topics = normalize_topics(e.subjects.iter().chain(&e.key_concepts));
            let id = mem.add_note(
                &title,
                &content,
                note_embedding.unwrap_or_default(),
                topics,
                env.now,
            );
            let t = thread(mem, name, &id)?;
            let mut out = format!(
                "{name}: note stored as {}, topics: {}",
                tref(t),
                self::topics(t, 8)
            );
            let linked = mem.graph.bridges_of(&id).count();
            if linked > 0 {
                let _ = write!(out, "; linked to {}", plural(linked, "related thread"));
            }
            Ok(out)
        }
    }
}

pub(super) fn set_status(
    mem: &mut Memory,
    env: &ExecEnv,
    name: &'static str,
    id: &str,
    status: ThreadStatus,
) -> Result<String, ExecError> {
    let was = thread(mem, name, id)?.status;
    mem.set_thread_status(id, status, env.now)
        .map_err(|e| ExecError::edit(name, e))?;
    let t = thread(mem, name, id)?;
    Ok(if was == status {
        format!("{name}: {} was already {}", tref(t), status.as_str())
    } else {
        format!(
            "{name}: {} is now {} (was {})",
            tref(t),
            status.as_str(),
            was.as_str()
        )
    })
}

/// A note's title and content as stored: secrets and `<private>` spans out, like captures.
pub(super) fn note_parts(title: &str, content: &str) -> Result<(String, String), ExecError> {
    let title = one_line(&redact(title).text, MAX_TITLE_CHARS);
    let content = redact(content).text.trim().to_string();
    if title.is_empty() || content.is_empty() {
        return Err(ExecError::EmptyNote {
            command: "WRITE_NOTE",
        });
    }
    Ok((title, content))
}

pub(super) fn bridge_type(r: Relation) -> BridgeType {
    match r {
        Relation::Extends => BridgeType::Extends,
        Relation::Contradicts => BridgeType::Contradicts,
        Relation::Depends => BridgeType::Depends,
        Relation::Replaces => BridgeType::Replaces,
        Relation::ChildOf => BridgeType::ChildOf,
        Relation::Sibling => BridgeType::Sibling,
    }
}
