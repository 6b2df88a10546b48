//! Data commands: read the memory and answer in compact plain text.

use super::*;

pub(super) fn search(
    mem: &Memory,
    env: &ExecEnv,
    query: &str,
    limit: Option<u32>,
    vectors: Option<&QueryVectors>,
) -> String {
    let name = "SEARCH_THREADS";
    let limit = limit
        .unwrap_or(DEFAULT_SEARCH_LIMIT)
        .clamp(1, MAX_SEARCH_LIMIT as u32) as usize;
    let q = Query {
        text: query.to_string(),
        embedding: unit_vector(vectors.map_or(&[], |v| v.embedding.as_slice())),
        words: vectors.map(|v| v.words.clone()).unwrap_or_default(),
        topics: query_topics(query),
    };
    let ranking = retrieve::rank(mem, &q, env.now);
    let hits: Vec<(&Thread, f32)> = ranking
        .thread_scores()
        .into_iter()
        .filter(|(_, s)| *s >= MIN_SEARCH_SCORE)
        .filter_map(|(id, s)| Some((mem.graph.thread(id)?, s)))
        .take(limit)
        .collect();
    let shown = format!("{:?}", one_line(query, 200));
    if hits.is_empty() {
        return format!(
            "{name} {shown}: no thread matches (archived threads are not searched); try other words, or MEMORY_OVERVIEW\n"
        );
    }
    let mut out = format!(
        "{name} {shown}: {}, best first (archived threads are not searched):\n",
        plural(hits.len(), "thread")
    );
    for (i, (t, score)) in hits.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. {} score {score:.2} [{}] topics: {}",
            i + 1,
            tref(t),
            t.status.as_str(),
            topics(t, 8)
        );
        let g = gist(t);
        if !g.is_empty() {
            let _ = writeln!(out, "   {g}");
        }
    }
    out
}

pub(super) fn explore(
    mem: &Memory,
    id: &str,
    depth: Option<u8>,
    direction: Option<Direction>,
) -> Result<String, ExecError> {
    let name = "EXPLORE_NEIGHBORHOOD";
    let start = thread(mem, name, id)?;
    let depth = depth.unwrap_or(DEFAULT_EXPLORE_DEPTH).clamp(1, 3);
    let direction = direction.unwrap_or(Direction::Both);
    let mut seen: HashSet<&str> = HashSet::from([start.id.as_str()]);
    let mut frontier = vec![start.id.as_str()];
    let mut reached: Vec<(u8, &Thread, &ThinkBridge)> = Vec::new();
    for d in 1..=depth {
        let mut next = Vec::new();
        for cur in frontier {
            let mut bridges: Vec<&ThinkBridge> = mem
                .graph
                .bridges_of(cur)
                .filter(|b| b.status != BridgeStatus::Invalid)
                .filter(|b| match direction {
                    Direction::Out => b.source_id == cur,
                    Direction::In => b.target_id == cur,
                    Direction::Both => true,
                })
                .collect();
            bridges.sort_by(|a, b| b.confidence.total_cmp(&a.confidence).then(a.id.cmp(&b.id)));
            for b in bridges {
                let Some(t) = b.other_end(cur).and_then(|o| mem.graph.thread(o)) else {
                    continue;
                };
                if seen.insert(t.id.as_str()) {
                    reached.push((d, t, b));
                    next.push(t.id.as_str());
                }
            }
        }
        frontier = next;
    }
    let head = format!(
        "{name} from {} (depth {depth}, direction {})",
        tref(start),
        direction.as_str()
    );
    if reached.is_empty() {
        return Ok(format!(
            "{head}: no thread reached (no valid bridge that way)\n"
        ));
    }
    let mut out = format!("{head}: {} reached\n", plural(reached.len(), "thread"));
    for (d, t, b) in reached.iter().take(MAX_LIST_LINES) {
        let weak = if b.status == BridgeStatus::Weak {
            ", weak"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "- depth {d}: {} [{}] via {} ({} -{}-> {}, confidence {:.2}{weak})",
            tref(t),
            t.status.as_str(),
            b.id,
            b.source_id,
            b.relation_type.as_str(),
            b.target_id,
            b.confidence
        );
    }
    left_out(&mut out, reached.len(), "the farthest");
    Ok(out)
}

pub(super) fn read_thread(mem: &Memory, env: &ExecEnv, id: &str) -> Result<String, ExecError> {
    let name = "READ_THREAD";
    let t = thread(mem, name, id)?;
    let mut out = format!("{name} {}\n", tref(t));
    let _ = writeln!(
        out,
        "status {}, weight {:.2}, {}, created {}, last active {}",
        t.status.as_str(),
        thread_weight(t, env.now),
        plural(t.messages.len(), "message"),
        ts(t.created_at),
        ts(t.last_active)
    );
    let _ = writeln!(out, "topics: {}", topics(t, usize::MAX));
    if !t.summary.trim().is_empty() {
        let _ = writeln!(out, "summary: {}", one_line(&t.summary, 600));
    }
    for (label, list) in [
        ("decisions", &t.decisions),
        ("open questions", &t.questions),
    ] {
        if !list.is_empty() {
            let items: Vec<String> = list.iter().map(|x| one_line(x, 200)).collect();
            let _ = writeln!(out, "{label}: {}", items.join(" | "));
        }
    }
    if let Some(p) = t.parent_id.as_deref() {
        let _ = writeln!(out, "parent: {}", tref_id(mem, p));
    }
    if !t.child_ids.is_empty() {
        let kids: Vec<String> = t.child_ids.iter().map(|c| tref_id(mem, c)).collect();
        let _ = writeln!(out, "children: {}", kids.join(", "));
    }
    let mut bridges: Vec<&ThinkBridge> = mem.graph.bridges_of(&t.id).collect();
    sort_bridges(&mut bridges);
    if bridges.is_empty() {
        out.push_str("bridges: none\n");
    } else {
        let _ = writeln!(out, "bridges ({}):", bridges.len());
        for b in bridges.iter().take(READ_BRIDGES) {
            let _ = writeln!(out, "- {}", bridge_line(mem, b));
        }
        if bridges.len() > READ_BRIDGES {
            let _ = writeln!(
                out,
                "({} more: LIST_BRIDGES with this thread_id lists them all)",
                bridges.len() - READ_BRIDGES
            );
        }
    }
    let n = t.messages.len();
    let skip = n.saturating_sub(READ_MESSAGES);
    if skip > 0 {
        let _ = writeln!(
            out,
            "messages, oldest first (the last {READ_MESSAGES} of {n}; {skip} older ones left out):"
        );
    } else {
        let _ = writeln!(out, "messages, oldest first ({n}):");
    }
    for m in &t.messages[skip..] {
        let kind = m
            .metadata
            .get("source_type")
            .and_then(Value::as_str)
            .map(|s| format!(" {}", one_line(s, 20)))
            .unwrap_or_default();
        let author = match m.source {
            Author::User => "user",
            Author::Assistant => "assistant",
        };
        let _ = writeln!(
            out,
            "[{} {author}{kind}] {}",
            ts(m.timestamp),
            one_line(&m.content, MESSAGE_CHARS)
        );
    }
    Ok(out)
}

pub(super) fn list_bridges(mem: &Memory, thread_id: Option<&str>) -> Result<String, ExecError> {
    let name = "LIST_BRIDGES";
    let (mut bridges, head): (Vec<&ThinkBridge>, String) = match thread_id {
        Some(id) => {
            let t = thread(mem, name, id)?;
            (
                mem.graph.bridges_of(id).collect(),
                format!("{name} of {}", tref(t)),
            )
        }
        None => (mem.graph.bridges().collect(), name.to_string()),
    };
    if bridges.is_empty() {
        return Ok(format!("{head}: no bridges\n"));
    }
    sort_bridges(&mut bridges);
    let mut out = format!(
        "{head}: {} (active and most confident first)\n",
        plural(bridges.len(), "bridge")
    );
    for b in bridges.iter().take(MAX_LIST_LINES) {
        let _ = writeln!(out, "- {}", bridge_line(mem, b));
    }
    left_out(&mut out, bridges.len(), "the weakest");
    Ok(out)
}

pub(super) fn list_rules(env: &ExecEnv) -> String {
    let name = "LIST_RULES";
    let rules = env.rules.rules();
    if rules.rules.is_empty() {
        return format!("{name}: no user rules\n");
    }
    let mut out = format!(
        "{name}: {} (REMOVE_RULE takes the number):\n",
        plural(rules.rules.len(), "user rule")
    );
    for (i, r) in rules.rules.iter().enumerate() {
        let _ = writeln!(out, "{}. {}", i + 1, one_line(r, 1_000));
    }
    out
}

/// The latest synthesis as READ_SYNTHESIS finds it: read from disk, so a caller holding the
/// memory's lock reads it first, without the lock ([`synthesis_answer`]).
pub type SynthesisRead = Result<Option<(PathBuf, Value)>, ai_smartness_store::StoreError>;

/// Reads the latest synthesis (file I/O: never under the memory's lock).
pub fn load_synthesis(env: &ExecEnv) -> SynthesisRead {
    read_latest_synthesis(&env.paths.db())
}

pub(super) fn read_synthesis(mem: &Memory, read: &SynthesisRead) -> Result<String, ExecError> {
    let name = "READ_SYNTHESIS";
    let (path, v) = match read {
        Ok(Some((path, v))) => (path, v),
        Ok(None) => {
            return Ok(format!(
                "{name}: no synthesis yet (one is written before each context compaction)\n"
            ))
        }
        Err(e) => {
            return Err(ExecError::SynthesisUnreadable {
                command: name,
                reason: e.to_string(),
            })
        }
    };
    let mut out = format!("{name}: synthesis of {}", synthesis_time(path, v));
    if let Some(g) = v.get("generator").and_then(Value::as_str) {
        let _ = write!(out, " (made by the {} generator)", one_line(g, 40));
    }
    out.push('\n');
    if !v.is_object() {
        let _ = writeln!(out, "{}", one_line(&v.to_string(), 4_000));
        return Ok(out);
    }
    if let Some(s) = v.get("summary").and_then(Value::as_str) {
        let _ = writeln!(out, "summary: {}", one_line(s, 1_000));
    }
    for (label, key) in [
        ("decisions made", "decisions_made"),
        ("open questions", "open_questions"),
        ("key insights", "key_insights"),
    ] {
        let items: Vec<String> = v
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|x| match x.as_str() {
                Some(s) => one_line(s, 400),
                None => one_line(&x.to_string(), 400),
            })
            .collect();
        if !items.is_empty() {
            let _ = writeln!(out, "{label}:");
            for i in items {
                let _ = writeln!(out, "- {i}");
            }
        }
    }
    let threads = v.get("threads").and_then(Value::as_array);
    if let Some(threads) = threads.filter(|t| !t.is_empty()) {
        out.push_str("threads:\n");
        for t in threads {
            let id = t.get("id").and_then(Value::as_str).unwrap_or("?");
            let title = t.get("title").and_then(Value::as_str).unwrap_or("");
            let named = match mem.graph.thread(id) {
                Some(now) if now.title == title => tref(now),
                Some(now) => format!("{} (then {:?})", tref(now), one_line(title, 120)),
                None => format!("{id} {:?} (no longer in memory)", one_line(title, 120)),
            };
            let summary = t.get("summary").and_then(Value::as_str).unwrap_or("");
            if summary.trim().is_empty() {
                let _ = writeln!(out, "- {named}");
            } else {
                let _ = writeln!(out, "- {named}: {}", one_line(summary, 300));
            }
        }
    }
    Ok(out)
}

pub(super) fn threads_in_period(
    mem: &Memory,
    env: &ExecEnv,
    cmd: &DataCommand,
    period: &Period,
) -> Result<String, ExecError> {
    let name = "THREADS_IN_PERIOD";
    cmd.check_kind(env.kind).map_err(ExecError::Refused)?;
    let range = period
        .resolve(env.reference, env.periods)
        .map_err(|error| ExecError::BadPeriod {
            command: name,
            error,
        })?;
    // (thread, messages in the period, first, last)
    let mut rows: Vec<(&Thread, usize, DateTime<Utc>, DateTime<Utc>)> = mem
        .graph
        .threads()
        .filter_map(|t| {
            let inside: Vec<DateTime<Utc>> = t
                .messages
                .iter()
                .map(|m| m.timestamp)
                .filter(|at| range.contains(*at))
                .collect();
            let first = inside.iter().min()?;
            let last = inside.iter().max()?;
            Some((t, inside.len(), *first, *last))
        })
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(b.3.cmp(&a.3)).then(a.0.id.cmp(&b.0.id)));
    let head = format!(
        "{name} {} = [{}, {})",
        period.to_value(),
        ts(range.start),
        ts(range.end)
    );
    if rows.is_empty() {
        return Ok(format!("{head}: no thread has a message in this period\n"));
    }
    let mut out = format!(
        "{head}: {}, the busiest first\n",
        plural(rows.len(), "thread")
    );
    for (t, n, first, last) in rows.iter().take(MAX_LIST_LINES) {
        let _ = write!(
            out,
            "- {} [{}]: {n} of {} in the period, {} to {}",
            tref(t),
            t.status.as_str(),
            plural(t.messages.len(), "message"),
            ts(*first),
            ts(*last)
        );
        let g = gist(t);
        if !g.is_empty() {
            let _ = write!(out, "; {g}");
        }
        out.push('\n');
    }
    left_out(&mut out, rows.len(), "the quietest");
    Ok(out)
}
