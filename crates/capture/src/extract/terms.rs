//! Term analysis: the tokens of a capture, classified and weighed.

use super::*;

/// What a term is; the order is the "upgrade" order when a term is seen in
/// several forms (`redis` then `Redis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Word,
    Dir,
    Tech,
    Ident,
    File,
}

impl Kind {
    pub(super) fn weight(self) -> f64 {
        match self {
            Kind::Word => 1.0,
            Kind::Dir => 1.5,
            Kind::Tech => 1.5,
            Kind::Ident => 2.5,
            Kind::File => 3.0,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Term {
    /// Lowercase form used in `subjects`.
    pub(super) subject: String,
    /// Display form (original case for identifiers / technical terms).
    pub(super) concept: String,
    pub(super) kind: Kind,
    pub(super) count: u32,
    /// Occurrences seen capitalised mid-sentence (or as an acronym).
    pub(super) caps: u32,
    pub(super) weight_sum: f64,
    pub(super) first: usize,
}

/// A pair of adjacent content words, possibly joined by a connector
/// ("error de conexión", "list of files").
#[derive(Debug, Clone, Default)]
pub(super) struct Pair {
    pub(super) count: u32,
    pub(super) connector: Option<&'static str>,
    /// Token index of the first occurrence.
    pub(super) first: usize,
}

/// Words that may sit between the two words of a pair.
pub(super) const CONNECTORS: &[&str] = &["of", "de", "du", "des", "del", "d"];

/// Tokens of the first sentence (or line) weigh more, up to this many:
/// prompts state their subject first and tool outputs start with the path
/// or command.
pub(super) const EARLY_TOKENS: usize = 25;
pub(super) const EARLY_BOOST: f64 = 2.0;

#[derive(Default)]
pub(super) struct Analysis {
    pub(super) terms: HashMap<String, Term>,
    /// Adjacent content-word pairs, in text order.
    pub(super) pairs: HashMap<(String, String), Pair>,
    /// File key → display location (`store/atomic.rs`).
    pub(super) locations: HashMap<String, String>,
    /// File stems seen in paths (`atomic` for `atomic.rs`).
    pub(super) stems: HashSet<String>,
    pub(super) lang_votes: [u32; 3],
    pub(super) tokens: usize,
}

impl Analysis {
    pub(super) fn add(&mut self, key: &str, subject: &str, concept: &str, kind: Kind, weight: f64) {
        let pos = self.tokens;
        match self.terms.get_mut(key) {
            Some(term) => {
                term.count += 1;
                term.weight_sum += weight;
                if kind == Kind::Tech {
                    term.caps += 1;
                }
                if kind > term.kind {
                    term.kind = kind;
                    term.subject = subject.to_string();
                    term.concept = concept.to_string();
                }
            }
            None => {
                self.terms.insert(
                    key.to_string(),
                    Term {
                        subject: subject.to_string(),
                        concept: concept.to_string(),
                        kind,
                        count: 1,
                        caps: u32::from(kind == Kind::Tech),
                        weight_sum: weight,
                        first: pos,
                    },
                );
            }
        }
    }

    pub(super) fn lang(&self) -> Lang {
        let [en, fr, es] = self.lang_votes;
        if fr > en && fr >= es {
            Lang::Fr
        } else if es > en && es > fr {
            Lang::Es
        } else {
            Lang::En
        }
    }
}

pub(super) fn analyse(text: &str) -> Analysis {
    let mut a = Analysis::default();
    let mut prev_word: Option<String> = None;
    let mut connector: Option<&'static str> = None;
    let mut last_end = 0usize;
    // The first sentence with at least 3 tokens gets the early boost; a
    // lone path or command line before it does not count as that sentence.
    let mut first_sentence = true;
    let mut sentence_tokens = 0usize;
    for m in TOKEN.find_iter(text) {
        let gap = &text[last_end..m.start()];
        last_end = m.end();
        if a.tokens > 0 && gap.contains(['\n', '.', '?', '!']) {
            if sentence_tokens >= 3 {
                first_sentence = false;
            }
            sentence_tokens = 0;
        }
        sentence_tokens += 1;
        if !gap.is_empty() && !gap.chars().all(|c| matches!(c, ' ' | '\t' | '\'' | '’')) {
            prev_word = None;
            connector = None;
        }
        let tok = m.as_str();
        vote_language(&mut a, tok);
        if prev_word.is_some() && connector.is_none() {
            let lower = tok.to_lowercase();
            if let Some(c) = CONNECTORS.iter().find(|c| **c == lower) {
                connector = Some(c);
                a.tokens += 1;
                continue;
            }
        }
        let boost = if first_sentence && a.tokens < EARLY_TOKENS {
            EARLY_BOOST
        } else {
            1.0
        };
        let sentence_start = is_sentence_start(text, m.start());
        let call = text[m.end()..].starts_with('(') && !is_definition(&text[..m.start()]);
        let word = classify(&mut a, tok, sentence_start, call, boost);
        a.tokens += 1;
        match word {
            Some(key) => {
                if let Some(prev) = prev_word.take() {
                    if prev != key {
                        let pair = a.pairs.entry((prev, key.clone())).or_default();
                        pair.count += 1;
                        if pair.count == 1 {
                            pair.connector = connector;
                            pair.first = a.tokens;
                        }
                    }
                }
                prev_word = Some(key);
            }
            None => prev_word = None,
        }
        connector = None;
    }
    settle_case(&mut a);
    merge_plurals(&mut a);
    a
}

/// A word capitalised only now and then ("Writes" after a comment marker)
/// is an ordinary word; one capitalised most of the time ("Redis") is a
/// technical term and keeps its case.
pub(super) fn settle_case(a: &mut Analysis) {
    for term in a.terms.values_mut() {
        if term.kind == Kind::Tech && term.caps * 2 < term.count {
            term.kind = Kind::Word;
            term.concept = term.subject.clone();
        }
    }
}

pub(super) fn vote_language(a: &mut Analysis, tok: &str) {
    if tok.len() > 9 {
        return;
    }
    let lower = tok.to_lowercase();
    let w = lower.as_str();
    if LANG_EN.contains(&w) {
        a.lang_votes[0] += 1;
    }
    if LANG_FR.contains(&w) {
        a.lang_votes[1] += 1;
    }
    if LANG_ES.contains(&w) {
        a.lang_votes[2] += 1;
    }
}

/// True when `before` ends with a definition keyword (`fn`, `def`, ...):
/// `fn write_atomic(` names a function, it does not call one.
pub(super) fn is_definition(before: &str) -> bool {
    let trimmed = before.trim_end();
    [
        "fn",
        "def",
        "function",
        "func",
        "class",
        "struct",
        "enum",
        "trait",
        "interface",
    ]
    .iter()
    .any(|kw| {
        trimmed.ends_with(kw)
            && trimmed[..trimmed.len() - kw.len()]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric() && c != '_')
    })
}

/// True when only whitespace separates `pos` from the start of the text
/// or from a sentence end / line break.
pub(super) fn is_sentence_start(text: &str, pos: usize) -> bool {
    for c in text[..pos].chars().rev() {
        if c == '\n' {
            return true;
        }
        // Whitespace and comment / list markers (`///`, `#`, `*`, `-`, `>`)
        // do not end the look-back.
        if c.is_whitespace() || matches!(c, '/' | '#' | '*' | '-' | '>') {
            continue;
        }
        return matches!(
            c,
            '.' | '!' | '?' | '¿' | '¡' | ':' | '"' | '\'' | '`' | '('
        );
    }
    true
}

/// Records one token; returns the term key when it is a plain content word
/// that can form a two-word topic with its neighbour. `call` is true when
/// the token is followed by `(`.
pub(super) fn classify(
    a: &mut Analysis,
    tok: &str,
    sentence_start: bool,
    call: bool,
    boost: f64,
) -> Option<String> {
    if tok.chars().count() > 64 {
        return None;
    }
    if tok.contains('/') {
        add_path(a, tok, boost);
        return None;
    }
    if tok.contains("::") {
        let segs: Vec<&str> = tok.split("::").collect();
        let last = segs.len().saturating_sub(1);
        for (i, seg) in segs.into_iter().enumerate() {
            classify_simple(a, seg, false, call && i == last, boost);
        }
        return None;
    }
    if tok.contains('.') {
        match tok.rsplit_once('.') {
            // `path.parent()`: the receiver is a local; the method is the topic.
            Some((_, method)) if call && !is_file_name(tok) => {
                classify_simple(a, method, false, true, boost);
            }
            _ => add_dotted(a, tok, boost),
        }
        return None;
    }
    if tok.contains('-') {
        let parts: Vec<&str> = tok.split('-').collect();
        let compound = parts.iter().all(|p| {
            p.chars().count() >= 2
                && !STOPWORDS.contains(p.to_lowercase().as_str())
                && !p.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !compound {
            for p in parts {
                classify_simple(a, p, false, false, boost);
            }
            return None;
        }
        let lower = tok.to_lowercase();
        a.add(&lower, &lower, tok, Kind::Word, Kind::Word.weight() * boost);
        return Some(lower);
    }
    classify_simple(a, tok, sentence_start, call, boost)
}

/// Plain token (no path / dotted / `::` structure). Identifiers used as
/// calls (`sync_all(`) weigh like words: calling std or helper functions
/// says less about the subject than naming things does.
pub(super) fn classify_simple(
    a: &mut Analysis,
    tok: &str,
    sentence_start: bool,
    call: bool,
    boost: f64,
) -> Option<String> {
    if tok.chars().take(MIN_TOPIC_CHARS).count() < MIN_TOPIC_CHARS {
        return None;
    }
    let lower = tok.to_lowercase();
    let ident_weight = if call {
        Kind::Word.weight()
    } else {
        Kind::Ident.weight()
    } * boost;
    if !is_topic_candidate(&lower) || STOPWORDS.contains(lower.as_str()) {
        return None;
    }
    let has_lower = tok.chars().any(char::is_lowercase);
    let has_upper = tok.chars().any(char::is_uppercase);
    if tok.contains('_') && tok.chars().any(char::is_alphabetic) {
        a.add(&lower, &lower, tok, Kind::Ident, ident_weight);
        return None;
    }
    if has_lower && tok.chars().skip(1).any(char::is_uppercase) {
        let subject = split_camel(tok);
        a.add(&lower, &subject, tok, Kind::Ident, ident_weight);
        return None;
    }
    if has_upper && !has_lower && tok.chars().any(char::is_alphabetic) {
        // Acronym / constant: API, JSON, TLS.
        a.add(&lower, &lower, tok, Kind::Tech, Kind::Tech.weight() * boost);
        return Some(lower);
    }
    let capitalised = tok.chars().next().is_some_and(char::is_uppercase);
    if capitalised && !sentence_start {
        a.add(&lower, &lower, tok, Kind::Tech, Kind::Tech.weight() * boost);
    } else {
        a.add(
            &lower,
            &lower,
            &lower,
            Kind::Word,
            Kind::Word.weight() * boost,
        );
    }
    Some(lower)
}

/// `src/store/atomic.rs` → file `atomic.rs` (location `store/atomic.rs`),
/// directory `store`, and the stem `atomic` as a weak word.
pub(super) fn add_path(a: &mut Analysis, tok: &str, boost: f64) {
    let comps: Vec<&str> = tok.split('/').filter(|c| !c.is_empty()).collect();
    let Some((&last, dirs)) = comps.split_last() else {
        return;
    };
    // Short parents (`db`, `ui`) still make a useful location, but only
    // meaningful ones become topics.
    let parent = dirs
        .last()
        .copied()
        .filter(|d| is_location_dir(d))
        .map(str::to_string);
    if is_file_name(last) {
        let key = last.to_lowercase();
        a.add(&key, &key, last, Kind::File, Kind::File.weight() * boost);
        let display = match &parent {
            Some(p) => format!("{p}/{last}"),
            None => last.to_string(),
        };
        a.locations.entry(key).or_insert(display);
        add_stem(a, last, boost);
    } else if is_meaningful_dir(last) {
        let key = last.to_lowercase();
        a.add(&key, &key, last, Kind::Dir, Kind::Dir.weight() * boost);
    }
    if let Some(p) = parent.filter(|p| is_meaningful_dir(p)) {
        let key = p.to_lowercase();
        a.add(&key, &key, &p, Kind::Dir, Kind::Dir.weight() * boost);
    }
}

pub(super) fn add_stem(a: &mut Analysis, file: &str, boost: f64) {
    let stem = file.split('.').next().unwrap_or("").to_lowercase();
    if stem.chars().count() >= MIN_TOPIC_CHARS
        && !GENERIC_STEMS.contains(&stem.as_str())
        && !STOPWORDS.contains(stem.as_str())
        && stem.chars().all(char::is_alphabetic)
    {
        a.add(&stem, &stem, &stem, Kind::Word, 0.75 * boost);
        a.stems.insert(stem);
    }
}

/// `atomic.rs` is a file; `serde_json.Value` / `self.store` are
/// identifiers; `1.2.3`, `e.g` are neither.
pub(super) fn add_dotted(a: &mut Analysis, tok: &str, boost: f64) {
    if is_file_name(tok) {
        let key = tok.to_lowercase();
        a.add(&key, &key, tok, Kind::File, Kind::File.weight() * boost);
        a.locations.entry(key).or_insert_with(|| tok.to_string());
        add_stem(a, tok, boost);
        return;
    }
    let trimmed = tok
        .strip_prefix("self.")
        .or_else(|| tok.strip_prefix("this."))
        .unwrap_or(tok);
    let parts: Vec<&str> = trimmed.split('.').collect();
    if parts
        .iter()
        .any(|p| p.chars().count() < 2 || p.chars().all(|c| c.is_ascii_digit()))
    {
        return;
    }
    if parts.len() == 1 {
        classify_simple(a, trimmed, false, false, boost);
        return;
    }
    let key = trimmed.to_lowercase();
    a.add(
        &key,
        &key,
        trimmed,
        Kind::Ident,
        Kind::Ident.weight() * boost,
    );
}

pub(super) fn is_file_name(name: &str) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && stem.chars().any(char::is_alphabetic)
        && FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
}

pub(super) fn is_location_dir(dir: &str) -> bool {
    dir.chars().count() >= 2
        && !GENERIC_DIRS.contains(&dir.to_lowercase().as_str())
        && !dir.starts_with('.')
        && dir
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
        && dir.chars().any(char::is_alphabetic)
}

pub(super) fn is_meaningful_dir(dir: &str) -> bool {
    let lower = dir.to_lowercase();
    dir.chars().count() >= MIN_TOPIC_CHARS
        && !GENERIC_DIRS.contains(&lower.as_str())
        && !dir.starts_with('.')
        && dir.chars().any(char::is_alphabetic)
        && !is_hexish(dir)
}

/// ≥ 3 chars, not a number, hash, UUID or hex literal.
pub(super) fn is_topic_candidate(lower: &str) -> bool {
    lower.chars().count() >= MIN_TOPIC_CHARS
        && lower.chars().any(char::is_alphabetic)
        && !(is_hexish(lower) && lower.chars().any(|c| c.is_ascii_digit()))
}

/// `AtomicWriter` → `atomic writer`, `parseHTTPHeader` → `parse http header`.
pub(super) fn split_camel(tok: &str) -> String {
    let chars: Vec<char> = tok.chars().collect();
    let mut out = String::with_capacity(tok.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && c.is_uppercase() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(' ');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Folds `writes` into `write` (or the reverse, keeping the more frequent
/// form) so plural and singular count as one topic.
pub(super) fn merge_plurals(a: &mut Analysis) {
    let plurals: Vec<String> = a
        .terms
        .iter()
        .filter(|(k, t)| {
            matches!(t.kind, Kind::Word | Kind::Tech) && k.ends_with('s') && k.chars().count() > 4
        })
        .map(|(k, _)| k.clone())
        .collect();
    let mut renamed: HashMap<String, String> = HashMap::new();
    for plural in plurals {
        let singular = plural[..plural.len() - 1].to_string();
        let (Some(p), Some(s)) = (a.terms.get(&plural), a.terms.get(&singular)) else {
            continue;
        };
        if !matches!(s.kind, Kind::Word | Kind::Tech) {
            continue;
        }
        let (keep, drop) = if p.count > s.count {
            (plural.clone(), singular)
        } else {
            (singular, plural.clone())
        };
        let Some(dropped) = a.terms.remove(&drop) else {
            continue;
        };
        if let Some(kept) = a.terms.get_mut(&keep) {
            kept.count += dropped.count;
            kept.weight_sum += dropped.weight_sum;
            kept.first = kept.first.min(dropped.first);
        }
        renamed.insert(drop, keep);
    }
    if renamed.is_empty() {
        return;
    }
    let pairs = std::mem::take(&mut a.pairs);
    for ((x, y), pair) in pairs {
        let x = renamed.get(&x).cloned().unwrap_or(x);
        let y = renamed.get(&y).cloned().unwrap_or(y);
        if x != y {
            let merged = a.pairs.entry((x, y)).or_default();
            if merged.count == 0 || pair.first < merged.first {
                merged.first = pair.first;
                merged.connector = pair.connector;
            }
            merged.count += pair.count;
        }
    }
}
