//! Sentences: summary, questions, decisions, intent.

use super::*;

/// Splits into sentences: line breaks are hard boundaries, and `.`, `!`,
/// `?` followed by whitespace end a sentence. Comment markers and list
/// bullets are stripped so doc comments read as prose.
pub(super) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = strip_line_marker(line.trim());
        if line.is_empty() {
            continue;
        }
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            let ends = matches!(b, b'.' | b'!' | b'?')
                && bytes.get(i + 1).is_some_and(|n| n.is_ascii_whitespace());
            if ends {
                let s = line[start..=i].trim();
                if !s.is_empty() {
                    out.push(s.to_string());
                }
                start = i + 1;
            }
        }
        let rest = line[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_string());
        }
    }
    out
}

pub(super) fn strip_line_marker(line: &str) -> &str {
    let mut l = line;
    for marker in [
        "//!", "///", "//", "/**", "/*", "*/", "#", "*", "-", ">", "--", "•",
    ] {
        if let Some(rest) = l.strip_prefix(marker) {
            if rest.is_empty() || rest.starts_with(' ') {
                l = rest.trim_start();
                break;
            }
        }
    }
    l
}

pub(super) fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Prose, not code: enough words and mostly letters.
pub(super) fn is_prose(s: &str, min_words: usize) -> bool {
    if word_count(s) < min_words {
        return false;
    }
    let mut letters = 0usize;
    let mut visible = 0usize;
    for c in s.chars() {
        if c.is_whitespace() {
            continue;
        }
        visible += 1;
        if c.is_alphabetic() || matches!(c, ',' | '.' | '\'' | '’' | '?' | '!' | '¿' | '¡') {
            letters += 1;
        }
    }
    visible > 0 && letters * 100 >= visible * 80
}

/// Cuts `s` to `max` characters at a word boundary, adding `…`.
pub(super) fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let budget = max.saturating_sub(1);
    let end = s.char_indices().nth(budget).map_or(s.len(), |(i, _)| i);
    let cut = match s[..end].rfind(char::is_whitespace) {
        Some(i) if i > end / 2 => i,
        _ => end,
    };
    format!("{}…", s[..cut].trim_end_matches([' ', ',', ';', ':']))
}

pub(super) fn summary(sents: &[String], ranked: &[Candidate], parts: &TitleParts) -> String {
    let scores: HashMap<&str, f64> = ranked
        .iter()
        .filter(|c| c.parts.is_none())
        .map(|c| (c.key.as_str(), c.score))
        .collect();
    let mut scored: Vec<(usize, f64)> = Vec::new();
    for (i, s) in sents.iter().enumerate() {
        if !is_prose(s, 4) {
            continue;
        }
        let mut seen: HashSet<String> = HashSet::new();
        let mut total = 0.0;
        for w in s.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.')) {
            let w = w.trim_matches('.').to_lowercase();
            if let Some(sc) = scores.get(w.as_str()) {
                if seen.insert(w) {
                    total += sc;
                }
            }
        }
        let position = if scored.len() < 2 { 1.15 } else { 1.0 };
        let len_penalty = (word_count(s) as f64).sqrt();
        scored.push((i, total / len_penalty * position));
    }
    if scored.is_empty() {
        return fallback_summary(ranked, parts, sents);
    }
    let mut order = scored.clone();
    order.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let best = order[0].0;
    let mut chosen = vec![best];
    let best_len = sents[best].chars().count();
    if best_len < MAX_SUMMARY_CHARS / 2 {
        if let Some(&(second, _)) = order.iter().skip(1).find(|(i, sc)| {
            *sc > 0.0 && best_len + 1 + sents[*i].chars().count() <= MAX_SUMMARY_CHARS
        }) {
            chosen.push(second);
        }
    }
    chosen.sort_unstable();
    let joined = chosen
        .iter()
        .map(|&i| sents[i].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    shorten(&joined, MAX_SUMMARY_CHARS)
}

/// For code or lists with no prose: "<where>: <concepts>".
pub(super) fn fallback_summary(
    ranked: &[Candidate],
    parts: &TitleParts,
    sents: &[String],
) -> String {
    let concepts: Vec<String> = select_concepts(ranked)
        .into_iter()
        .filter(|c| Some(c) != parts.location.as_ref())
        .take(5)
        .collect();
    let text = match (&parts.location, concepts.is_empty()) {
        (Some(loc), false) => format!("{loc}: {}", concepts.join(", ")),
        (None, false) => concepts.join(", "),
        (Some(loc), true) => loc.clone(),
        (None, true) => sents.first().cloned().unwrap_or_default(),
    };
    shorten(&text, MAX_SUMMARY_CHARS)
}

pub(super) fn questions(sents: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sents {
        if out.len() >= MAX_LIST_ITEMS {
            break;
        }
        if s.ends_with('?') && is_prose(s, 3) {
            let q = shorten(s, MAX_SUMMARY_CHARS);
            if !out.contains(&q) {
                out.push(q);
            }
        }
    }
    out
}

pub(super) fn decisions(sents: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in sents {
        if out.len() >= MAX_LIST_ITEMS {
            break;
        }
        if s.ends_with('?') || !is_prose(s, 3) {
            continue;
        }
        if DECISION.is_match(s) {
            let d = shorten(s, MAX_SUMMARY_CHARS);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

pub(super) fn intent(sents: &[String]) -> String {
    sents
        .first()
        .map(|s| shorten(s, MAX_INTENT_CHARS))
        .unwrap_or_default()
}
