//! Recall benchmark on the material the product exists for: does the memory give back what a
//! developer did, read and decided, better than a plain search over the same history?
//!
//!     cargo bench --bench recall
//!     AI_BENCH_QUICK=1 ...            (one memory of each set and split)
//!     AI_BENCH_SETS=sessions,beam,locomo ...   (which sets; all by default)
//!     AI_BENCH_ONLY=NAMES ...         (memories by name, comma-separated: `beam-1,beam-2`)
//!     AI_BENCH_PRODUCT_ONLY=1 ...     (no baselines: for studying the product alone)
//!     AI_BENCH_DUMP=FILE ...          (one JSON line per product prompt at 2,000 tokens: the
//!                                      gate's inputs and decision, the context)
//!     AI_BENCH_HITS=FILE ...          (one JSON line per related question, system and budget:
//!                                      whether its answer strings were all in the context, and
//!                                      how many of its evidence records it holds)
//!
//! Sets, each with a declared split (constants are tuned on `tune` memories only; the held-out
//! figures are the ones that count, and the README gives them):
//!
//! - **claude-sessions** (`../shared/bench/claude-sessions/`): six real Claude Code sessions,
//!   imported with `ai import --format claude-transcript`, with 30 to 34 questions each (short
//!   answer strings, the records that hold them) and 15 unrelated prompts. Tune: attio, medianator,
//!   connix; held out: llm-guard, skypilot, storia.
//! - **beam** (`../shared/bench/beam-500k-coding/`): five long conversations of an app being built,
//!   imported message by message, with their probing questions (the messages that hold the
//!   evidence; no short answer strings). Tune: 1 and 2; held out: 3, 4 and 5. Abstention
//!   questions (nothing in the chat answers them) are counted apart.
//! - **locomo** (two conversations, tune): the chat memory the ranking was first tuned on; its
//!   floor is checked by `cargo bench --bench locomo` over all ten.
//!
//! Unrelated prompts: each session's own 15 (programming on other stacks and general questions);
//! for the other sets, `benches/noise/general.txt`. The generic programming prompts of
//! `benches/noise/programming.txt` are asked of those too and shown apart ("generic"), not
//! counted as unrelated: a long conversation about building an app discusses Docker images,
//! regular expressions and HTTP status codes, and a memory that answers a generic question
//! from what the project did is right to.
//!
//! Systems, over the same history in the same run, each given the same budgets (1,000, 2,000 and
//! 4,000 tokens; a token is 4 bytes, as the product counts):
//!
//! - **product**: a fresh project and daemon, the history imported, then a `context` request per
//!   prompt and budget (what `ai-inject` would add).
//! - **bm25**: Okapi BM25 over the units (a prompt, an answer, a tool call with its input and
//!   result; a conversation's message), best first, concatenated up to the budget (the last one
//!   cut there).
//! - **minilm**: the product's own model, cosine between the question and each unit, a long unit
//!   scoring its best 600-character window; packed the same way.
//! - **rrf600**: the units cut into 600-character windows, ranked by reciprocal rank fusion of
//!   BM25 and MiniLM (k = 60), windows packed up to the budget.
//!
//! Figures, per set, split and budget: answer recall (every answer string of the question, as
//! written, in the context), evidence recall (the share of the question's evidence records that
//! the context quotes from), the share of related questions that got nothing, the share of
//! unrelated prompts that got memory, and the mean tokens injected. The product is also shown by
//! question kind. Writes `bench-results/recall.json`.

#[path = "locomo/baselines.rs"]
#[allow(dead_code)]
mod baselines;
#[path = "sessions/beam.rs"]
mod beam;
#[path = "locomo/data.rs"]
#[allow(dead_code)]
mod data;
#[path = "locomo/product.rs"]
#[allow(dead_code)]
mod product;
#[path = "sessions/data.rs"]
#[allow(dead_code)]
mod sessions;

use ai_smartness_vectors::Embedder;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

const BUDGETS: [usize; 3] = [1000, 2000, 4000];
/// Bytes per token, as the product counts them.
const BYTES_PER_TOKEN: usize = 4;
/// Windows the dense and fused baselines cut long units into.
const WINDOW_CHARS: usize = 600;
/// Reciprocal rank fusion's constant (the usual one).
const RRF_K: f64 = 60.0;
const SYSTEMS: [&str; 4] = ["product", "bm25", "minilm", "rrf600"];

/// Tuning memories (the rest of each set is held out).
const TUNE: &[&str] = &[
    "attio-mcp-ts-perf",
    "medianator-rust-opencv",
    "connix-go-mcp",
    "beam-1",
    "beam-2",
    "locomo-conv-26",
    "locomo-conv-30",
];
/// LoCoMo conversations measured here (the locomo bench runs all ten).
const LOCOMO_CONVERSATIONS: usize = 2;

/// What the baselines rank: one unit of history, and the records its text comes from.
struct Unit {
    ids: Vec<String>,
    text: String,
}

/// How the product is given the history.
enum Import {
    /// A Claude Code transcript, with `ai import --format claude-transcript`.
    Transcript(PathBuf),
    /// Captures in `ai import`'s own format.
    Jsonl(String),
}

/// A question with what answers it.
struct Asked {
    q: String,
    /// Strings that must all be in the context (none: answer recall is not measured).
    answers: Vec<String>,
    /// Records holding the evidence (none: nothing answers it, an abstention question).
    evidence: Vec<String>,
    kind: String,
}

/// One memory to measure.
struct Corpus {
    set: &'static str,
    name: String,
    tune: bool,
    units: Vec<Unit>,
    import: Import,
    /// Metadata keys of the product's messages that name their records.
    evidence_keys: &'static [&'static str],
    questions: Vec<Asked>,
    /// Prompts about something else, with their kind (`general`, `programming`, `own`).
    unrelated: Vec<(String, &'static str)>,
}

/// What one system gave for one prompt at one budget.
struct Answer {
    text: String,
    ids: HashSet<String>,
    tokens: usize,
    spoke: bool,
}

/// Sums for one system, one group and one budget.
#[derive(Default, Clone)]
struct Tally {
    answered: usize,
    answer_questions: usize,
    evidence_sum: f64,
    evidence_questions: usize,
    related: usize,
    related_silent: usize,
    related_tokens: usize,
    unrelated: usize,
    unrelated_spoke: usize,
    unrelated_tokens: usize,
    abstention: usize,
    abstention_spoke: usize,
    generic: usize,
    generic_spoke: usize,
}

impl Tally {
    fn add_related(&mut self, q: &Asked, a: &Answer) {
        self.related += 1;
        self.related_tokens += a.tokens;
        if !a.spoke {
            self.related_silent += 1;
        }
        if !q.answers.is_empty() {
            self.answer_questions += 1;
            if q.answers.iter().all(|s| a.text.contains(s.as_str())) {
                self.answered += 1;
            }
        }
        if !q.evidence.is_empty() {
            self.evidence_questions += 1;
            let found = q.evidence.iter().filter(|e| a.ids.contains(*e)).count();
            self.evidence_sum += found as f64 / q.evidence.len() as f64;
        }
    }

    fn json(&self) -> Value {
        let ratio = |n: usize, d: usize| {
            if d == 0 {
                Value::Null
            } else {
                json!((n as f64 / d as f64 * 1000.0).round() / 1000.0)
            }
        };
        json!({
            "answer_recall": ratio(self.answered, self.answer_questions),
            "evidence_recall": if self.evidence_questions == 0 { Value::Null } else {
                json!((self.evidence_sum / self.evidence_questions as f64 * 1000.0).round() / 1000.0) },
            "related_silent": ratio(self.related_silent, self.related),
            "unrelated_spoke": ratio(self.unrelated_spoke, self.unrelated),
            "abstention_spoke": ratio(self.abstention_spoke, self.abstention),
            "generic_spoke": ratio(self.generic_spoke, self.generic),
            "mean_tokens_related": self.related_tokens.checked_div(self.related).unwrap_or(0),
            "mean_tokens_unrelated": self.unrelated_tokens.checked_div(self.unrelated).unwrap_or(0),
            "questions": self.related,
            "unrelated": self.unrelated,
        })
    }
}

fn lines(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/noise")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn noise_prompts() -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = lines("general.txt")
        .into_iter()
        .map(|l| (l, "general"))
        .collect();
    out.extend(
        lines("programming.txt")
            .into_iter()
            .map(|l| (l, "programming")),
    );
    out
}

fn is_tune(name: &str) -> bool {
    TUNE.contains(&name)
}

fn session_corpora() -> Vec<Corpus> {
    let dir = sessions::dataset_dir();
    let all = match sessions::load(&dir) {
        Ok(s) => s,
        Err(e) => {
            println!("claude-sessions: skipped ({e})");
            return Vec::new();
        }
    };
    all.into_iter()
        .map(|s| {
            let units = s
                .units
                .iter()
                .map(|u| Unit {
                    ids: u.uuids.clone(),
                    text: if u.input.is_empty() {
                        u.text.clone()
                    } else {
                        format!("{}\n{}\n{}", u.tool, u.input, u.text)
                    },
                })
                .collect();
            Corpus {
                set: "claude-sessions",
                tune: is_tune(&s.name),
                import: Import::Transcript(dir.join(format!("{}.jsonl", s.name))),
                evidence_keys: &["uuid", "call_uuid"],
                questions: s
                    .questions
                    .iter()
                    .map(|q| Asked {
                        q: q.q.clone(),
                        answers: q.answers.clone(),
                        evidence: q.evidence.clone(),
                        kind: q.kind.clone(),
                    })
                    .collect(),
                unrelated: s.unrelated.iter().map(|u| (u.clone(), "own")).collect(),
                units,
                name: s.name,
            }
        })
        .collect()
}

fn beam_corpora() -> Vec<Corpus> {
    let dir = beam::dataset_dir();
    let all = match beam::load(&dir) {
        Ok(c) => c,
        Err(e) => {
            println!("beam: skipped ({e})");
            return Vec::new();
        }
    };
    all.into_iter()
        .map(|c| {
            let name = format!("beam-{}", c.name);
            // One minute a message from each batch's day: order and days as the conversation
            // has them.
            let mut jsonl = String::new();
            let mut minute = 0i64;
            let mut last_day = None;
            for m in &c.messages {
                let day = m.date.as_deref().and_then(beam::parse_date);
                if day.is_some() && day != last_day {
                    last_day = day;
                    minute = 0;
                }
                let base = last_day
                    .unwrap_or(chrono::NaiveDate::from_ymd_opt(2024, 1, 1).unwrap())
                    .and_hms_opt(9, 0, 0)
                    .unwrap()
                    .and_utc();
                minute += 1;
                let at = base + chrono::Duration::minutes(minute);
                let (tool, source) = if m.role == "assistant" {
                    ("Response", "assistant")
                } else {
                    ("UserPrompt", "user")
                };
                let line = json!({
                    "content": m.content,
                    "tool": tool,
                    "source": source,
                    "timestamp": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                    "metadata": {"chat_id": m.id.to_string()},
                });
                jsonl.push_str(&line.to_string());
                jsonl.push('\n');
            }
            Corpus {
                set: "beam",
                tune: is_tune(&name),
                units: c
                    .messages
                    .iter()
                    .map(|m| Unit {
                        ids: vec![m.id.to_string()],
                        text: m.content.clone(),
                    })
                    .collect(),
                import: Import::Jsonl(jsonl),
                evidence_keys: &["chat_id"],
                questions: c
                    .questions
                    .iter()
                    .map(|q| Asked {
                        q: q.q.clone(),
                        answers: Vec::new(),
                        evidence: q.evidence.iter().map(u64::to_string).collect(),
                        kind: q.kind.clone(),
                    })
                    .collect(),
                unrelated: noise_prompts(),
                name,
            }
        })
        .collect()
}

fn locomo_corpora() -> Vec<Corpus> {
    let (conversations, _) = match data::load(&data::dataset_dir()) {
        Ok(c) => c,
        Err(e) => {
            println!("locomo: skipped ({e})");
            return Vec::new();
        }
    };
    conversations
        .into_iter()
        .take(LOCOMO_CONVERSATIONS)
        .map(|c| {
            let name = format!("locomo-{}", c.sample_id);
            Corpus {
                set: "locomo",
                tune: is_tune(&name),
                units: c
                    .turns
                    .iter()
                    .map(|t| Unit {
                        ids: vec![t.dia_id.clone()],
                        text: t.content.clone(),
                    })
                    .collect(),
                import: Import::Jsonl(data::import_jsonl(&c)),
                evidence_keys: &["dia_id"],
                questions: c
                    .questions
                    .iter()
                    .filter(|q| (1..=4).contains(&q.category))
                    .map(|q| Asked {
                        q: q.text.clone(),
                        answers: Vec::new(),
                        evidence: q.evidence.clone(),
                        kind: format!("category {}", q.category),
                    })
                    .collect(),
                unrelated: noise_prompts(),
                name,
            }
        })
        .collect()
}

/// `text` cut into windows of about [`WINDOW_CHARS`], at line ends where it can.
fn windows(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.split_inclusive('\n') {
        if !current.is_empty() && current.len() + line.len() > WINDOW_CHARS {
            out.push(std::mem::take(&mut current));
        }
        if line.len() > WINDOW_CHARS {
            let mut rest = line;
            while rest.len() > WINDOW_CHARS {
                let mut cut = WINDOW_CHARS;
                while !rest.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.push(rest[..cut].to_string());
                rest = &rest[cut..];
            }
            current.push_str(rest);
        } else {
            current.push_str(line);
        }
    }
    if !current.trim().is_empty() {
        out.push(current);
    }
    out
}

/// Concatenates texts best first up to `budget` tokens, the last one cut there.
fn pack(order: &[usize], texts: &[&str], ids: &[&[String]], budget: usize) -> Answer {
    let room = budget * BYTES_PER_TOKEN;
    let mut text = String::new();
    let mut found = HashSet::new();
    for &i in order {
        if text.len() >= room {
            break;
        }
        let left = room - text.len();
        let piece = texts[i];
        if piece.len() <= left {
            text.push_str(piece);
        } else {
            let mut cut = left;
            while !piece.is_char_boundary(cut) {
                cut -= 1;
            }
            text.push_str(&piece[..cut]);
        }
        text.push('\n');
        found.extend(ids[i].iter().cloned());
    }
    let tokens = text.len().div_ceil(BYTES_PER_TOKEN).min(budget);
    Answer {
        spoke: !text.is_empty(),
        text,
        ids: found,
        tokens,
    }
}

/// Positions of the positive scores, best first (ties: earlier first).
fn order(scores: &[f64]) -> Vec<usize> {
    baselines::rank(scores)
}

/// The baselines over one memory: for each prompt, one answer per system and budget.
struct Baselines {
    unit_texts: Vec<String>,
    unit_ids: Vec<Vec<String>>,
    bm25: baselines::Bm25,
    /// Each window's unit, text and vector.
    window_unit: Vec<usize>,
    window_texts: Vec<String>,
    window_vectors: Vec<Vec<f32>>,
    window_bm25: baselines::Bm25,
}

impl Baselines {
    fn build(corpus: &Corpus, embedder: &mut dyn Embedder) -> Baselines {
        let unit_texts: Vec<String> = corpus.units.iter().map(|u| u.text.clone()).collect();
        let unit_ids = corpus.units.iter().map(|u| u.ids.clone()).collect();
        let refs: Vec<&str> = unit_texts.iter().map(String::as_str).collect();
        let bm25 = baselines::Bm25::new(&refs);
        let mut window_unit = Vec::new();
        let mut window_texts = Vec::new();
        for (i, u) in unit_texts.iter().enumerate() {
            for w in windows(u) {
                window_unit.push(i);
                window_texts.push(w);
            }
        }
        let window_vectors = baselines::embed_all(embedder, &window_texts);
        let wrefs: Vec<&str> = window_texts.iter().map(String::as_str).collect();
        let window_bm25 = baselines::Bm25::new(&wrefs);
        Baselines {
            unit_texts,
            unit_ids,
            bm25,
            window_unit,
            window_texts,
            window_vectors,
            window_bm25,
        }
    }

    /// The three baselines' answers to `prompt` (embedded as `vector`) at every budget.
    fn answer(&self, prompt: &str, vector: &[f32]) -> [Vec<Answer>; 3] {
        let texts: Vec<&str> = self.unit_texts.iter().map(String::as_str).collect();
        let ids: Vec<&[String]> = self.unit_ids.iter().map(Vec::as_slice).collect();
        // BM25 over units.
        let bm25_order = order(&self.bm25.scores(prompt));
        // MiniLM: each unit its best window.
        let window_cos = baselines::cosine_scores(vector, &self.window_vectors);
        let mut unit_cos = vec![f64::MIN; self.unit_texts.len()];
        for (w, &u) in self.window_unit.iter().enumerate() {
            unit_cos[u] = unit_cos[u].max(window_cos[w]);
        }
        let dense_order = order(&unit_cos);
        // RRF over windows.
        let wb = order(&self.window_bm25.scores(prompt));
        let wd = order(&window_cos);
        let mut fused = vec![0f64; self.window_texts.len()];
        for (rank, &w) in wb.iter().enumerate() {
            fused[w] += 1.0 / (RRF_K + rank as f64 + 1.0);
        }
        for (rank, &w) in wd.iter().enumerate() {
            fused[w] += 1.0 / (RRF_K + rank as f64 + 1.0);
        }
        let fused_order = order(&fused);
        let wtexts: Vec<&str> = self.window_texts.iter().map(String::as_str).collect();
        let wids: Vec<&[String]> = self
            .window_unit
            .iter()
            .map(|&u| self.unit_ids[u].as_slice())
            .collect();
        let at = |o: &[usize], t: &[&str], i: &[&[String]]| -> Vec<Answer> {
            BUDGETS.iter().map(|&b| pack(o, t, i, b)).collect()
        };
        [
            at(&bm25_order, &texts, &ids),
            at(&dense_order, &texts, &ids),
            at(&fused_order, &wtexts, &wids),
        ]
    }
}

/// The product over one memory: a project, its daemon and the history imported.
/// A project holding `corpus`, imported through `ai import`, with the seconds the import took
/// (the history placed, threaded and saved) and then the seconds until every unit had its
/// vector (`ai sync`), which the questions wait for.
fn product_project(corpus: &Corpus) -> (tempfile::TempDir, product::Daemon, f64, f64) {
    let dir = tempfile::Builder::new()
        .prefix("air")
        .tempdir_in("/tmp")
        .expect("a project folder");
    let root = dir.path().canonicalize().unwrap();
    let daemon = product::Daemon::start(&root);
    let t = Instant::now();
    match &corpus.import {
        Import::Transcript(file) => {
            product::ai(
                &root,
                &[
                    "import",
                    "--format",
                    "claude-transcript",
                    &file.to_string_lossy(),
                ],
            )
            .unwrap_or_else(|e| panic!("{e}"));
        }
        Import::Jsonl(text) => {
            let file = root.join("history.jsonl");
            std::fs::write(&file, text).unwrap();
            product::ai(&root, &["import", &file.to_string_lossy()])
                .unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let imported = t.elapsed().as_secs_f64();
    let t = Instant::now();
    product::ai(&root, &["sync"]).unwrap_or_else(|e| panic!("{e}"));
    (dir, daemon, imported, t.elapsed().as_secs_f64())
}

fn product_answer(d: &mut product::Daemon, corpus: &Corpus, prompt: &str, budget: usize) -> Answer {
    let reply = d.context(prompt, budget);
    let mut ids = HashSet::new();
    for m in reply.messages.as_array().into_iter().flatten() {
        for key in corpus.evidence_keys {
            match &m["metadata"][*key] {
                Value::String(s) => {
                    ids.insert(s.clone());
                }
                Value::Number(n) => {
                    ids.insert(n.to_string());
                }
                _ => {}
            }
        }
    }
    let spoke = reply.messages.as_array().is_some_and(|m| !m.is_empty());
    if budget == 2000 {
        let found: Vec<Value> = reply
            .messages
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| {
                let keys: Vec<Value> = corpus
                    .evidence_keys
                    .iter()
                    .map(|k| m["metadata"][*k].clone())
                    .collect();
                json!([keys, m["part"], m["why"]])
            })
            .collect();
        // Where each record ranks, in a context wide enough to hold most of the ranking.
        let wide: Vec<Value> = if product::dumping() {
            let w = d.context(prompt, 30_000);
            w.messages
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| {
                    let keys: Vec<Value> = corpus
                        .evidence_keys
                        .iter()
                        .map(|k| m["metadata"][*k].clone())
                        .collect();
                    json!([keys, m["part"], m["why"]["score"]])
                })
                .collect()
        } else {
            Vec::new()
        };
        product::dump_line(&json!({"memory": corpus.name, "prompt": prompt,
            "gate": reply.gate, "messages": found.len(), "tokens": reply.tokens,
            "context": reply.text, "found": found, "wide": wide}));
    }
    Answer {
        text: reply.text,
        ids,
        tokens: if spoke { reply.tokens } else { 0 },
        spoke,
    }
}

/// Group name of a memory: its set and split.
fn group(corpus: &Corpus) -> String {
    format!(
        "{} / {}",
        corpus.set,
        if corpus.tune { "tune" } else { "held-out" }
    )
}

type Tallies = BTreeMap<(String, usize, usize), Tally>;

fn main() {
    let quick = std::env::var_os("AI_BENCH_QUICK").is_some();
    let only = std::env::var("AI_BENCH_ONLY").ok();
    let sets: Vec<String> = std::env::var("AI_BENCH_SETS")
        .unwrap_or_else(|_| "sessions,beam,locomo".into())
        .split(',')
        .map(|s| s.trim().to_string())
        .collect();
    let mut corpora = Vec::new();
    if sets.iter().any(|s| s == "sessions") {
        corpora.extend(session_corpora());
    }
    if sets.iter().any(|s| s == "beam") {
        corpora.extend(beam_corpora());
    }
    if sets.iter().any(|s| s == "locomo") {
        corpora.extend(locomo_corpora());
    }
    if let Some(names) = &only {
        corpora.retain(|c| names.split(',').any(|n| n.trim() == c.name));
    }
    if quick {
        let mut seen = HashSet::new();
        corpora.retain(|c| seen.insert(group(c)));
    }
    let data_dir = ai_smartness::embed::assets::data_dir();
    let (mut embedder, degraded) = ai_smartness::embed::load_best(&data_dir);
    if let Some(reason) = &degraded {
        eprintln!(
            "!! recall: the embedder is DEGRADED ({}): {reason}",
            embedder.kind()
        );
    }
    println!(
        "ai-smartness recall benchmark: {} memories; budgets {:?} tokens (4 bytes a token); embedder {}",
        corpora.len(),
        BUDGETS,
        embedder.kind()
    );
    let mut hits = std::env::var_os("AI_BENCH_HITS")
        .map(|p| std::fs::File::create(p).expect("AI_BENCH_HITS: cannot create the file"));
    let mut tallies: Tallies = BTreeMap::new();
    let mut kinds: BTreeMap<(String, String, usize), Tally> = BTreeMap::new();
    let mut per_memory = Vec::new();
    // Seconds per set: the imports, then the units' vectors made after them.
    let mut import_totals: BTreeMap<&str, f64> = Default::default();
    let mut vectors_totals: BTreeMap<&str, f64> = Default::default();
    for corpus in &corpora {
        let g = group(corpus);
        let t = Instant::now();
        let base = std::env::var_os("AI_BENCH_PRODUCT_ONLY")
            .is_none()
            .then(|| Baselines::build(corpus, embedder.as_mut()));
        let built = t.elapsed().as_secs_f64();
        let (_dir, mut daemon, import_secs, vectors_secs) = product_project(corpus);
        *import_totals.entry(corpus.set).or_default() += import_secs;
        *vectors_totals.entry(corpus.set).or_default() += vectors_secs;
        let related_prompts: Vec<String> = corpus.questions.iter().map(|q| q.q.clone()).collect();
        let unrelated_prompts: Vec<String> = corpus.unrelated.iter().map(|u| u.0.clone()).collect();
        let q_vectors = baselines::embed_all(embedder.as_mut(), &related_prompts);
        let u_vectors = baselines::embed_all(embedder.as_mut(), &unrelated_prompts);
        let mut memory = Tally::default();
        for (q, v) in corpus.questions.iter().zip(&q_vectors) {
            let answers = base.as_ref().map(|b| b.answer(&q.q, v));
            for (bi, &budget) in BUDGETS.iter().enumerate() {
                let mine = product_answer(&mut daemon, corpus, &q.q, budget);
                let mut all = vec![&mine];
                if let Some(a) = &answers {
                    all.extend([&a[0][bi], &a[1][bi], &a[2][bi]]);
                }
                for (si, a) in all.into_iter().enumerate() {
                    if let Some(f) = hits.as_mut() {
                        let answered = q.answers.iter().all(|s| a.text.contains(s.as_str()));
                        let evidence = q.evidence.iter().filter(|e| a.ids.contains(*e)).count();
                        let line = json!({"memory": corpus.name, "q": q.q, "kind": q.kind,
                            "system": SYSTEMS[si], "budget": budget, "answered": answered,
                            "evidence": [evidence, q.evidence.len()], "tokens": a.tokens});
                        let _ = writeln!(f, "{line}");
                    }
                    let tally = tallies.entry((g.clone(), si, budget)).or_default();
                    if q.evidence.is_empty() {
                        tally.abstention += 1;
                        tally.abstention_spoke += usize::from(a.spoke);
                        continue;
                    }
                    tally.add_related(q, a);
                    if si == 0 {
                        kinds
                            .entry((corpus.set.to_string(), q.kind.clone(), budget))
                            .or_default()
                            .add_related(q, a);
                        if budget == 2000 {
                            memory.add_related(q, a);
                        }
                    }
                }
            }
        }
        for ((prompt, kind), v) in corpus.unrelated.iter().zip(&u_vectors) {
            let answers = base.as_ref().map(|b| b.answer(prompt, v));
            for (bi, &budget) in BUDGETS.iter().enumerate() {
                let mine = product_answer(&mut daemon, corpus, prompt, budget);
                let mut all = vec![&mine];
                if let Some(a) = &answers {
                    all.extend([&a[0][bi], &a[1][bi], &a[2][bi]]);
                }
                for (si, a) in all.into_iter().enumerate() {
                    let tally = tallies.entry((g.clone(), si, budget)).or_default();
                    if *kind == "programming" {
                        tally.generic += 1;
                        tally.generic_spoke += usize::from(a.spoke);
                        continue;
                    }
                    tally.unrelated += 1;
                    tally.unrelated_spoke += usize::from(a.spoke);
                    tally.unrelated_tokens += a.tokens;
                    if si == 0 && budget == 2000 && *kind != "programming" {
                        memory.unrelated += 1;
                        memory.unrelated_spoke += usize::from(a.spoke);
                    }
                }
            }
        }
        let m = memory.json();
        println!(
            "  {:<26} {:<9} {:>5} units  import {:>5.1} s (+{:>5.1} s vectors)  baselines {:>5.1} s  product at 2,000: answer {} evidence {} silent {} unrelated {}",
            corpus.name,
            if corpus.tune { "tune" } else { "held-out" },
            corpus.units.len(),
            import_secs,
            vectors_secs,
            built,
            m["answer_recall"],
            m["evidence_recall"],
            m["related_silent"],
            m["unrelated_spoke"],
        );
        per_memory.push(
            json!({"name": corpus.name, "set": corpus.set, "tune": corpus.tune,
            "units": corpus.units.len(), "import_secs": import_secs,
            "vectors_secs": vectors_secs, "product_2000": m}),
        );
    }
    for (set, secs) in &import_totals {
        println!(
            "importing every memory of {set}: {secs:.1} s (then {:.1} s until every unit had its \
             vector, in the background)",
            vectors_totals.get(set).copied().unwrap_or_default()
        );
    }

    // Tables: per group and budget, every system.
    let groups: Vec<String> = tallies
        .keys()
        .map(|(g, _, _)| g.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = serde_json::Map::new();
    for g in &groups {
        println!("\n## {g}\n");
        println!(
            "{:>6}  {:<8} {:>8} {:>9} {:>8} {:>10} {:>9} {:>8} {:>8}",
            "budget",
            "system",
            "answer",
            "evidence",
            "silent",
            "unrelated",
            "tokens",
            "abstain",
            "generic"
        );
        let mut group_json = serde_json::Map::new();
        for &budget in &BUDGETS {
            for (si, system) in SYSTEMS.iter().enumerate() {
                let Some(t) = tallies.get(&(g.clone(), si, budget)) else {
                    continue;
                };
                let j = t.json();
                let show = |v: &Value| match v.as_f64() {
                    Some(x) => format!("{x:.3}"),
                    None => "n/a".into(),
                };
                println!(
                    "{budget:>6}  {system:<8} {:>8} {:>9} {:>8} {:>10} {:>9} {:>8} {:>8}",
                    show(&j["answer_recall"]),
                    show(&j["evidence_recall"]),
                    show(&j["related_silent"]),
                    show(&j["unrelated_spoke"]),
                    j["mean_tokens_related"],
                    show(&j["abstention_spoke"]),
                    show(&j["generic_spoke"]),
                );
                group_json.insert(format!("{system}@{budget}"), j);
            }
        }
        out.insert(g.clone(), Value::Object(group_json));
    }
    println!("\n## The product by question kind (all splits)\n");
    println!(
        "{:<16} {:<28} {:>6} {:>8} {:>9} {:>8} {:>5}",
        "set", "kind", "budget", "answer", "evidence", "silent", "n"
    );
    let mut kinds_json = Vec::new();
    for ((set, kind, budget), t) in &kinds {
        let j = t.json();
        let show = |v: &Value| match v.as_f64() {
            Some(x) => format!("{x:.3}"),
            None => "n/a".into(),
        };
        println!(
            "{set:<16} {kind:<28} {budget:>6} {:>8} {:>9} {:>8} {:>5}",
            show(&j["answer_recall"]),
            show(&j["evidence_recall"]),
            show(&j["related_silent"]),
            j["questions"]
        );
        kinds_json.push(json!({"set": set, "kind": kind, "budget": budget, "figures": j}));
    }
    let results = json!({
        "embedder": embedder.kind().to_string(),
        "budgets": BUDGETS,
        "groups": out,
        "kinds": kinds_json,
        "memories": per_memory,
    });
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench-results");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(
        dir.join("recall.json"),
        serde_json::to_vec_pretty(&results).unwrap_or_default(),
    );
}
