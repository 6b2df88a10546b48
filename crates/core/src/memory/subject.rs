//! What a thread is about now, and whether a capture is about the same thing.
//!
//! A thread's subject is judged from two things that follow its recent work, never from
//! everything it ever held (which would make a big thread similar to anything):
//!
//! - its **focus**, the moving average of its last messages' vectors (see
//!   [`super::engine::fold_focus`]), compared after removing what every message of the memory
//!   shares (the memory's mean vector: a project's boilerplate, a template, a chat's tone);
//! - its **profile**, the terms of its recent messages with weights that fade by a tenth at each
//!   new message: topics, and the folders of the files the work touches (`in:` terms). Terms are
//!   weighed by how few threads share them, so a project's name or a chat's speakers count for
//!   nothing.
//!
//! The score adds the centred cosine, half the topic agreement and the folder agreement; a
//! thread idle for long is less "now" (up to 0.2 off after a week), and the thread the previous
//! capture went to gets up to 0.3 while the work goes on (fading over half an hour). None of
//! these depend on a thread's size, so the bar to join a thread does not fall as it grows.

use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A capture joins the best active thread scoring above this.
pub const CONTINUE_BAR: f64 = 0.35;
/// A suspended thread must score above this to be woken by a capture.
pub const REACTIVATE_BAR: f64 = 0.50;
/// Two threads scoring above this against each other are one subject (consolidation merges
/// them): far above the bar to join, so only what is clearly the same is merged.
pub const MERGE_BAR: f64 = 0.90;
/// Weight of topic agreement in the score (the centred cosine weighs 1).
const TOPIC_WEIGHT: f64 = 0.5;
/// Weight of folder agreement: work on files of one folder tree is one piece of work.
const PLACE_WEIGHT: f64 = 1.0;
/// Most taken off for a thread idle for long...
const IDLE_PENALTY: f64 = 0.2;
/// ...reached after this many hours (a week), on a log scale.
const IDLE_SATURATION_HOURS: f64 = 168.0;
/// Most added for the thread the previous capture went to...
const CURRENT_BONUS: f64 = 0.3;
/// ...fading with this time constant (minutes) since that capture.
const CURRENT_BONUS_MINUTES: f64 = 30.0;
/// Each new message multiplies the weights of a thread's terms by this.
const PROFILE_FADE: f32 = 0.9;
/// Terms a profile keeps (the heaviest).
pub const MAX_PROFILE_TERMS: usize = 24;
/// Folders a capture contributes at most.
const MAX_PLACES: usize = 8;
/// Pseudo-count of the memory's mean vector: a memory of a few messages is barely centred
/// (its mean is mostly those messages themselves).
const BACKGROUND_PRIOR: f64 = 2.0;
/// Prefix of folder terms.
pub const PLACE_PREFIX: &str = "in:";

/// One term of a thread's profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileTerm {
    pub term: String,
    pub weight: f32,
}

/// Whether a word is filler.
pub fn is_filler(term: &str) -> bool {
    term.split_whitespace().all(ai_smartness_text::is_filler)
}

/// The folders a capture's files live in: every folder of every path it names (in its text or
/// its `file_path`), lowercase, the file name itself left out.
pub fn places(content: &str, file_path: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let candidates = file_path.into_iter().chain(
        content
            .split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '(' | ')' | ','))
            .filter(|w| w.contains('/')),
    );
    for path in candidates {
        if path.contains("//") || path.contains(['<', '>', '[', ']', '{', '}', '=', '|']) {
            continue; // a URL, markup, code
        }
        // `src/x.rs:12:fn` (grep output): the path ends at the first colon.
        let path = path.split(':').next().unwrap_or(path);
        let mut parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && !matches!(*p, "." | ".." | "~" | "*"))
            .collect();
        if parts
            .last()
            .is_some_and(|p| p.contains('.') || p.contains('*'))
        {
            parts.pop();
        }
        for p in parts {
            let path_like = p
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '@' | '+'));
            if p.chars().count() > 60 || !path_like || !p.chars().any(char::is_alphanumeric) {
                continue;
            }
            let p = p.to_lowercase();
            if !out.contains(&p) {
                out.push(p);
            }
        }
        if out.len() >= MAX_PLACES {
            break;
        }
    }
    out.truncate(MAX_PLACES);
    out
}

/// A title from a text when its terms say nothing distinctive: its first run of two to six
/// content words (no function word, filler or word of the conversation).
pub fn words_title(text: &str) -> Option<String> {
    let run = content_runs(limit_chars(text, PHRASE_SCAN_CHARS))
        .into_iter()
        .find(|r| r.len() >= 2)?;
    Some(title_case(&run[..run.len().min(6)].join(" ")))
}

/// A capture's terms: its topics (filler left out), then its folders as `in:` terms.
pub fn capture_terms(topics: &[String], places: &[String]) -> Vec<String> {
    let mut out: Vec<String> = topics.iter().filter(|t| !is_filler(t)).cloned().collect();
    for p in places {
        let t = format!("{PLACE_PREFIX}{p}");
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Adds a message's terms to a profile: old weights fade, the message's terms count one, the
/// heaviest [`MAX_PROFILE_TERMS`] stay (the newest first among equals).
pub fn fold_profile(profile: &mut Vec<ProfileTerm>, terms: &[String]) {
    for p in profile.iter_mut() {
        p.weight *= PROFILE_FADE;
    }
    // New terms go first, in the capture's own order (its most important first).
    let mut at = 0;
    for t in terms {
        match profile.iter_mut().find(|p| &p.term == t) {
            Some(p) => p.weight += 1.0,
            None => {
                profile.insert(
                    at,
                    ProfileTerm {
                        term: t.clone(),
                        weight: 1.0,
                    },
                );
                at += 1;
            }
        }
    }
    // Stable: among equal weights the newest (inserted first) stay.
    profile.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    profile.truncate(MAX_PROFILE_TERMS);
}

/// The profile a thread of an older store starts with: its topics, equally weighted.
pub fn profile_from_topics(topics: &[String]) -> Vec<ProfileTerm> {
    topics
        .iter()
        .filter(|t| !is_filler(t))
        .take(MAX_PROFILE_TERMS)
        .map(|t| ProfileTerm {
            term: t.clone(),
            weight: 1.0,
        })
        .collect()
}

/// The memory's mean vector, kept as a running sum: what every message shares.
#[derive(Debug, Default, Clone)]
pub struct Background {
    sum: Vec<f64>,
    n: usize,
}

impl Background {
    pub fn add(&mut self, v: &[f32]) {
        if v.is_empty() {
            return;
        }
        if self.sum.len() != v.len() {
            self.sum = vec![0.0; v.len()];
            self.n = 0;
        }
        for (s, x) in self.sum.iter_mut().zip(v) {
            *s += f64::from(*x);
        }
        self.n += 1;
    }

    /// The mean to take off, shrunk towards zero while the memory is small.
    pub fn mean(&self) -> Vec<f32> {
        let d = self.n as f64 + BACKGROUND_PRIOR;
        self.sum.iter().map(|s| (s / d) as f32).collect()
    }
}

/// The cosine of `a − mean` and `b − mean`.
pub fn centred_cosine(a: &[f32], b: &[f32], mean: &[f32]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..a.len() {
        let m = mean.get(i).copied().unwrap_or(0.0);
        let x = f64::from(a[i] - m);
        let y = f64::from(b[i] - m);
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na <= 0.0 || nb <= 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// How distinctive a term is: `ln((threads + 1) / (threads holding it + 1))`.
#[derive(Clone, Copy)]
pub struct Idf<'a> {
    pub df: &'a HashMap<String, u32>,
    pub threads: usize,
}

impl Idf<'_> {
    pub fn of(&self, term: &str) -> f64 {
        let df = self.df.get(term).copied().unwrap_or(0) as f64;
        ((self.threads as f64 + 1.0) / (df + 1.0)).ln().max(0.0)
    }

    /// For titles: the same, except in a memory of too few threads to tell common terms from
    /// distinctive ones, where every term keeps a weight (smoothed).
    fn for_title(&self, term: &str) -> f64 {
        if self.threads >= 3 {
            return self.of(term);
        }
        let df = self.df.get(term).copied().unwrap_or(0) as f64;
        (1.0 + (self.threads as f64 + 1.0) / (df + 1.0)).ln()
    }
}

/// The tf-idf cosine of two profiles over the terms `keep` selects.
fn profile_cosine(
    a: &[ProfileTerm],
    b: &[ProfileTerm],
    idf: Idf<'_>,
    keep: impl Fn(&str) -> bool,
) -> f64 {
    let (mut dot, mut na, mut nb) = (0.0f64, 0.0f64, 0.0f64);
    for p in a.iter().filter(|p| keep(&p.term)) {
        let w = idf.of(&p.term);
        let x = f64::from(p.weight) * w;
        na += x * x;
        if let Some(q) = b.iter().find(|q| q.term == p.term) {
            dot += x * f64::from(q.weight) * w;
        }
    }
    for q in b.iter().filter(|q| keep(&q.term)) {
        let y = f64::from(q.weight) * idf.of(&q.term);
        nb += y * y;
    }
    if na <= 0.0 || nb <= 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

fn is_place(term: &str) -> bool {
    term.starts_with(PLACE_PREFIX)
}

/// The parts of a capture's score against one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Affinity {
    /// Cosine of the capture and the thread's focus, both centred on the memory's mean.
    pub dense: f64,
    /// tf-idf agreement of the capture's topics with the thread's recent ones.
    pub topics: f64,
    /// tf-idf agreement of the folders.
    pub places: f64,
    /// Taken off for the time the thread has been idle.
    pub idle: f64,
    /// Added when the thread is the one the previous capture went to.
    pub current: f64,
    pub score: f64,
}

/// What is known of a capture when it is scored.
pub struct Probe<'a> {
    pub vector: Option<&'a [f32]>,
    pub terms: &'a [String],
    pub at: DateTime<Utc>,
}

/// What is known of a thread when it is scored.
pub struct Target<'a> {
    pub focus: Option<&'a QVec>,
    pub profile: &'a [ProfileTerm],
    pub last_active: DateTime<Utc>,
    /// The previous capture went to this thread.
    pub current: bool,
}

/// A capture ready to be scored against many threads: what depends on it alone is computed
/// once (its weights, its distance to the memory's mean), so each thread costs two passes over
/// its 8-bit focus and a look at its profile.
pub struct Scorer<'a> {
    probe: &'a Probe<'a>,
    idf: Idf<'a>,
    /// The capture's terms with their idf (a handful: a scan beats hashing every profile term).
    weights: Vec<(&'a str, f64)>,
    /// The capture, and the memory's mean as a unit vector with its length, in 8 bits: three
    /// integer dot products per thread.
    vector_q: Option<QVec>,
    mean_q: Option<(QVec, f64)>,
    /// Norms of the capture's topic and folder weights.
    topic_norm: f64,
    place_norm: f64,
    /// capture · mean, |capture − mean|², |mean|².
    a_m: f64,
    a_centred: f64,
    m2: f64,
}

impl<'a> Scorer<'a> {
    pub fn new(probe: &'a Probe<'a>, mean: &'a [f32], idf: Idf<'a>) -> Scorer<'a> {
        let mut weights: Vec<(&str, f64)> = Vec::new();
        let (mut topic_norm, mut place_norm) = (0.0, 0.0);
        for t in probe.terms {
            let w = idf.of(t);
            if !weights.iter().any(|(x, _)| x == t) {
                weights.push((t.as_str(), w));
                if is_place(t) {
                    place_norm += w * w;
                } else {
                    topic_norm += w * w;
                }
            }
        }
        let dot = |a: &[f32], b: &[f32]| -> f64 {
            a.iter()
                .zip(b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum()
        };
        let (a_m, a_centred, m2) = match probe.vector {
            Some(v) if v.len() == mean.len() => {
                let (am, aa, mm) = (dot(v, mean), dot(v, v), dot(mean, mean));
                (am, aa - 2.0 * am + mm, mm)
            }
            Some(v) => (0.0, dot(v, v), 0.0),
            None => (0.0, 0.0, 0.0),
        };
        let vector_q = probe.vector.map(QVec::from_unit);
        let mean_q = (m2 > 0.0).then(|| {
            let norm = m2.sqrt();
            let unit: Vec<f32> = mean.iter().map(|x| (f64::from(*x) / norm) as f32).collect();
            (QVec::from_unit(&unit), norm)
        });
        Scorer {
            probe,
            idf,
            weights,
            vector_q,
            mean_q,
            topic_norm: topic_norm.sqrt(),
            place_norm: place_norm.sqrt(),
            a_m,
            a_centred,
            m2,
        }
    }

    /// The centred cosine of the capture and a thread's 8-bit focus.
    fn dense(&self, focus: &QVec) -> f64 {
        let Some(a) = &self.vector_q else {
            return 0.0;
        };
        if focus.len() != a.len() {
            return 0.0;
        }
        let af = f64::from(a.cosine_q(focus));
        let ff = f64::from(focus.cosine_q(focus));
        let fm = match &self.mean_q {
            Some((m, norm)) if m.len() == focus.len() => f64::from(m.cosine_q(focus)) * norm,
            _ => 0.0,
        };
        let num = af - self.a_m - fm + self.m2;
        let f_centred = ff - 2.0 * fm + self.m2;
        if self.a_centred <= 1e-12 || f_centred <= 1e-12 {
            0.0
        } else {
            num / (self.a_centred.sqrt() * f_centred.sqrt())
        }
    }

    /// tf-idf cosines of the capture's topics and folders with a profile.
    fn terms(&self, profile: &[ProfileTerm]) -> (f64, f64) {
        let (mut topic_dot, mut place_dot) = (0.0, 0.0);
        for p in profile {
            let found = self
                .weights
                .iter()
                .find(|(t, _)| t.len() == p.term.len() && *t == p.term);
            if let Some((_, w)) = found {
                let x = f64::from(p.weight) * w * w;
                if is_place(&p.term) {
                    place_dot += x;
                } else {
                    topic_dot += x;
                }
            }
        }
        if topic_dot <= 0.0 && place_dot <= 0.0 {
            return (0.0, 0.0);
        }
        let (mut topic_norm, mut place_norm) = (0.0, 0.0);
        for p in profile {
            let y = f64::from(p.weight) * self.idf.of(&p.term);
            if is_place(&p.term) {
                place_norm += y * y;
            } else {
                topic_norm += y * y;
            }
        }
        let cos = |dot: f64, a: f64, b: f64| {
            if dot <= 0.0 || a <= 0.0 || b <= 0.0 {
                0.0
            } else {
                dot / (a * b.sqrt())
            }
        };
        (
            cos(topic_dot, self.topic_norm, topic_norm),
            cos(place_dot, self.place_norm, place_norm),
        )
    }

    /// The score against one thread.
    pub fn score(&self, target: &Target<'_>) -> Affinity {
        let dense = target.focus.map_or(0.0, |f| self.dense(f));
        let (topics, places) = self.terms(target.profile);
        let hours = (self.probe.at - target.last_active).num_seconds().max(0) as f64 / 3600.0;
        let idle = IDLE_PENALTY * (hours.ln_1p() / IDLE_SATURATION_HOURS.ln_1p()).min(1.0);
        let current = if target.current {
            CURRENT_BONUS * (-hours * 60.0 / CURRENT_BONUS_MINUTES).exp()
        } else {
            0.0
        };
        Affinity {
            dense,
            topics,
            places,
            idle,
            current,
            score: dense + TOPIC_WEIGHT * topics + PLACE_WEIGHT * places - idle + current,
        }
    }
}

/// The score of two threads against each other (no time terms): consolidation merges above
/// [`MERGE_BAR`].
pub fn thread_affinity(
    a: (Option<&QVec>, &[ProfileTerm]),
    b: (Option<&QVec>, &[ProfileTerm]),
    mean: &[f32],
    idf: Idf<'_>,
) -> f64 {
    let dense = match (a.0, b.0) {
        (Some(x), Some(y)) => centred_cosine(&x.to_f32(), &y.to_f32(), mean),
        _ => 0.0,
    };
    dense
        + TOPIC_WEIGHT * profile_cosine(a.1, b.1, idf, |t| !is_place(t))
        + PLACE_WEIGHT * profile_cosine(a.1, b.1, idf, is_place)
}

/// Longest key phrase a title takes from the material, in words.
const PHRASE_MAX_WORDS: usize = 4;
/// Characters of each text read for phrases: a title names what the work is about, which the
/// start of each message says; a 200 KB log's tail adds time, not subject.
const PHRASE_SCAN_CHARS: usize = 4_000;

/// A title for a thread: a phrase of 2 to 8 words that occurs in its material, naming what
/// distinguishes it from the other threads.
///
/// The profile's terms weigh the words (class-based tf-idf: recent and distinctive); the
/// candidate phrases are runs of 1 to 4 content words of `texts` (never across punctuation, a
/// function word or a word of the conversation such as "successfully" or "explore"), a phrase
/// scoring its words' weights times how often it recurs, and starting and ending on a weighed
/// word. The best phrase of two words or more is the title, written as the texts write it; a
/// single word takes a second phrase ("Liveness probe and ingest worker"). (The folders the
/// work is in are left out: the deepest common folder of a project's paths is the person's
/// home or checkout, which names nothing.) `taken` says
/// whether another active thread has a title already: the next phrase is tried, then two
/// joined. `None` when the material has no weighed phrase at all.
pub fn title(
    profile: &[ProfileTerm],
    idf: Idf<'_>,
    texts: &[&str],
    taken: impl Fn(&str) -> bool,
) -> Option<String> {
    let options = title_options(profile, idf, texts, true);
    let first = options.first().cloned()?;
    Some(options.into_iter().find(|t| !taken(t)).unwrap_or(first))
}

/// A thread's title: a phrase of what was `said` about the work (what the person asked, what
/// the assistant answered), which names it in people's words, when that holds one not taken;
/// else [`title`] over `texts`.
pub fn said_or_title(
    profile: &[ProfileTerm],
    idf: Idf<'_>,
    said: &[&str],
    texts: &[&str],
    taken: impl Fn(&str) -> bool,
) -> Option<String> {
    let from_said = if said.is_empty() {
        None
    } else {
        phrase_title(profile, idf, said, &taken)
    };
    from_said.or_else(|| title(profile, idf, texts, &taken))
}

/// A title from a phrase of two words or more of `texts` alone (no word joined to another),
/// not taken.
fn phrase_title(
    profile: &[ProfileTerm],
    idf: Idf<'_>,
    texts: &[&str],
    taken: impl Fn(&str) -> bool,
) -> Option<String> {
    title_options(profile, idf, texts, false)
        .into_iter()
        .find(|t| !taken(t))
}

/// The titles [`title`] chooses from, best first; `joins` adds those made of two joined.
fn title_options(
    profile: &[ProfileTerm],
    idf: Idf<'_>,
    texts: &[&str],
    joins: bool,
) -> Vec<String> {
    let weights = word_weights(profile, idf);
    if weights.is_empty() {
        return Vec::new();
    }
    let phrases = ranked_phrases(&weights, texts);
    let first_score = phrases.first().map_or(0.0, |p| p.score);
    let mut options: Vec<String> = Vec::new();
    let multi: Vec<&Phrase> = phrases.iter().filter(|p| p.words >= 2).collect();
    let single: Vec<&Phrase> = phrases.iter().filter(|p| p.words == 1).collect();
    // A phrase far weaker than the best single word would name a side subject.
    let strong_multi: Vec<&Phrase> = multi
        .iter()
        .copied()
        .filter(|p| p.score >= 0.25 * first_score)
        .collect();
    for p in strong_multi.iter().take(3) {
        options.push(title_case(&p.text));
    }
    if !joins {
        options.retain(|t| (2..=8).contains(&words(t)));
        return options;
    }
    if let Some(w) = single.first() {
        let head = title_case(&w.text);
        for other in phrases
            .iter()
            .filter(|o| !shares_word(&o.text, &w.text))
            .take(2)
        {
            if words(&head) + words(&other.text) < 8 {
                options.push(format!("{head} and {}", other.text));
            }
        }
    }
    // Two phrases joined, for when every single one is taken.
    if let [a, b, ..] = strong_multi.as_slice() {
        if !shares_word(&a.text, &b.text) && a.words + b.words < 8 {
            options.push(format!("{} and {}", title_case(&a.text), b.text));
        }
    }
    options.retain(|t| (2..=8).contains(&words(t)));
    options
}

/// Each weighed word of a profile, lowercase: the weight of the heaviest term holding it, and
/// for a term of several words ("named temp file"), its letters run together too, so the
/// identifier it came from ("NamedTempFile") is found in the text.
fn word_weights(profile: &[ProfileTerm], idf: Idf<'_>) -> HashMap<String, f64> {
    let mut out: HashMap<String, f64> = HashMap::new();
    let mut put = |key: String, w: f64| {
        let slot = out.entry(key).or_insert(0.0);
        *slot = slot.max(w);
    };
    for p in profile {
        if is_place(&p.term) || is_filler(&p.term) {
            continue;
        }
        let w = f64::from(p.weight) * idf.for_title(&p.term);
        if w <= 0.0 {
            continue;
        }
        let parts: Vec<&str> = p.term.split_whitespace().collect();
        for part in &parts {
            if ai_smartness_text::is_subject_word(part) {
                put(part.to_string(), w);
            }
        }
        if parts.len() > 1 {
            put(compact(&p.term), w);
        }
    }
    out
}

/// A candidate phrase of a thread's material.
#[derive(Debug)]
struct Phrase {
    /// As the texts first write it.
    text: String,
    words: usize,
    score: f64,
}

/// The phrases of `texts` made of weighed words, best first.
fn ranked_phrases(weights: &HashMap<String, f64>, texts: &[&str]) -> Vec<Phrase> {
    // Lowercase phrase → (first spelling, occurrences, summed word weights, words).
    let mut seen: HashMap<String, (String, u32, f64, usize)> = HashMap::new();
    for text in texts {
        let text = limit_chars(text, PHRASE_SCAN_CHARS);
        for run in content_runs(text) {
            let w: Vec<f64> = run.iter().map(|t| token_weight(weights, t)).collect();
            for start in 0..run.len() {
                if w[start] <= 0.0 {
                    continue;
                }
                let mut sum = 0.0;
                for end in start..run.len().min(start + PHRASE_MAX_WORDS) {
                    sum += w[end];
                    let words = &run[start..=end];
                    // A word said twice ("Error instanceof Error", "Scenes scenes") is a line of
                    // code or a stutter, not a name; so is every longer phrase holding it.
                    if repeats_a_word(words) {
                        break;
                    }
                    if w[end] <= 0.0 {
                        continue;
                    }
                    let key = words.join(" ").to_lowercase();
                    let slot = seen
                        .entry(key)
                        .or_insert_with(|| (words.join(" "), 0, sum, words.len()));
                    slot.1 += 1;
                }
            }
        }
    }
    let mut out: Vec<Phrase> = seen
        .into_values()
        .map(|(text, n, sum, words)| Phrase {
            text,
            words,
            // A phrase the material repeats names its subject; the log keeps one repeat from
            // outweighing a heavier phrase.
            score: sum * (1.0 + f64::from(n).ln()),
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.words.cmp(&b.words))
            .then_with(|| a.text.cmp(&b.text))
    });
    // A phrase inside a better one adds nothing.
    let mut kept: Vec<Phrase> = Vec::new();
    for p in out {
        let lower = p.text.to_lowercase();
        if kept
            .iter()
            .any(|k| contains_words(&k.text.to_lowercase(), &lower))
        {
            continue;
        }
        kept.push(p);
        if kept.len() >= 12 {
            break;
        }
    }
    kept
}

/// A token's weight: its own, its file name's stem ("filters" of `src/lib/filters.ts`), or,
/// for an identifier, its letters run together.
fn token_weight(weights: &HashMap<String, f64>, token: &str) -> f64 {
    let lower = token.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let stem = name.split('.').next().unwrap_or(name);
    [lower.as_str(), name, stem]
        .iter()
        .filter_map(|k| weights.get(*k))
        .copied()
        .chain(weights.get(&compact(&lower)).copied())
        .fold(0.0, f64::max)
}

/// Runs of content words: a text's tokens, cut at punctuation, line ends, function words and
/// words of the conversation.
fn content_runs(text: &str) -> Vec<Vec<&str>> {
    let mut runs = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let is_token_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '#');
    let mut rest = text;
    while !rest.is_empty() {
        let start = rest.find(is_token_char).unwrap_or(rest.len());
        let gap = &rest[..start];
        // Punctuation or a line end between two words ends a run; spaces and quoting do not.
        let breaks = gap
            .chars()
            .any(|c| !matches!(c, ' ' | '\t' | '`' | '*' | '\'' | '"'));
        if breaks && !run.is_empty() {
            runs.push(std::mem::take(&mut run));
        }
        rest = &rest[start..];
        let end = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
        let raw = &rest[..end];
        rest = &rest[end..];
        // A sentence's full stop or a path's leading dot is not part of the word.
        let token = raw.trim_matches(|c: char| matches!(c, '.' | '-' | '/' | '#'));
        let ends_sentence = raw.ends_with('.') && !token.is_empty();
        let lower = token.to_lowercase();
        // A markup tag's name (`<command-name>`) is the format's, not the subject's.
        let tag = gap.ends_with('<');
        if tag
            || token.is_empty()
            || token.chars().count() > 40
            || !ai_smartness_text::is_subject_word(&lower)
        {
            if !run.is_empty() {
                runs.push(std::mem::take(&mut run));
            }
            continue;
        }
        run.push(token);
        if ends_sentence {
            runs.push(std::mem::take(&mut run));
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// What two titles that read as the same share ("Soundscape URL", "soundscape URLs"): their
/// words' stems, lowercase. Titles are kept distinct by this key.
pub fn title_key(title: &str) -> String {
    title
        .split_whitespace()
        .map(|w| crate::retrieve::index::stem(&w.to_lowercase()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the last of `words` is one of those before it (any case).
fn repeats_a_word(words: &[&str]) -> bool {
    match words.split_last() {
        Some((last, before)) => before.iter().any(|w| w.eq_ignore_ascii_case(last)),
        None => false,
    }
}

/// Whether `outer` holds `inner` as whole words.
fn contains_words(outer: &str, inner: &str) -> bool {
    format!(" {outer} ").contains(&format!(" {inner} "))
}

fn shares_word(a: &str, b: &str) -> bool {
    let a = a.to_lowercase();
    let b = b.to_lowercase();
    a.split_whitespace()
        .any(|w| b.split_whitespace().any(|x| x == w))
}

/// The first letter raised, unless the first word is an identifier (`just_audio`, `go.mod`,
/// `mcpServer`) that must stay as written. A phrase in capitals throughout, with a word too
/// long for an acronym ("AUDIO ENGINE", a heading's), is written as a person writes a title.
fn title_case(phrase: &str) -> String {
    let mut letters = phrase.chars().filter(|c| c.is_alphabetic()).peekable();
    let capitals = letters.peek().is_some() && letters.all(char::is_uppercase);
    let not_an_acronym = phrase
        .split_whitespace()
        .any(|w| w.chars().filter(|c| c.is_alphabetic()).count() > MAX_ACRONYM_LETTERS);
    if capitals && not_an_acronym {
        return capitalize(&phrase.to_lowercase());
    }
    let first = phrase.split_whitespace().next().unwrap_or("");
    let identifier =
        first.contains(['_', '.', '/']) || first.chars().skip(1).any(char::is_uppercase);
    if identifier {
        phrase.to_string()
    } else {
        capitalize(phrase)
    }
}

/// Letters of the longest word in capitals read as an acronym (`HTTPS`, `OAUTH`).
const MAX_ACRONYM_LETTERS: usize = 5;

fn limit_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// A term's letters and digits, lowercase, nothing else.
fn compact(term: &str) -> String {
    term.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn words(s: &str) -> usize {
    s.split_whitespace().count()
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_heading_in_capitals_is_written_as_a_title() {
        assert_eq!(title_case("AUDIO ENGINE"), "Audio engine");
        assert_eq!(title_case("REST API"), "REST API");
        assert_eq!(
            title_case("HTTPS certificate pinning"),
            "HTTPS certificate pinning"
        );
        assert_eq!(title_case("just_audio background"), "just_audio background");
        assert_eq!(title_case("pool timeouts"), "Pool timeouts");
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn places_are_the_folders_of_the_paths_named() {
        let p = places(
            "$ grep -rn 'pub fn' tempfile-3.27.0/src | head\ntempfile-3.27.0/src/dir/mod.rs:12: pub fn x() https://docs.rs/a/b",
            Some("/root/p/README.md"),
        );
        assert_eq!(p, s(&["root", "p", "tempfile-3.27.0", "src", "dir"]));
        assert!(places("no paths here", None).is_empty());
    }

    #[test]
    fn a_profile_follows_recent_terms() {
        let mut p = Vec::new();
        fold_profile(&mut p, &s(&["pool", "timeout"]));
        for _ in 0..30 {
            fold_profile(&mut p, &s(&["cache"]));
        }
        assert_eq!(p[0].term, "cache");
        let pool = p.iter().find(|x| x.term == "pool").unwrap();
        assert!(pool.weight < 0.1, "old focus fades: {}", pool.weight);
        for i in 0..40 {
            fold_profile(&mut p, &[format!("t{i}")]);
        }
        assert!(p.len() <= MAX_PROFILE_TERMS);
    }

    #[test]
    fn common_terms_count_for_nothing_and_distinctive_ones_decide() {
        let mut df = HashMap::new();
        df.insert("project".to_string(), 10);
        df.insert("pool".to_string(), 1);
        let idf = Idf {
            df: &df,
            threads: 10,
        };
        let profile = profile_from_topics(&s(&["project", "pool"]));
        let at = Utc::now();
        let probe = |terms: &[String]| {
            let p = Probe {
                vector: None,
                terms,
                at,
            };
            let t = Target {
                focus: None,
                profile: &profile,
                last_active: at,
                current: false,
            };
            Scorer::new(&p, &[], idf).score(&t)
        };
        assert_eq!(probe(&s(&["project", "other"])).topics, 0.0);
        assert!(probe(&s(&["pool", "other"])).topics > 0.5);
    }

    #[test]
    fn the_template_a_memory_shares_is_taken_off_the_cosine() {
        let template = [1.0f32, 0.0, 0.0];
        let a = [0.8f32, 0.6, 0.0];
        let b = [0.8f32, 0.0, 0.6];
        let raw = centred_cosine(&a, &b, &[0.0; 3]);
        let centred = centred_cosine(&a, &b, &template.map(|x| x * 0.8));
        assert!(raw > 0.6 && centred.abs() < 1e-6, "{raw} {centred}");
    }

    #[test]
    fn titles_are_phrases_of_the_material_and_stay_distinct() {
        let mut df = HashMap::new();
        for (t, n) in [("jon", 9), ("timeout", 2), ("in:src", 9)] {
            df.insert(t.to_string(), n);
        }
        df.insert("in:deploy".into(), 1);
        let idf = Idf {
            df: &df,
            threads: 10,
        };
        let texts = [
            "Perfect! Successfully raised the liveness probe timeout of the ingest worker to 10s.",
            "Let me explore the chart. The liveness probe timeout was 3s; the ingest worker \
             restarts when the liveness probe timeout is hit.",
        ];
        let mut profile = profile_from_topics(&s(&[
            "liveness probe",
            "timeout",
            "ingest worker",
            "successfully",
            "jon",
        ]));
        let t = title(&profile, idf, &texts, |_| false).unwrap();
        assert_eq!(t, "Liveness probe timeout");
        // Taken by another thread: the next phrase of the material, never a comma list.
        let other = title(&profile, idf, &texts, |t| t == "Liveness probe timeout").unwrap();
        assert_eq!(other, "Ingest worker");
        for t in [&t, &other] {
            assert!(!t.contains(','), "{t}");
            for w in ["perfect", "successfully", "explore", "let"] {
                assert!(!t.to_lowercase().contains(w), "{t}");
            }
        }
        // Folders are not subjects.
        profile.push(ProfileTerm {
            term: "in:deploy".into(),
            weight: 3.0,
        });
        assert_eq!(
            title(&profile, idf, &texts, |_| false).unwrap(),
            "Liveness probe timeout"
        );
        // Nothing weighed in the material: no title from it.
        assert!(title(
            &profile_from_topics(&s(&["jon", "wow"])),
            idf,
            &texts,
            |_| false
        )
        .is_none());
        assert!(title(&profile, idf, &[], |_| false).is_none());
        // A name split by the extractor is written as the texts write it.
        let named = profile_from_topics(&s(&["postgre sql", "pool"]));
        assert_eq!(
            title(&named, idf, &["The PostgreSQL pool times out"], |_| false).unwrap(),
            "PostgreSQL pool"
        );
        assert_eq!(
            words_title("Now let me check the specific file.\nThe retry budget of uploads")
                .unwrap(),
            "Retry budget"
        );
        assert!(words_title("Wow, cool! Perfect, done.").is_none());
    }

    /// Titles that differ by case or a plural read as the same: another thread's title is taken.
    #[test]
    fn titles_that_read_the_same_share_a_key() {
        assert_eq!(title_key("Soundscape URL"), title_key("soundscape URLs"));
        assert_ne!(title_key("Soundscape URL"), title_key("Soundscape player"));
    }

    /// A phrase that says a word twice is code or a stutter: the title is another phrase.
    #[test]
    fn a_title_never_says_a_word_twice() {
        let df = HashMap::new();
        let idf = Idf {
            df: &df,
            threads: 10,
        };
        let profile = profile_from_topics(&s(&["scenes", "narration volume", "error"]));
        let texts = [
            "Scenes scenes: the narration volume slider of each scene",
            "Scenes scenes, in lib/scenes.dart",
            "Scenes scenes again",
            "if (error instanceof Error) { log(error) }. The narration volume is kept per scene.",
        ];
        let t = title(&profile, idf, &texts, |_| false).unwrap();
        let lower: Vec<String> = t.split_whitespace().map(str::to_lowercase).collect();
        let distinct: std::collections::HashSet<&String> = lower.iter().collect();
        assert_eq!(distinct.len(), lower.len(), "{t}");
    }

    /// The words people said are read first for a phrase; never a word joined to another.
    #[test]
    fn a_phrase_title_comes_only_from_a_phrase_and_claims_are_not_subjects() {
        let df = HashMap::new();
        let idf = Idf {
            df: &df,
            threads: 10,
        };
        let profile = profile_from_topics(&s(&[
            "pool size",
            "billing service",
            "record",
            "comprehensive",
        ]));
        let said = ["Raise the pool size of the billing service to 40, please."];
        let first = phrase_title(&profile, idf, &said, |_| false).unwrap();
        let phrases = ["Pool size", "Billing service"];
        assert!(phrases.contains(&first.as_str()), "{first}");
        // Taken, the next phrase; all taken, nothing (the caller reads the rest).
        let next = phrase_title(&profile, idf, &said, |t| t == first).unwrap();
        assert!(phrases.contains(&next.as_str()) && next != first, "{next}");
        assert!(phrase_title(&profile, idf, &said, |_| true).is_none());
        // A single weighed word is no phrase title, where `title` would join it to another.
        assert!(phrase_title(&profile, idf, &["record: 4 rows"], |_| false).is_none());
        // A quality the assistant claims names nothing.
        let claimed = ["A comprehensive record test", "comprehensive record"];
        let t = title(&profile, idf, &claimed, |_| false).unwrap_or_default();
        assert!(!t.to_lowercase().contains("comprehensive"), "{t}");
    }
}
