//! Ranking: terms and pairs scored, subjects and key concepts chosen.

use super::*;

#[derive(Debug, Clone)]
pub(super) struct Candidate {
    /// Term key, or `"a b"` for a pair.
    pub(super) key: String,
    pub(super) subject: String,
    pub(super) concept: String,
    pub(super) kind: Kind,
    /// Component keys for two-word topics.
    pub(super) parts: Option<(String, String)>,
    pub(super) score: f64,
    pub(super) first: usize,
}

/// Sub-linear frequency: the 10th mention adds less than the 2nd.
pub(super) fn tf_score(weight_sum: f64, count: u32) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let c = f64::from(count);
    weight_sum / c * (1.0 + c.ln())
}

/// Pairs seen at least this often become two-word topics.
pub(super) const PAIR_MIN_COUNT: u32 = 2;
pub(super) const PAIR_BOOST: f64 = 1.6;

pub(super) fn rank(a: &Analysis) -> Vec<Candidate> {
    // Occurrences explained by a repeated pair are credited to the pair.
    let mut absorbed: HashMap<&str, u32> = HashMap::new();
    let mut out: Vec<Candidate> = Vec::new();
    for ((x, y), pair) in &a.pairs {
        let n = pair.count;
        if n < PAIR_MIN_COUNT {
            continue;
        }
        let (Some(tx), Some(ty)) = (a.terms.get(x), a.terms.get(y)) else {
            continue;
        };
        *absorbed.entry(x.as_str()).or_insert(0) += n;
        *absorbed.entry(y.as_str()).or_insert(0) += n;
        let avg_weight = (tx.weight_sum / f64::from(tx.count.max(1))
            + ty.weight_sum / f64::from(ty.count.max(1)))
            / 2.0;
        let join = match pair.connector {
            Some("d") => "d'".to_string(),
            Some(c) => format!("{c} "),
            None => String::new(),
        };
        out.push(Candidate {
            key: format!("{x} {y}"),
            subject: format!("{} {join}{}", tx.subject, ty.subject),
            concept: format!("{} {join}{}", tx.concept, ty.concept),
            kind: Kind::Word,
            parts: Some((x.clone(), y.clone())),
            score: tf_score(avg_weight * f64::from(n), n) * PAIR_BOOST,
            first: tx.first.min(ty.first),
        });
    }
    for (key, t) in &a.terms {
        let taken = absorbed.get(key.as_str()).copied().unwrap_or(0);
        let left = t.count.saturating_sub(taken);
        if left == 0 {
            continue;
        }
        let avg = t.weight_sum / f64::from(t.count.max(1));
        out.push(Candidate {
            key: key.clone(),
            subject: t.subject.clone(),
            concept: t.concept.clone(),
            kind: t.kind,
            parts: None,
            score: tf_score(avg * f64::from(left), left),
            first: t.first,
        });
    }
    out.sort_by(|x, y| {
        y.score
            .total_cmp(&x.score)
            .then(x.first.cmp(&y.first))
            .then(x.key.cmp(&y.key))
    });
    out
}

/// Relative score below which weak topics stop being listed (once the
/// minimum of three is reached).
pub(super) const WEAK_TOPIC_RATIO: f64 = 0.25;

pub(super) fn select_subjects(ranked: &[Candidate]) -> Vec<String> {
    let top = ranked.first().map_or(0.0, |c| c.score);
    let mut out: Vec<String> = Vec::new();
    let mut covered: HashSet<&str> = HashSet::new();
    for c in ranked {
        if out.len() >= MAX_SUBJECTS {
            break;
        }
        if out.len() >= TITLE_MIN_WORDS && c.score < top * WEAK_TOPIC_RATIO {
            break;
        }
        if covered.contains(c.key.as_str()) || c.subject.chars().count() < MIN_TOPIC_CHARS {
            continue;
        }
        if out.iter().any(|s| s == &c.subject) {
            continue;
        }
        if let Some((x, y)) = &c.parts {
            covered.insert(x.as_str());
            covered.insert(y.as_str());
        }
        out.push(c.subject.clone());
    }
    out
}

pub(super) fn select_concepts(ranked: &[Candidate]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for c in ranked {
        if out.len() >= MAX_KEY_CONCEPTS {
            break;
        }
        if c.concept.chars().count() < MIN_TOPIC_CHARS {
            continue;
        }
        if seen.insert(c.concept.to_lowercase()) {
            out.push(c.concept.clone());
        }
    }
    out
}
