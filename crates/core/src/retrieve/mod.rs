//! Retrieval: which stored memory is relevant to a prompt, packed into a token budget with the
//! provenance of every message it quotes.
//!
//! 1. **Messages** are scored by a hybrid of their own embedding (cosine with the query) and
//!    BM25 over their text (as a fraction of the query matched). The query's embedding reads
//!    the query without the words most messages share (pooled from one pass of the model over
//!    the query: [`ai_smartness_vectors::Embedder::embed_focused`]).
//!    The BM25 side also matches, at a fraction, the memory's words closest to the query's
//!    ([`related`]): "instruments" finds "violin". A message whose label the question names
//!    (`Caroline: …` for "What did Caroline paint?") gains a fixed [`LABEL_GAIN`]; so do the
//!    person's own words when the question asks what "I" said ([`person`]), and what was said
//!    that gives a cause when it asks why ([`cause`]), and a preference the person stated when
//!    it asks for advice ([`preference`]).
//! 2. **Threads** are seeded by their best message, the original text-to-thread similarity (centroid and
//!    topics) and a little weight; the 5 best seeds expand through bridges (BFS, depth 2, at
//!    most 20 threads), a neighbour scoring its parent's score × bridge confidence × bridge
//!    weight, halved per hop.
//! 3. A message's final score is its own relevance plus shares of its neighbours' (the messages
//!    said just before and after it), of the best message of its *episode* (what was said in
//!    the same sitting, see [`timeline`]) and of its thread's score: an answer rises with its
//!    question, a fact with the exchange it belongs to, and with the topic it was filed under.
//! 4. The best messages are packed greedily into the budget, grouped by thread in a compact
//!    encoding (a header per thread, one line per message); long messages are cut around the
//!    terms they share with the question, in a short window past the first few, and from the
//!    first when the question asks for a stretch of the work ([`span`]: "how did it progress?").
//!
//! The ranking (steps 1-3) is cached per query text, for as long as the memory does not change.

mod arena;
mod cause;
mod gate;
pub mod index;
mod order;
mod pack;
mod past;
mod person;
mod phrase;
mod preference;
mod rank;
pub mod recall;
pub mod related;
mod span;
pub mod table;
pub mod timeline;

use crate::memory::engine::Memory;
use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use gate::*;
pub use pack::*;
pub use rank::*;

/// Characters per token, for budgets (tokens counted as characters / 4).
pub const CHARS_PER_TOKEN: usize = 4;

/// What the embedder makes of a query, before the memory is locked.
#[derive(Debug, Clone, Default)]
pub struct QueryVectors {
    /// Unit vector: the query without its common words when it has some, else as written;
    /// empty when embedding failed.
    pub embedding: Vec<f32>,
    /// The query's words to expand ([`related::query_words`]) by stem, with each word's own
    /// embedding.
    pub words: Vec<(String, QVec)>,
}

impl QueryVectors {
    /// The stems of [`QueryVectors::words`], in their order.
    pub fn stems(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(|(stem, _)| stem.as_str())
    }
}

/// An embedding alone: no related words.
impl From<Vec<f32>> for QueryVectors {
    fn from(embedding: Vec<f32>) -> Self {
        QueryVectors {
            embedding,
            words: Vec::new(),
        }
    }
}

/// What is being looked for.
#[derive(Debug, Clone)]
pub struct Query {
    pub text: String,
    /// Unit vector; empty when embedding failed (lexical and topics still work).
    pub embedding: Vec<f32>,
    /// See [`QueryVectors::words`]; empty: no related words.
    pub words: Vec<(String, QVec)>,
    pub topics: Vec<String>,
}

impl Query {
    /// The stems of [`Query::words`], in their order.
    pub fn stems(&self) -> impl Iterator<Item = &str> {
        self.words.iter().map(|(stem, _)| stem.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub budget_tokens: usize,
    /// Threads shown at most.
    pub max_threads: usize,
    /// Messages scoring below this are never injected: "nothing relevant" means nothing.
    pub min_relevance: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadHit {
    pub id: String,
    pub title: String,
    pub score: f64,
}

/// A stored unit whose text (whole or in part) is in the context.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MessageRef {
    pub thread_id: String,
    pub message_id: String,
    /// Which unit of the message (0 for a message of one unit).
    #[serde(default)]
    pub part: u32,
    pub metadata: Map<String, Value>,
    /// Why it was included: its score and what made it.
    pub why: Why,
}

/// What a message's score is made of (see the module doc): its own relevance (`dense`,
/// `lexical`, `label`) and the shares it inherits (`neighbour`, `episode`), each as added to
/// `score`; and its thread's score, for the explanation.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Why {
    pub score: f32,
    /// Cosine of the message's embedding with the query's (its thread's when it has none).
    pub dense: f32,
    /// BM25 as a fraction of a message holding every query term.
    pub lexical: f32,
    /// [`LABEL_GAIN`] when the question names who said it, or asks why and it gives a cause.
    pub label: f32,
    pub neighbour: f32,
    pub episode: f32,
    /// What it gained for its place in time when the question asks for the first or the last
    /// of something (see `order`).
    #[serde(default)]
    pub order: f32,
    /// The score of the message's thread as a whole (shown, not added: with one subject per
    /// thread, the episode already carries what the thread would, and adding it only lifted
    /// the messages of whichever thread matched best over better ones elsewhere).
    pub thread: f32,
}

impl Why {
    /// The score without the label gain: what the message says, not who said it. A message
    /// is included on its own by this (a name in the question lifts its speaker's messages in
    /// the ranking, but says nothing of whether a given one is relevant).
    pub fn content(&self) -> f32 {
        self.score - self.label
    }

    /// Each part to three decimals, for people and JSON.
    fn rounded(&self) -> Why {
        let r = |x: f32| (x * 1000.0).round() / 1000.0;
        Why {
            score: r(self.score),
            dense: r(self.dense),
            lexical: r(self.lexical),
            label: r(self.label),
            neighbour: r(self.neighbour),
            episode: r(self.episode),
            order: r(self.order),
            thread: r(self.thread),
        }
    }
}

/// The packed context and where each part came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Context {
    pub text: String,
    pub tokens: usize,
    pub threads: Vec<ThreadHit>,
    pub messages: Vec<MessageRef>,
    /// Bridges the expansion went through (they get their use boost when the context is used).
    #[serde(skip)]
    pub bridges: Vec<String>,
    /// How the query's matches stood against the memory.
    pub stats: QueryStats,
    /// Whether the memory spoke, and why.
    pub gate: Gate,
    /// The best-scoring message, included or not: what the memory would have said.
    pub candidate: Option<Candidate>,
}

/// The best message for a query, shown when explaining a decision.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Candidate {
    pub thread_id: String,
    pub title: String,
    pub message_id: String,
    /// The start of its text, on one line.
    pub snippet: String,
    pub why: Why,
}

/// Ranks (through the cache) and packs.
pub fn build_context(
    mem: &Memory,
    cache: &Cache,
    q: &Query,
    opts: &Options,
    now: DateTime<Utc>,
) -> Context {
    let ranking = cache.rank(mem, q, now);
    pack(mem, q, &ranking, opts)
}

#[cfg(test)]
// Byte ranges of a text: one range is one word, not the numbers of a Vec.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::memory::engine::Capture;
    use crate::memory::test_support::{emb, t0};
    use crate::memory::types::Author;
    use crate::memory::types::{Message, ThreadStatus};
    use ai_smartness_capture::extract::Extraction;
    use ai_smartness_vectors::normalize;
    use std::collections::HashSet;
    use std::time::Instant;

    #[test]
    fn an_excerpt_never_cuts_a_word() {
        let text = "API Error: the client is unable to respond to this request, which appears \
                    to violate our usage policy. Please press esc to edit your last message or \
                    start a new session for the client to assist with a different task.";
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let terms: HashSet<String> = ["message".to_string()].into();
        for window in 40..140 {
            let quote = excerpt_within(text, &terms, window);
            let inner = quote.trim_matches('…');
            assert!(inner.chars().count() <= window, "{quote}");
            assert!(inner.contains("message"), "{quote}");
            let at = flat.find(inner).expect("quoted as written");
            let end = at + inner.len();
            assert!(at == 0 || flat[..at].ends_with(' '), "{window}: {quote}");
            assert!(
                end == flat.len() || flat[end..].starts_with(' '),
                "{window}: {quote}"
            );
        }
        // A token longer than a word (a URL, a hash) is cut where the window falls.
        let hash = format!("commit {} message", "a".repeat(200));
        let quote = excerpt_within(&hash, &terms, 60);
        assert!(quote.ends_with("message"), "{quote}");
        assert!(quote.trim_matches('…').chars().count() <= 60, "{quote}");
    }

    #[test]
    fn the_least_excerpt_size_never_exceeds_an_excerpt() {
        let terms: HashSet<String> = ["token".to_string(), "héllo".to_string()].into();
        let long_words = "the refresh token expired while the gateway retried ".repeat(12);
        let accents = "é à ü ".repeat(100);
        let contents = [
            "",
            "   ",
            "ok",
            "  two   words \n\t here ",
            "héllo wörld, ça va ?",
            long_words.as_str(),
            accents.as_str(),
            "日本語のテキスト　全角スペース",
        ];
        for c in contents {
            let bound = excerpt_chars_at_least(c, EXCERPT_CHARS);
            assert_eq!(excerpt_chars_at_least(c, 10), bound.min(10));
            let real = excerpt(c, &terms).len();
            assert!(bound <= real, "{c:?}: bound {bound} > {real}");
            if c.is_ascii() && c.split_whitespace().map(str::len).sum::<usize>() < 300 {
                assert_eq!(bound, real, "{c:?}");
            }
        }
        assert_eq!(
            excerpt_chars_at_least(&long_words, usize::MAX),
            EXCERPT_CHARS - pack::MAX_WORD_CHARS
        );
    }

    fn say(mem: &mut Memory, text: &str, axes: &[usize], at: DateTime<Utc>) -> String {
        let outcome = mem.ingest(Capture {
            tool: "UserPrompt".into(),
            source_type: ai_smartness_capture::source::source_for_tool("UserPrompt"),
            author: Author::User,
            content: text.into(),
            extraction: Extraction {
                title: text.chars().take(30).collect(),
                ..Extraction::default()
            },
            embedding: emb(axes),
            at,
            metadata: Map::new(),
            units: Vec::new(),
        });
        outcome.message_id
    }

    /// The assistant's answer `text`, its vector along `axes`; returns its message id.
    fn answer(mem: &mut Memory, text: &str, axes: &[usize], at: DateTime<Utc>) -> String {
        mem.ingest(Capture {
            tool: "Response".into(),
            source_type: ai_smartness_capture::source::source_for_tool("Response"),
            author: Author::Assistant,
            content: text.into(),
            extraction: Extraction::default(),
            embedding: emb(axes),
            at,
            metadata: Map::new(),
            units: Vec::new(),
        })
        .message_id
    }

    fn query(text: &str, axes: &[usize]) -> Query {
        Query {
            text: text.into(),
            embedding: emb(axes),
            words: Vec::new(),
            topics: Vec::new(),
        }
    }

    fn opts(budget_tokens: usize) -> Options {
        Options {
            budget_tokens,
            max_threads: 5,
            min_relevance: 0.15,
        }
    }

    fn context(mem: &Memory, q: &Query, budget: usize) -> Context {
        let ranking = rank(mem, q, t0() + chrono::Duration::days(3));
        pack(mem, q, &ranking, &opts(budget))
    }

    /// A name said in every message is left out of the query's focused embedding; the words
    /// that tell messages apart, function words and punctuation stay. Too few messages, no
    /// common word, or nothing but common words: no focus.
    #[test]
    fn the_focused_query_leaves_out_what_every_message_says() {
        let mut mem = Memory::default();
        let focus = |mem: &Memory, text: &str| {
            let ranges = mem.index.common_word_ranges(text);
            (!ranges.is_empty()).then(|| ai_smartness_vectors::without_ranges(text, &ranges))
        };
        for i in 0..49 {
            say(
                &mut mem,
                &format!("Avery: note {i} about the build"),
                &[i % 7],
                t0(),
            );
        }
        assert_eq!(focus(&mem, "What did Avery cook?"), None, "49 messages");
        say(&mut mem, "Avery: I baked sourdough today.", &[8], t0());
        let text = "What recipes has Avery's family cooked?";
        let at = text.find("Avery").unwrap();
        assert_eq!(mem.index.common_word_ranges(text), [at..at + 5]);
        assert_eq!(
            focus(&mem, "What recipes has Avery's family cooked?").as_deref(),
            Some("What recipes has 's family cooked?")
        );
        assert_eq!(focus(&mem, "sourdough recipes"), None, "nothing common");
        assert_eq!(
            focus(&mem, "What about Avery's build?"),
            None,
            "nothing else left"
        );
    }

    /// A question's word brings in the memory's words close to it: not itself, not a word no
    /// message uses, not a distant one. They match at a fraction of what the question's own
    /// word would.
    #[test]
    fn a_question_word_brings_in_the_memory_words_close_to_it() {
        let mut mem = Memory::default();
        say(&mut mem, "I play the violin on Sundays.", &[3], t0());
        say(&mut mem, "Clarinet lessons again.", &[4], t0());
        say(&mut mem, "The kitchen remodel is done.", &[5], t0());
        say(&mut mem, "Which instrument should I learn?", &[6], t0());
        let q = |axes: &[usize]| QVec::from_unit(&emb(axes));
        mem.words.insert("violin", &q(&[0, 1, 2]));
        mem.words.insert("clarinet", &q(&[0, 1]));
        mem.words.insert("kitchen", &q(&[7]));
        mem.words.insert("instrument", &q(&[0, 1]));
        mem.words.insert("cello", &q(&[0, 1]));
        let words = vec![("instrument".to_string(), q(&[0, 1]))];
        let related = mem.words.related(&words, &mem.index);
        let names: Vec<&str> = related.iter().map(|(w, _)| w.as_str()).collect();
        assert_eq!(names, ["clarinet", "violin"], "{related:?}");
        assert!(related[0].1 > 0.99 && (related[1].1 - 0.816).abs() < 0.01);

        let terms = index::query_terms("what instruments");
        let plain = mem.index.search(&terms, &[]);
        let expanded = mem.index.search(&terms, &related);
        let (violin, clarinet, kitchen, asked) = (0, 1, 2, 3);
        assert_eq!(plain[violin], 0.0);
        assert!(expanded[clarinet] > expanded[violin] && expanded[violin] > 0.0);
        assert_eq!(expanded[kitchen], 0.0);
        assert!(expanded[asked] > 2.0 * expanded[clarinet], "{expanded:?}");
        assert_eq!(expanded[asked], plain[asked]);
    }

    /// The answer to a question shares no word and no direction with it: it is found because it
    /// was said right after the question, in the same sitting, although it went to another
    /// thread. A message as unrelated said days later is not.
    #[test]
    fn an_answer_rises_with_the_question_it_followed() {
        let mut mem = Memory::default();
        say(
            &mut mem,
            "Which port does the staging gateway use?",
            &[0, 1],
            t0(),
        );
        let answer = say(
            &mut mem,
            "Eight four four three, behind nginx.",
            &[5],
            t0() + chrono::Duration::minutes(1),
        );
        let later = say(
            &mut mem,
            "Remember tacos with Sam.",
            &[9],
            t0() + chrono::Duration::days(2),
        );
        let ctx = context(&mem, &query("staging gateway port", &[0, 1]), 60);
        let ids: Vec<&str> = ctx.messages.iter().map(|m| m.message_id.as_str()).collect();
        assert!(ids.contains(&answer.as_str()), "{}", ctx.text);
        assert!(!ids.contains(&later.as_str()), "{}", ctx.text);
        assert!(ctx.text.contains("Eight four four three"));
    }

    /// The id of the best-ranked message for `q`, and what its score is made of.
    fn best_message(mem: &Memory, q: &Query) -> (String, Why) {
        let ranking = rank(mem, q, t0() + chrono::Duration::days(3));
        let m = ranking.messages[0];
        let id = &ranking.thread_ids[m.thread as usize];
        let t = mem.graph.thread(id).unwrap();
        (t.messages[m.position as usize].id.clone(), m.why)
    }

    /// The server launched three times, each told in the same words, days apart: the question
    /// that asks for the first launch gets the first at the top, the one that asks how it
    /// finally went gets the last, and one that says neither keeps the plain order.
    #[test]
    fn a_question_about_the_first_or_the_last_time_ranks_by_when() {
        let mut mem = Memory::default();
        chatter(&mut mem, &["Ana", "Bo"]);
        let launches: Vec<String> = (0..3)
            .map(|i| {
                say(
                    &mut mem,
                    &format!(
                        "uvicorn launch of the api server exited, attempt {}",
                        ["one", "two", "three"][i]
                    ),
                    &[0, 1],
                    t0() + chrono::Duration::days(i as i64),
                )
            })
            .collect();
        let top = |text: &str| {
            let (id, why) = best_message(&mem, &query(text, &[0, 1]));
            (id, why.order)
        };
        let (first, gain) = top("why did the first uvicorn launch of the api server exit?");
        assert_eq!(first, launches[0]);
        assert!(gain > 0.0);
        let (last, gain) = top("how did the uvicorn launch of the api server finally go?");
        assert_eq!(last, launches[2]);
        assert!(gain > 0.0);
        let (_, gain) = top("why did the uvicorn launch of the api server exit?");
        assert_eq!(gain, 0.0, "no word of time, no gain for it");
    }

    /// The person's request and the assistant's answer say the same; "what did I say" asks for
    /// the person's words, which rise by the gain of a named speaker; without "I" and a verb of
    /// saying nobody's words gain.
    #[test]
    fn a_question_about_what_i_said_lifts_the_persons_words() {
        let mut mem = Memory::default();
        chatter(&mut mem, &["Ana", "Bo"]);
        let reply = answer(
            &mut mem,
            "Keep the staging gateway on port 8443 behind nginx.",
            &[0, 1],
            t0(),
        );
        let asked = say(
            &mut mem,
            "Keep the staging gateway on port 8443 behind nginx, please.",
            &[0, 1],
            t0() + chrono::Duration::hours(1),
        );
        let top = |text: &str| {
            let (id, why) = best_message(&mem, &query(text, &[0, 1]));
            (id, why.label)
        };
        let (first, gain) = top("which port did I ask to keep the staging gateway on?");
        assert_eq!(first, asked);
        assert_eq!(gain, LABEL_GAIN);
        let (first, gain) = top("which port is the staging gateway kept on behind nginx?");
        assert_eq!(first, reply, "stored first, said alike: the plain order");
        assert_eq!(gain, 0.0);
    }

    /// Two answers about the same server, one of them a diagnosis: "why" asks for a cause and
    /// lifts the diagnosis by the gain of a named speaker; a question without "why", "cause" or
    /// "reason" lifts nothing.
    #[test]
    fn a_question_asking_why_lifts_the_diagnosis() {
        let mut mem = Memory::default();
        let look = answer(
            &mut mem,
            "Let me read the uvicorn server logs once more.",
            &[0, 1],
            t0(),
        );
        let diagnosis = answer(
            &mut mem,
            "The issue is with the shell directory change, so I restart it from the project root.",
            &[0, 1],
            t0() + chrono::Duration::minutes(1),
        );
        let top = |text: &str| {
            let (id, why) = best_message(&mem, &query(text, &[0, 1]));
            (id, why.label)
        };
        let (first, gain) = top("why did the uvicorn server logs stop?");
        assert_eq!(first, diagnosis);
        assert_eq!(gain, LABEL_GAIN);
        let (first, gain) = top("what did the uvicorn server logs say?");
        assert_eq!(first, look);
        assert_eq!(gain, 0.0);
    }

    /// Sixty lines of small talk by `names` in turn, on another subject, ten days before
    /// `t0()`: enough that each name is a common word, as in a real conversation.
    fn chatter(mem: &mut Memory, names: &[&str]) {
        let start = t0() - chrono::Duration::days(10);
        for i in 0..60 {
            let who = names[i % names.len()];
            let at = start + chrono::Duration::minutes(i as i64);
            say(mem, &format!("{who}: lunch plan number {i}"), &[9], at);
        }
    }

    /// Two messages alike in words and direction: the one said by the person the question
    /// names ranks first, whichever of the two it names.
    #[test]
    fn what_someone_said_rises_when_the_question_names_them() {
        let mut mem = Memory::default();
        chatter(&mut mem, &["Ann", "Bob"]);
        let ann = say(&mut mem, "Ann: Bob, the blue kayak is mine.", &[0, 1], t0());
        let bob = say(&mut mem, "Bob: Ann, the teal kayak is mine.", &[0, 1], t0());
        let now = t0() + chrono::Duration::days(3);
        let best = |text: &str| {
            let r = rank(&mem, &query(text, &[0, 1]), now);
            let (first, second) = (r.messages[0], r.messages[1]);
            let id = |m: Scored| {
                let t = mem.graph.thread(&r.thread_ids[m.thread as usize]).unwrap();
                t.messages[m.position as usize].id.clone()
            };
            assert!(
                first.score() > second.score() + 0.1,
                "{text}: {:?}",
                r.messages
            );
            id(first)
        };
        assert_eq!(best("Which kayak is Ann's?"), ann);
        assert_eq!(best("Which kayak is Bob's?"), bob);
    }

    /// The reply to what the named person said rises with what they said, not with who said
    /// it: two exchanges alike but for who spoke first, the replies differ by the episode's
    /// share of the label gain alone.
    #[test]
    fn a_reply_inherits_what_was_said_not_who_said_it() {
        let mut mem = Memory::default();
        chatter(&mut mem, &["Ann", "Cy"]);
        let later = t0() + chrono::Duration::days(2);
        let minute = chrono::Duration::minutes(1);
        say(&mut mem, "Ann: Cy, the kayak is mine.", &[0, 1], t0());
        let after_ann = say(&mut mem, "Bob: Nice one.", &[0, 1], t0() + minute);
        say(&mut mem, "Cy: Ann, the kayak is mine.", &[0, 1], later);
        let after_cy = say(&mut mem, "Bob: Nice work.", &[0, 1], later + minute);
        let r = rank(
            &mem,
            &query("Which kayak is Ann's?", &[0, 1]),
            later + chrono::Duration::days(1),
        );
        let score = |id: &str| {
            r.messages
                .iter()
                .find(|m| {
                    let t = mem.graph.thread(&r.thread_ids[m.thread as usize]).unwrap();
                    t.messages[m.position as usize].id == id
                })
                .unwrap()
                .score()
        };
        let gap = score(&after_ann) - score(&after_cy);
        assert!(
            (gap - EPISODE_SHARE * LABEL_GAIN).abs() < 1e-4,
            "gap {gap}: {:?}",
            r.messages
        );
    }

    /// Chance's best match rises with the memory's size, and so does the bar.
    #[test]
    fn the_bar_rises_with_the_memory_size_like_chance_does() {
        let (b20, b500, b20k) = (gate_bar(20), gate_bar(500), gate_bar(20_000));
        assert!((b500 - GATE_BASE).abs() < 1e-6);
        assert!(b20 < b500 && b500 < b20k, "{b20} {b500} {b20k}");
        assert!((GATE_BASE - 0.09..GATE_BASE - 0.07).contains(&b20));
        assert!((GATE_BASE + 0.06..GATE_BASE + 0.08).contains(&b20k));
    }

    /// A question whose words a message shares but whose meaning is elsewhere: the memory
    /// stays silent. One whose meaning is close in other words (what a developer asks days
    /// later) gets the message, as does one that both signals point at, with why.
    #[test]
    fn memory_speaks_when_the_meaning_is_there_whatever_the_words() {
        let mut mem = Memory::default();
        say(
            &mut mem,
            "The staging gateway drops websocket connections after ten minutes.",
            &[0, 1],
            t0(),
        );
        let day = |d: i64| t0() + chrono::Duration::days(d);
        say(&mut mem, "Lunch at the blue cafe on Friday.", &[5], day(2));
        for i in 0..20 {
            say(
                &mut mem,
                &format!("Weekly planning note {i} about the roadmap."),
                &[9],
                day(4 + i),
            );
        }
        // Shares "blue", means something else.
        let words_only = context(
            &mem,
            &query("which blue paint suits a bathroom", &[12]),
            1000,
        );
        assert!(words_only.gate.abstained && words_only.messages.is_empty());
        // Means the same, says it otherwise.
        let meaning_only = context(&mem, &query("sockets closing on preprod", &[0, 1]), 1000);
        assert!(!meaning_only.gate.abstained, "{:?}", meaning_only.gate);
        assert!(
            meaning_only.text.contains("drops websocket"),
            "{}",
            meaning_only.text
        );
        let both = context(
            &mem,
            &query("why does the staging gateway drop websockets", &[0, 1]),
            1000,
        );
        assert!(!both.gate.abstained, "{:?}", both.gate);
        assert!(both.text.contains("drops websocket"), "{}", both.text);
        let why = both.messages[0].why;
        assert!(why.dense > 0.9 && why.lexical > 0.0 && why.score >= why.dense * DENSE_SHARE);
        // Only what is relevant: not the planning notes, though the budget had room.
        assert_eq!(both.messages.len(), 1, "{}", both.text);
        assert!(both.tokens < 100);
    }

    /// A standing instruction the person gave ("always include the seed when I ask about
    /// reproducibility"), or a preference they stated when the request asks for advice, rises
    /// for a later request it is about, said in other words, above messages as close to the
    /// request; it does not make the memory speak on its own.
    #[test]
    fn a_standing_instruction_rises_for_the_requests_it_is_about() {
        for standing in [
            "Always include the random seed value when I ask about evaluation reproducibility.",
            "I prefer seeing the random seed value whenever I ask about evaluation reproducibility.",
        ] {
            // A preference bears on a request for advice.
            let asked_text = if standing.starts_with("Always") {
                "How can my test results stay consistent between runs?"
            } else {
                "How should I keep my test results consistent between runs?"
            };
            let mut mem = Memory::default();
            chatter(&mut mem, &["Ann", "Bob"]);
            let rule = say(&mut mem, standing, &[0, 2], t0());
            let close = answer(
                &mut mem,
                "The nightly evaluation compares against last week's scores.",
                &[0, 3],
                t0() + chrono::Duration::minutes(5),
            );
            let asked = query(asked_text, &[0, 1]);
            let (best, why) = best_message(&mem, &asked);
            assert_eq!(best, rule, "{standing}: {why:?}");
            assert!(why.label > 0.0);
            let ctx = context(&mem, &asked, 1000);
            let ids: Vec<&str> = ctx.messages.iter().map(|m| m.message_id.as_str()).collect();
            assert!(
                ids.contains(&rule.as_str()) && ids.contains(&close.as_str()),
                "{ids:?}"
            );
            // A preference says nothing of what a result was: no gain when no advice is asked.
            if !standing.starts_with("Always") {
                let plain = query("What were my test results between runs?", &[0, 1]);
                let ctx = context(&mem, &plain, 1000);
                let lifted = ctx.messages.iter().find(|m| m.message_id == rule);
                assert!(lifted.is_none_or(|m| m.why.label == 0.0), "{lifted:?}");
            }
            // Far from everything: the gain does not open the gate.
            let unrelated = context(&mem, &query("a good lasagna recipe", &[12]), 1000);
            assert!(unrelated.gate.abstained, "{:?}", unrelated.gate);
            assert_eq!(unrelated.stats.label_dense, 0.0);
        }
    }

    /// A question about what this conversation's people did is about the memory by its own
    /// words: however far its meaning sits from every message, the memory speaks, with the
    /// message its words point at. Asked about no one, the same words stay silent.
    #[test]
    fn a_question_about_what_was_done_here_is_never_silenced() {
        let mut mem = Memory::default();
        chatter(&mut mem, &["Ann", "Bob"]);
        answer(
            &mut mem,
            "Started a second instance on port 8081 to compare the logs.",
            &[0, 1],
            t0(),
        );
        let generic = context(
            &mem,
            &query("which port for a second instance", &[12]),
            1000,
        );
        assert!(generic.gate.abstained, "{:?}", generic.gate);
        let asked = "which port did the assistant start a second instance on";
        let ctx = context(&mem, &query(asked, &[12]), 1000);
        assert!(!ctx.gate.abstained, "{:?}", ctx.gate);
        assert!(ctx.gate.evidence < ctx.gate.bar, "{:?}", ctx.gate);
        assert!(ctx.text.contains("port 8081"), "{}", ctx.text);
        assert!(!ctx.text.contains("lunch plan"), "{}", ctx.text);
    }

    /// A thread a person asked never to be recalled is kept, ranked, and never packed.
    #[test]
    fn a_never_recall_thread_is_never_injected() {
        let mut mem = Memory::default();
        let id = say(
            &mut mem,
            "The staging gateway drops websocket connections.",
            &[0, 1],
            t0(),
        );
        let thread = mem
            .graph
            .threads()
            .find(|t| t.messages.iter().any(|m| m.id == id))
            .unwrap()
            .id
            .clone();
        let q = query("staging gateway websocket", &[0, 1]);
        assert!(!context(&mem, &q, 1000).messages.is_empty());
        mem.set_thread_never_recall(&thread, true).unwrap();
        let ctx = context(&mem, &q, 1000);
        assert!(
            ctx.messages.is_empty() && ctx.text.is_empty(),
            "{}",
            ctx.text
        );
    }

    #[test]
    fn nothing_relevant_gives_an_empty_context() {
        let mut mem = Memory::default();
        say(&mut mem, "The build uses cargo nextest.", &[0, 1], t0());
        let ctx = context(&mem, &query("sourdough hydration ratio", &[12]), 1000);
        assert!(
            ctx.text.is_empty() && ctx.messages.is_empty(),
            "{}",
            ctx.text
        );
    }

    /// The best message, too long for what is left of the budget, is quoted in part around
    /// the query's words, not passed over for a worse one that fits; the budget still holds.
    #[test]
    fn a_long_best_message_is_quoted_in_part_when_the_room_left_is_short() {
        let mut mem = Memory::default();
        let long = format!(
            "The staging gateway restarted because the connection pool ran dry. {}",
            "Every worker waited on the same lock while the health check retried. ".repeat(4)
        );
        let best = say(&mut mem, &long, &[0, 1], t0());
        let ctx = context(&mem, &query("staging gateway restarted", &[0, 1]), 60);
        assert!(ctx.tokens <= 60 && ctx.text.len().div_ceil(CHARS_PER_TOKEN) <= 60);
        assert_eq!(ctx.messages.len(), 1, "{}", ctx.text);
        assert_eq!(ctx.messages[0].message_id, best);
        assert!(!ctx.text.contains(&long), "quoted whole: {}", ctx.text);
        assert!(
            ctx.text.contains("staging gateway restarted because") && ctx.text.contains('…'),
            "{}",
            ctx.text
        );
        // Less room than the least a fitted quote gives: nothing.
        assert!(
            context(&mem, &query("staging gateway restarted", &[0, 1]), 20)
                .messages
                .is_empty()
        );
        // Characters of three bytes each: the quote shrinks until its bytes fit, or is left out.
        let mut wide = Memory::default();
        say(
            &mut wide,
            &"障害報告 サーバー 再起動 ".repeat(40),
            &[0, 1],
            t0(),
        );
        for budget in [40, 60, 120] {
            let ctx = context(&wide, &query("障害報告 サーバー", &[0, 1]), budget);
            assert!(
                ctx.text.len().div_ceil(CHARS_PER_TOKEN) <= budget,
                "{}",
                ctx.text
            );
            if budget == 120 {
                assert_eq!(ctx.messages.len(), 1, "{}", ctx.text);
            }
        }
    }

    /// The first messages chosen are quoted at length; those past them, in a short window,
    /// so the same room shows more of them.
    #[test]
    fn past_the_first_messages_long_ones_are_quoted_in_a_short_window() {
        // Long messages stored before units existed (no units of their own).
        let mut mem = Memory::default();
        for i in 0..16 {
            say(
                &mut mem,
                &format!(
                    "Incident {i}: the staging gateway restarted after deploy {i}. {}",
                    "Every worker waited on the same lock while the health check retried. "
                        .repeat(20)
                ),
                &[0, 1],
                t0() + chrono::Duration::minutes(i),
            );
        }
        let ctx = context(&mem, &query("staging gateway restarted", &[0, 1]), 4_000);
        assert_eq!(ctx.messages.len(), 16, "{}", ctx.text);
        let quotes: Vec<usize> = ctx
            .text
            .lines()
            .filter_map(|l| l.strip_prefix("- "))
            .map(|q| q.trim_matches('…').chars().count())
            .collect();
        assert_eq!(quotes.len(), 16, "{}", ctx.text);
        // Each window gives up at most the end of a word it would cut.
        let within = |n: usize, window: usize| n <= window && n + pack::MAX_WORD_CHARS > window;
        let long = quotes.iter().filter(|&&n| within(n, EXCERPT_CHARS)).count();
        let short = quotes
            .iter()
            .filter(|&&n| within(n, SHORT_EXCERPT_CHARS))
            .count();
        assert_eq!((long, short), (LONG_QUOTES, 16 - LONG_QUOTES), "{quotes:?}");
        for line in ctx.text.lines().filter(|l| l.starts_with("- ")) {
            assert!(line.contains("staging gateway restarted"), "{line}");
        }

        // A question about a stretch of the work gets every moment in the short window: in a
        // budget that holds eight or nine long quotes, all sixteen.
        let asked = "staging gateway restarted";
        let ctx = context(&mem, &query(asked, &[0, 1]), 800);
        assert!(ctx.messages.len() <= 9, "{}", ctx.text);
        let span = "How did the staging gateway restarted incidents progress, in order?";
        let ctx = context(&mem, &query(span, &[0, 1]), 800);
        assert_eq!(ctx.messages.len(), 16, "{}", ctx.text);
        for line in ctx.text.lines().filter(|l| l.starts_with("- ")) {
            let n = line[2..].trim_matches('…').chars().count();
            assert!(within(n, SHORT_EXCERPT_CHARS), "{line}");
        }
    }

    /// Past the first ten, what a person or the assistant said is quoted around the question's
    /// words, so the context shows more moments; a tool's short output keeps its lines whole
    /// (half a log line or half a line of code says nothing).
    #[test]
    fn past_the_first_messages_said_text_is_cut_and_output_lines_are_not() {
        let filler = "and the worker waited on the same lock while the health check retried ";
        let mut mem = Memory::default();
        for i in 0..12 {
            say(
                &mut mem,
                &format!(
                    "Deploy {i}: the staging gateway restarted {}",
                    filler.repeat(3)
                ),
                &[0, 1],
                t0() + chrono::Duration::minutes(i),
            );
        }
        let mut outputs = Vec::new();
        for i in 0..4 {
            let text = format!(
                "$ kubectl logs gateway-{i}\nstaging gateway restarted {}",
                filler.repeat(3)
            );
            mem.ingest(Capture {
                tool: "Bash".into(),
                source_type: ai_smartness_capture::source::source_for_tool("Bash"),
                author: Author::Assistant,
                content: text.clone(),
                extraction: Extraction::default(),
                embedding: emb(&[0, 1]),
                at: t0() + chrono::Duration::minutes(30 + i),
                metadata: Map::new(),
                units: Vec::new(),
            });
            outputs.push(text);
        }
        let ctx = context(&mem, &query("staging gateway restarted", &[0, 1]), 4_000);
        assert_eq!(ctx.messages.len(), 16, "{}", ctx.text);
        let said: Vec<&str> = ctx
            .text
            .lines()
            .filter(|l| l.starts_with("- ") && l.contains("Deploy"))
            .collect();
        let cut = said.iter().filter(|l| l.contains('…')).count();
        // However the outputs rank, the said messages past the first ten are cut.
        assert!(cut >= 12 - LONG_QUOTES, "{}", ctx.text);
        for out in &outputs {
            let last_line = out.lines().last().unwrap();
            assert!(ctx.text.contains(last_line.trim()), "{}", ctx.text);
        }
    }

    /// Every listed message is in the text, the budget holds, and each message is listed once.
    #[test]
    fn provenance_lists_exactly_the_quoted_messages_within_the_budget() {
        let mut mem = Memory::default();
        for i in 0..40 {
            say(
                &mut mem,
                &format!("Deploy note {i}: the staging gateway restarted after config change {i}."),
                &[0, 1 + i % 3],
                t0() + chrono::Duration::minutes(i as i64),
            );
        }
        let ctx = context(&mem, &query("staging gateway restarted", &[0, 1]), 120);
        assert!(!ctx.messages.is_empty());
        assert!(ctx.tokens <= 120 && ctx.text.len().div_ceil(CHARS_PER_TOKEN) <= 120);
        let mut seen = HashSet::new();
        for m in &ctx.messages {
            assert!(seen.insert(m.message_id.clone()), "listed twice");
            let t = mem.graph.thread(&m.thread_id).unwrap();
            let msg = t.messages.iter().find(|x| x.id == m.message_id).unwrap();
            assert!(
                ctx.text.contains(&msg.content),
                "{} not in {}",
                msg.content,
                ctx.text
            );
        }
        let lines = ctx.text.lines().filter(|l| l.starts_with("- ")).count();
        assert_eq!(lines, ctx.messages.len());
    }

    /// A thread with one message in a context costs no heading of its own: its message goes
    /// under the shared "More" heading; a thread with several keeps its own. Whatever the
    /// budget, the context stays within it.
    #[test]
    fn messages_alone_from_their_thread_share_one_heading() {
        let mut mem = Memory::default();
        for i in 0..30u32 {
            let axes = [0, 2 + (i % 6) as usize * 2];
            say(
                &mut mem,
                &format!("Gateway note {i}: the staging gateway restarted, cause {i}."),
                &axes,
                t0() + chrono::Duration::days(i64::from(i)),
            );
        }
        let (mut shared, mut own) = (false, false);
        for budget in (20..600).step_by(17) {
            let ctx = context(&mem, &query("staging gateway restarted", &[0]), budget);
            shared |= ctx.text.contains("# More\n");
            own |= ctx
                .text
                .lines()
                .any(|l| l.starts_with("# ") && l != "# More");
            assert!(ctx.tokens <= budget, "{} > {budget}", ctx.tokens);
            let mut heading: Option<&str> = None;
            let mut count = 0;
            let check = |h: Option<&str>, n: usize| {
                if let Some(h) = h {
                    assert!(
                        h == "# More" || n >= 2,
                        "{h} holds {n} message(s):\n{}",
                        ctx.text
                    );
                }
            };
            for l in ctx.text.lines() {
                if l.starts_with("# ") {
                    check(heading, count);
                    heading = Some(l);
                    count = 0;
                } else if l.starts_with("- ") {
                    count += 1;
                }
            }
            check(heading, count);
            let lines = ctx.text.lines().filter(|l| l.starts_with("- ")).count();
            assert_eq!(lines, ctx.messages.len());
        }
        assert!(shared && own, "both kinds of heading were seen");
    }

    /// Related words for a question of 8 words over a vocabulary of 50,000 (run by hand, in
    /// release): `cargo test --release --lib perf_related -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing report, run by hand"]
    fn perf_related_words_50000() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut unit = move || {
            let mut v: Vec<f32> = (0..384)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % 2000) as f32 / 1000.0 - 1.0
                })
                .collect();
            normalize(&mut v);
            QVec::from_unit(&v)
        };
        let mut mem = Memory::default();
        say(
            &mut mem,
            "a message so that the index is not empty",
            &[0],
            t0(),
        );
        for i in 0..50_000 {
            mem.words.insert(&format!("word{i}"), &unit());
        }
        let words: Vec<(String, QVec)> = (0..8).map(|i| (format!("q{i}"), unit())).collect();
        let mut times = Vec::new();
        for _ in 0..40 {
            let t = Instant::now();
            let related = mem.words.related(&words, &mem.index);
            times.push(t.elapsed());
            assert!(related.is_empty(), "random vectors are not related");
        }
        times.sort();
        eprintln!(
            "related words, 8 query words over 50,000: p50 {:?}, p95 {:?}",
            times[20], times[38]
        );
    }

    /// A memory of `n` threads of 3 messages on 8 words, with random vectors, and the random
    /// source that made it (for queries).
    fn synthetic_memory(n: u64) -> (Memory, impl FnMut() -> Vec<f32>) {
        use crate::memory::graph::Graph;
        use crate::memory::types::{Thread, ThreadStatus};
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let words = [
            "pool", "deploy", "gateway", "cache", "schema", "token", "queue", "retry",
        ];
        let unit = |next: &mut dyn FnMut() -> u64| {
            let mut v: Vec<f32> = (0..384)
                .map(|_| (next() % 2000) as f32 / 1000.0 - 1.0)
                .collect();
            normalize(&mut v);
            v
        };
        let mut threads = Vec::new();
        for i in 0..n {
            let at = t0() + chrono::Duration::minutes((next() % 86_400) as i64);
            let messages = (0..3)
                .map(|k| Message {
                    id: format!("msg_{i}_{k}"),
                    content: format!(
                        "the {} {} failed near the {} after {i}",
                        words[(next() % 8) as usize],
                        words[(next() % 8) as usize],
                        words[(next() % 8) as usize]
                    ),
                    source: Author::Assistant,
                    timestamp: at + chrono::Duration::seconds(k),
                    metadata: Map::new(),
                    embedding: Some(QVec::from_unit(&unit(&mut next))),
                    terms: Vec::new(),
                    units: Vec::new(),
                })
                .collect();
            threads.push(Thread {
                id: format!("thread_{i}"),
                title: format!("thread {i}"),
                status: ThreadStatus::Active,
                messages,
                summary: String::new(),
                topics: vec![words[(i % 8) as usize].into()],
                origin_type: ai_smartness_capture::OriginType::Prompt,
                drift_history: vec![],
                parent_id: None,
                child_ids: vec![],
                decisions: vec![],
                questions: vec![],
                weight: 1.0,
                weight_at: at,
                created_at: at,
                last_active: at,
                activation_count: 1,
                embedding: Some(QVec::from_unit(&unit(&mut next))),
                pinned: false,
                never_recall: false,
                sharing: Default::default(),
                profile: Vec::new(),
                title_by: Default::default(),
                merged_into: None,
            });
        }
        let mem = Memory::new(Graph::from_loaded(threads, Vec::new()));
        (mem, move || unit(&mut next))
    }

    /// The `i`-th Bash capture of a test run, two days after [`t0`].
    fn bash_capture(
        i: i64,
        content: String,
        subjects: Vec<String>,
        embedding: Vec<f32>,
    ) -> Capture {
        Capture {
            tool: "Bash".into(),
            source_type: ai_smartness_capture::source::source_for_tool("Bash"),
            author: Author::Assistant,
            content,
            extraction: Extraction {
                subjects,
                ..Extraction::default()
            },
            embedding,
            at: t0() + chrono::Duration::days(2) + chrono::Duration::seconds(i),
            metadata: Map::new(),
            units: Vec::new(),
        }
    }

    /// The thread decision for one capture at 10,000 threads (run by hand, in release):
    /// `cargo test --release --lib perf_ingest -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing report, run by hand"]
    fn perf_ingest_10000_threads() {
        let (mut mem, mut unit) = synthetic_memory(10_000);
        let mut times = Vec::new();
        for i in 0..50 {
            let cap = bash_capture(
                i,
                format!("$ cargo test -p crate{i}\nsrc/pool/mod.rs:{i}: retry failed"),
                vec!["pool".into(), format!("retry{i}"), "gateway timeout".into()],
                unit(),
            );
            let t = Instant::now();
            mem.ingest(cap);
            times.push(t.elapsed());
        }
        times.sort();
        eprintln!(
            "ingest at 10,000 threads: p50 {:?}, p95 {:?}",
            times[25], times[47]
        );
    }

    fn top_k(keyed: impl Iterator<Item = (f32, u32)>, k: usize) -> Vec<u32> {
        let mut top = TopK::new(k);
        for (key, i) in keyed {
            top.push(key, i);
        }
        top.into_indices()
    }

    /// `TopK` gives what a full sort by key (highest first, then index) would begin with.
    #[test]
    fn top_k_is_the_start_of_a_full_sort() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for (n, k) in [
            (0, 3),
            (5, 0),
            (5, 8),
            (100, 7),
            (5_000, 64),
            (20_000, 1024),
        ] {
            // Few distinct keys, so that ties cross every compaction.
            let keys: Vec<f32> = (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed % 50) as f32 / 10.0
                })
                .collect();
            let mut sorted: Vec<u32> = (0..n as u32).collect();
            sorted.sort_by(|&a, &b| {
                keys[b as usize]
                    .total_cmp(&keys[a as usize])
                    .then(a.cmp(&b))
            });
            sorted.truncate(k);
            let keyed = keys.iter().enumerate().map(|(i, &key)| (key, i as u32));
            assert_eq!(top_k(keyed, k), sorted, "{n} keys, top {k}");
        }
    }

    /// The two halves of step 1 on two threads rank exactly as one pass does.
    #[test]
    fn a_split_scan_ranks_as_one_pass() {
        let (mem, mut unit) = synthetic_memory(1_500);
        for text in ["why did the pool deploy fail", "the gateway cache", "retry"] {
            let q = Query {
                text: text.into(),
                embedding: unit(),
                words: Vec::new(),
                topics: vec!["cache".into()],
            };
            let one = rank_split(&mem, &q, t0(), usize::MAX, false);
            let two = rank_split(&mem, &q, t0(), 0, false);
            assert_eq!(one.thread_ids, two.thread_ids);
            assert_eq!(one.threads, two.threads);
            assert_eq!(one.bridges, two.bridges);
            let key = |r: &Ranking| -> Vec<(u32, u32, u32)> {
                r.messages
                    .iter()
                    .map(|m| (m.thread, m.position, m.score().to_bits()))
                    .collect()
            };
            assert_eq!(key(&one), key(&two));
            assert_eq!(one.messages.len(), RANKED_MESSAGES);
        }
    }

    /// A table kept current by syncs ranks exactly as one built afresh, through new
    /// messages, a thread archived, one deleted and two merged.
    #[test]
    fn a_synced_table_ranks_as_a_fresh_one() {
        let (mut mem, mut unit) = synthetic_memory(400);
        mem.sync_table();
        for i in 0..30 {
            let cap = bash_capture(
                i,
                format!("$ cargo test -p pool{i}\nthe pool retry failed near the gateway"),
                vec!["pool".into(), format!("retry{i}")],
                unit(),
            );
            mem.ingest(cap);
        }
        let ids: Vec<String> = mem.graph.threads().take(4).map(|t| t.id.clone()).collect();
        mem.set_thread_status(&ids[0], ThreadStatus::Archived, t0())
            .unwrap();
        mem.delete_thread(&ids[1]).unwrap();
        mem.merge_threads(&ids[2], &ids[3], t0()).unwrap();
        mem.sync_table();
        assert!(mem.table().current(&mem.graph));
        let key = |r: &Ranking| -> Vec<(String, u32, u32)> {
            r.messages
                .iter()
                .map(|m| {
                    (
                        r.thread_ids[m.thread as usize].clone(),
                        m.position,
                        m.score().to_bits(),
                    )
                })
                .collect()
        };
        let queries: Vec<Query> = ["why did the pool deploy fail", "the gateway cache retry"]
            .iter()
            .map(|text| Query {
                text: text.to_string(),
                embedding: unit(),
                words: Vec::new(),
                topics: vec!["pool".into(), "cache".into()],
            })
            .collect();
        let synced: Vec<_> = queries.iter().map(|q| key(&rank(&mem, q, t0()))).collect();
        // Any change leaves the table behind the graph: ranking builds a fresh one.
        let _ = mem.graph.thread_mut(&ids[0]);
        assert!(!mem.table().current(&mem.graph));
        let fresh: Vec<_> = queries.iter().map(|q| key(&rank(&mem, q, t0()))).collect();
        assert!(synced == fresh, "the synced table ranks otherwise");
        assert!(synced.iter().all(|k| !k.is_empty()));
        // The deleted thread is gone, the merged one's messages are its target's.
        assert!(synced
            .iter()
            .flatten()
            .all(|(id, _, _)| id != &ids[1] && id != &ids[2]));
    }

    /// Ranking time at 10,000 threads of 3 messages (run by hand, in release):
    /// `cargo test --release --lib perf_rank -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing report, run by hand"]
    fn perf_rank_10000_threads() {
        let words = [
            "pool", "deploy", "gateway", "cache", "schema", "token", "queue", "retry",
        ];
        let (mem, mut unit) = synthetic_memory(10_000);
        let mut times = Vec::new();
        for i in 0..50 {
            let q = Query {
                text: format!("why did the {} {} fail", words[i % 8], words[(i + 3) % 8]),
                embedding: unit(),
                words: Vec::new(),
                topics: vec![],
            };
            let t = Instant::now();
            let ranking = rank(&mem, &q, t0());
            let ctx = pack(&mem, &q, &ranking, &opts(1200));
            times.push(t.elapsed());
            // Random vectors: the gate may well stay silent; the work is the same.
            assert!(!ranking.messages.is_empty() && ctx.tokens <= 1200);
        }
        times.sort();
        eprintln!(
            "rank+pack at 10,000 threads: p50 {:?}, p95 {:?}",
            times[25], times[47]
        );
    }
}
