//! The LoCoMo data: conversations turned into timestamped turns, questions with their gold
//! evidence (as published, and as corrected by the audit), and the JSONL the product imports.
//!
//! Everything malformed fails loudly (a date we cannot read, a session without a date), except
//! the few gold evidence ids that are malformed in the published file: those are normalized when
//! the intent is unambiguous (`D:11:26` → `D11:26`, `D30:05` → `D30:5`, `"D8:6; D9:17"` → two
//! ids) and dropped when they name no turn of the conversation; every such case is counted and
//! reported, so the run says exactly what it scored against.

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// One dialogue turn, as imported.
#[derive(Debug, Clone)]
pub struct Turn {
    pub dia_id: String,
    /// `"Speaker: text"`: what the product stores and what the baselines index.
    pub content: String,
    pub at: DateTime<Utc>,
}

/// One question of categories 1 to 4 (adversarial questions have no answer to recall).
#[derive(Debug, Clone)]
pub struct Question {
    /// Index of the question in the conversation's `qa` list (0-based, as the audit counts).
    pub index: usize,
    pub text: String,
    /// 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop.
    pub category: u8,
    /// Gold evidence as published, normalized (may be empty: such a question is not scored).
    pub evidence: Vec<String>,
    /// Gold evidence after the audit's correction (the published one when the audit does not list
    /// the question; may be empty: then it is left out of the corrected view).
    pub corrected: Vec<String>,
    /// The gold answer as text (a number as its digits), for the answer-coverage check.
    pub answer: String,
}

#[derive(Debug, Clone)]
pub struct Conversation {
    pub sample_id: String,
    pub turns: Vec<Turn>,
    pub questions: Vec<Question>,
}

/// What was done to the gold evidence to make it usable; printed and written to the results.
#[derive(Debug, Default, Clone)]
pub struct EvidenceReport {
    /// Ids rewritten to their canonical form (`raw → canonical`).
    pub normalized: Vec<String>,
    /// Ids that name no turn of their conversation (`conversation/qa: raw`), dropped.
    pub dropped: Vec<String>,
    /// Questions of categories 1-4 left with no evidence (not scored).
    pub no_evidence: usize,
    /// Questions the audit corrects (`correct_evidence` differs from the cited one).
    pub corrected: usize,
    /// Audited questions whose corrected evidence is empty (left out of the corrected view).
    pub corrected_empty: usize,
}

/// The dataset folder: `$AI_BENCH_LOCOMO` (the folder, or the `locomo10.json` inside it), else
/// `../shared/bench/locomo/` next to the repository.
pub fn dataset_dir() -> PathBuf {
    match std::env::var_os("AI_BENCH_LOCOMO").filter(|v| !v.is_empty()) {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_file() {
                p.parent().map(Path::to_path_buf).unwrap_or_default()
            } else {
                p
            }
        }
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/bench/locomo"),
    }
}

/// Reads `locomo10.json` and `audit-errors.json` from `dir`.
pub fn load(dir: &Path) -> Result<(Vec<Conversation>, EvidenceReport), String> {
    let read = |name: &str| -> Result<Value, String> {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e} (set AI_BENCH_LOCOMO)", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    };
    let data = read("locomo10.json")?;
    let audit = read("audit-errors.json")?;
    let corrections = parse_audit(&audit)?;
    let mut report = EvidenceReport::default();
    let conversations = data
        .as_array()
        .ok_or("locomo10.json: expected a list of conversations")?
        .iter()
        .enumerate()
        .map(|(i, c)| parse_conversation(i, c, &corrections, &mut report))
        .collect::<Result<Vec<_>, _>>()?;
    report.corrected = corrections
        .iter()
        .filter(|(&(c, q), fix)| {
            conversations
                .get(c)
                .and_then(|conv| conv.questions.iter().find(|x| x.index == q))
                .is_some_and(|x| x.evidence != **fix)
        })
        .count();
    Ok((conversations, report))
}

/// `locomo_{conversation}_qa{question}` → corrected evidence.
fn parse_audit(audit: &Value) -> Result<HashMap<(usize, usize), Vec<String>>, String> {
    let mut out = HashMap::new();
    for entry in audit
        .as_array()
        .ok_or("audit-errors.json: expected a list")?
    {
        let id = entry["question_id"].as_str().unwrap_or_default();
        let parsed = id
            .strip_prefix("locomo_")
            .and_then(|rest| rest.split_once("_qa"))
            .and_then(|(c, q)| Some((c.parse().ok()?, q.parse().ok()?)));
        let key = parsed.ok_or_else(|| format!("audit-errors.json: bad question_id {id:?}"))?;
        let evidence = entry["correct_evidence"]
            .as_array()
            .ok_or_else(|| format!("audit-errors.json: {id} has no correct_evidence list"))?
            .iter()
            .filter_map(|e| e.as_str().map(str::to_string))
            .collect();
        out.insert(key, evidence);
    }
    Ok(out)
}

fn parse_conversation(
    index: usize,
    value: &Value,
    corrections: &HashMap<(usize, usize), Vec<String>>,
    report: &mut EvidenceReport,
) -> Result<Conversation, String> {
    let sample_id = value["sample_id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("conversation {index}"));
    let conv = value["conversation"]
        .as_object()
        .ok_or_else(|| format!("{sample_id}: no `conversation` object"))?;
    // Sessions by number (`session_10` comes after `session_9`). Some `session_N_date_time`
    // keys have no session: nothing was said that day, nothing to import.
    let sessions: BTreeMap<u32, &Vec<Value>> = conv
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    let mut turns = Vec::new();
    for (n, session) in sessions {
        let key = format!("session_{n}_date_time");
        let date = conv
            .get(&key)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{sample_id}: session {n} has no {key}"))?;
        let start = parse_session_date(date).map_err(|e| format!("{sample_id}/{key}: {e}"))?;
        for (i, turn) in session.iter().enumerate() {
            let field = |name: &str| {
                turn[name]
                    .as_str()
                    .ok_or_else(|| format!("{sample_id} session {n} turn {i}: no `{name}`"))
            };
            turns.push(Turn {
                dia_id: field("dia_id")?.to_string(),
                content: format!("{}: {}", field("speaker")?, field("text")?),
                // One minute apart, so timestamp order is conversation order (at most 47 turns
                // a session, and sessions are days apart).
                at: start + Duration::minutes(i as i64),
            });
        }
    }
    let known: HashSet<&str> = turns.iter().map(|t| t.dia_id.as_str()).collect();
    let mut questions = Vec::new();
    for (q, qa) in value["qa"]
        .as_array()
        .ok_or_else(|| format!("{sample_id}: no `qa` list"))?
        .iter()
        .enumerate()
    {
        let category = qa["category"].as_u64().unwrap_or(0) as u8;
        if !(1..=4).contains(&category) {
            continue;
        }
        let where_ = format!("{sample_id}/qa{q}");
        let raw: Vec<&str> = qa["evidence"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let evidence = normalize_evidence(&raw, &known, &where_, report);
        if evidence.is_empty() {
            report.no_evidence += 1;
        }
        let corrected = match corrections.get(&(index, q)) {
            Some(fixed) => {
                let fixed: Vec<&str> = fixed.iter().map(String::as_str).collect();
                let fixed =
                    normalize_evidence(&fixed, &known, &format!("{where_} (audit)"), report);
                if fixed.is_empty() {
                    report.corrected_empty += 1;
                }
                fixed
            }
            None => evidence.clone(),
        };
        questions.push(Question {
            index: q,
            text: qa["question"]
                .as_str()
                .ok_or_else(|| format!("{where_}: no question"))?
                .to_string(),
            category,
            evidence,
            corrected,
            answer: match &qa["answer"] {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            },
        });
    }
    Ok(Conversation {
        sample_id,
        turns,
        questions,
    })
}

/// Canonical dia_ids (`D<session>:<turn>`, no leading zeros) of the turns that exist, in order,
/// without duplicates. See the module comment for what is normalized and why.
fn normalize_evidence(
    raw: &[&str],
    known: &HashSet<&str>,
    where_: &str,
    report: &mut EvidenceReport,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for entry in raw {
        for piece in entry.split([';', ',', ' ']).filter(|p| !p.is_empty()) {
            let canonical = piece
                .strip_prefix('D')
                .map(|rest| rest.strip_prefix(':').unwrap_or(rest))
                .and_then(|rest| rest.split_once(':'))
                .and_then(|(s, t)| {
                    Some(format!(
                        "D{}:{}",
                        s.parse::<u32>().ok()?,
                        t.parse::<u32>().ok()?
                    ))
                });
            match canonical {
                Some(id) if known.contains(id.as_str()) => {
                    if id != *entry {
                        report
                            .normalized
                            .push(format!("{where_}: {entry:?} → {id}"));
                    }
                    if !out.contains(&id) {
                        out.push(id);
                    }
                }
                _ => report.dropped.push(format!("{where_}: {piece:?}")),
            }
        }
    }
    out
}

/// `"1:56 pm on 8 May, 2023"` → 2023-05-08T13:56:00Z (every session date of the file has this
/// shape, with one- or two-digit hours and days; anything else is an error).
pub fn parse_session_date(text: &str) -> Result<DateTime<Utc>, String> {
    NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y")
        .map(|naive| naive.and_utc())
        .map_err(|e| format!("unparsable session date {text:?}: {e}"))
}

/// The conversation in the `ai import` format, one capture a line.
pub fn import_jsonl(conversation: &Conversation) -> String {
    let mut out = String::new();
    for turn in &conversation.turns {
        let line = json!({
            "content": turn.content,
            "tool": "UserPrompt",
            "source": "user",
            "timestamp": turn.at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "metadata": {"dia_id": turn.dia_id},
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// Token cost of a text, as the product counts it (bytes / 4, rounded up).
pub fn tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// Checks the date parser on the shapes the file uses; run at start so a chrono change that
/// breaks them fails before anything is measured.
pub fn self_check() {
    for (text, expected) in [
        ("1:56 pm on 8 May, 2023", "2023-05-08T13:56:00Z"),
        ("10:37 am on 27 June, 2023", "2023-06-27T10:37:00Z"),
        ("12:09 am on 13 September, 2023", "2023-09-13T00:09:00Z"),
        ("12:30 pm on 1 January, 2024", "2024-01-01T12:30:00Z"),
    ] {
        let got = parse_session_date(text)
            .unwrap_or_else(|e| panic!("{e}"))
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        assert_eq!(got, expected, "parsing {text:?}");
    }
    let mut report = EvidenceReport::default();
    let known: HashSet<&str> = ["D11:26", "D30:5", "D8:6", "D9:17"].into();
    assert_eq!(
        normalize_evidence(
            &["D:11:26", "D30:05", "D8:6; D9:17", "D", "D4:36"],
            &known,
            "t",
            &mut report
        ),
        ["D11:26", "D30:5", "D8:6", "D9:17"]
    );
    assert_eq!(report.dropped.len(), 2);
}
