//! The memory's own questions to the model, their answers checked: an extraction, a coherence
//! score, a reactivation verdict, a synthesis, typed relations. Strict JSON parsing and the
//! corrective retry are the provider crate's ([`ai_smartness_llm::answers`]).

use ai_smartness_capture::extract::{
    Extraction, MAX_INTENT_CHARS, MAX_KEY_CONCEPTS, MAX_LIST_ITEMS, MAX_SUBJECTS,
};
use ai_smartness_core::memory::types::BridgeType;
use ai_smartness_llm::answers::{shaped, AnswerError};
use serde::Deserialize;
use serde_json::Value;

/// Longest summary kept from an extraction.
const MAX_SUMMARY: usize = 400;
/// Longest list item or title kept.
const MAX_ITEM: usize = 200;
/// Items kept per synthesis list.
const MAX_SYNTHESIS_ITEMS: usize = 8;

fn clean(s: &str, max: usize) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(max)
        .collect()
}

fn clean_list(items: Vec<String>, max_items: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        let i = clean(&i, MAX_ITEM);
        if !i.is_empty() && !out.contains(&i) {
            out.push(i);
        }
    }
    out.truncate(max_items);
    out
}

#[derive(Deserialize)]
struct RawExtraction {
    title: String,
    #[serde(default)]
    intent: String,
    summary: String,
    subjects: Vec<String>,
    #[serde(default)]
    questions: Vec<String>,
    #[serde(default)]
    decisions: Vec<String>,
    #[serde(default)]
    key_concepts: Vec<String>,
}

/// An extraction answer: `title`, `summary` and `subjects` required,
/// the other lists optional; every value bounded as the local extractor's are.
pub fn parse_extraction(text: &str) -> Result<Extraction, AnswerError> {
    let r: RawExtraction = shaped(text)?;
    let title = clean(&r.title, MAX_ITEM);
    if title.is_empty() {
        return Err(AnswerError::Shape("`title` is empty".into()));
    }
    let subjects: Vec<String> = clean_list(r.subjects, MAX_SUBJECTS)
        .into_iter()
        .map(|s| s.to_lowercase())
        .collect();
    if subjects.is_empty() {
        return Err(AnswerError::Shape("`subjects` is empty".into()));
    }
    Ok(Extraction {
        title,
        intent: clean(&r.intent, MAX_INTENT_CHARS),
        summary: clean(&r.summary, MAX_SUMMARY),
        subjects,
        questions: clean_list(r.questions, MAX_LIST_ITEMS),
        decisions: clean_list(r.decisions, MAX_LIST_ITEMS),
        key_concepts: clean_list(r.key_concepts, MAX_KEY_CONCEPTS),
    })
}

#[derive(Deserialize)]
struct RawScore {
    score: f64,
}

/// A coherence answer: `score` from 0 to 1.
pub fn parse_coherence(text: &str) -> Result<f64, AnswerError> {
    let r: RawScore = shaped(text)?;
    if !(0.0..=1.0).contains(&r.score) {
        return Err(AnswerError::Shape(format!(
            "`score` {} is not between 0 and 1",
            r.score
        )));
    }
    Ok(r.score)
}

#[derive(Deserialize)]
struct RawVerdict {
    related: bool,
}

/// A reactivation answer: `related`, a boolean.
pub fn parse_reactivation(text: &str) -> Result<bool, AnswerError> {
    Ok(shaped::<RawVerdict>(text)?.related)
}

/// The LLM part of a compaction synthesis.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Synthesis {
    /// Where the work stands.
    pub summary: String,
    /// Decisions made.
    pub decisions_made: Vec<String>,
    /// What is still open.
    pub open_questions: Vec<String>,
    /// What was learnt.
    pub key_insights: Vec<String>,
}

/// A synthesis answer: all four fields required, `summary` not empty.
pub fn parse_synthesis(text: &str) -> Result<Synthesis, AnswerError> {
    let r: Synthesis = shaped(text)?;
    let summary = clean(&r.summary, 2000);
    if summary.is_empty() {
        return Err(AnswerError::Shape("`summary` is empty".into()));
    }
    Ok(Synthesis {
        summary,
        decisions_made: clean_list(r.decisions_made, MAX_SYNTHESIS_ITEMS),
        open_questions: clean_list(r.open_questions, MAX_SYNTHESIS_ITEMS),
        key_insights: clean_list(r.key_insights, MAX_SYNTHESIS_ITEMS),
    })
}

/// The relation an LLM gave one pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// The pair's index, from 0.
    pub pair: usize,
    /// EXTENDS, DEPENDS, CONTRADICTS or REPLACES.
    pub relation: BridgeType,
    /// B is the subject (B depends on A, B replaces A): the bridge is read the other way.
    pub b_to_a: bool,
    /// Why, in a sentence.
    pub reason: String,
}

#[derive(Deserialize)]
struct RawRelations {
    /// Read item by item: one malformed item costs only itself.
    bridges: Vec<Value>,
}

/// One item of a relation-typing answer, as the model wrote it.
#[derive(Deserialize)]
struct RawRelation {
    pair: Option<usize>,
    relation: Option<String>,
    direction: Option<String>,
    reason: Option<String>,
}

/// A relation-typing answer for `pairs` pairs. The object must be `{"bridges": [...]}`; each
/// item that names an unknown pair, another type or direction is dropped (that bridge keeps its
/// type); the answer is refused only when no item is usable.
pub fn parse_relations(text: &str, pairs: usize) -> Result<Vec<Relation>, AnswerError> {
    let r: RawRelations = shaped(text)?;
    let mut out: Vec<Relation> = Vec::new();
    for item in r.bridges {
        let Ok(item) = RawRelation::deserialize(item) else {
            continue;
        };
        let pair = item.pair;
        let relation = item
            .relation
            .as_deref()
            .and_then(|s| BridgeType::parse(&s.trim().to_ascii_uppercase()));
        let b_to_a = match item.direction.as_deref().map(str::trim) {
            None | Some("A_TO_B") => Some(false),
            Some("B_TO_A") => Some(true),
            Some(_) => None,
        };
        let (Some(pair), Some(relation), Some(b_to_a)) = (pair, relation, b_to_a) else {
            continue;
        };
        let allowed = matches!(
            relation,
            BridgeType::Extends
                | BridgeType::Depends
                | BridgeType::Contradicts
                | BridgeType::Replaces
        );
        if pair == 0 || pair > pairs || !allowed || out.iter().any(|r| r.pair == pair - 1) {
            continue;
        }
        out.push(Relation {
            pair: pair - 1,
            relation,
            b_to_a,
            reason: clean(item.reason.as_deref().unwrap_or(""), MAX_ITEM),
        });
    }
    if out.is_empty() {
        return Err(AnswerError::Shape(format!(
            "no usable item in `bridges` (pairs 1 to {pairs}; relation EXTENDS, DEPENDS, \
             CONTRADICTS or REPLACES; direction A_TO_B or B_TO_A)"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extractions_need_their_fields_and_are_bounded() {
        let ok = r#"{"title": " Pool   timeouts ", "intent": "", "summary": "s",
            "subjects": ["Postgres", "pool", "pool", "", "a", "b", "c", "d", "e"],
            "questions": [], "decisions": ["raise it"], "key_concepts": ["max_connections"]}"#;
        let e = parse_extraction(ok).unwrap();
        assert_eq!(e.title, "Pool timeouts");
        assert_eq!(e.subjects.len(), MAX_SUBJECTS);
        assert_eq!(&e.subjects[..2], ["postgres", "pool"]);
        assert_eq!(e.key_concepts, ["max_connections"]);
        let missing = parse_extraction(r#"{"title": "x", "summary": "s"}"#).unwrap_err();
        assert!(missing.to_string().contains("subjects"), "{missing}");
        let wrong = parse_extraction(r#"{"title": 3, "summary": "s", "subjects": ["a"]}"#);
        assert!(matches!(wrong, Err(AnswerError::Shape(_))));
        assert!(parse_extraction(r#"{"title": " ", "summary": "", "subjects": ["a"]}"#).is_err());
    }

    #[test]
    fn verdicts_synthesis_and_relations() {
        assert_eq!(parse_coherence(r#"{"score": 0.8, "reason": "x"}"#), Ok(0.8));
        assert!(parse_coherence(r#"{"score": 1.5}"#).is_err());
        assert!(parse_coherence(r#"{"score": "high"}"#).is_err());
        assert_eq!(parse_reactivation(r#"{"related": false}"#), Ok(false));
        assert!(parse_reactivation(r#"{"related": "yes"}"#).is_err());
        let s = parse_synthesis(
            r#"{"summary": "Done.", "decisions_made": ["a"], "open_questions": [], "key_insights": []}"#,
        )
        .unwrap();
        assert_eq!((s.summary.as_str(), s.decisions_made.len()), ("Done.", 1));
        assert!(parse_synthesis(r#"{"summary": "Done."}"#).is_err());

        let r = parse_relations(
            r#"{"bridges": [
                {"pair": 1, "relation": "depends", "direction": "B_TO_A", "reason": "needs it"},
                {"pair": 2, "relation": "CHILD_OF"},
                {"pair": 3, "relation": "REPLACES", "direction": "sideways"},
                {"pair": 9, "relation": "EXTENDS"},
                {"pair": 1, "relation": "EXTENDS"}]}"#,
            3,
        )
        .unwrap();
        assert_eq!(
            r,
            vec![Relation {
                pair: 0,
                relation: BridgeType::Depends,
                b_to_a: true,
                reason: "needs it".into()
            }]
        );
        assert!(parse_relations(r#"{"bridges": [{"pair": 2, "relation": "NOPE"}]}"#, 3).is_err());
        assert!(parse_relations(r#"{"pairs": []}"#, 3).is_err());
    }
}
