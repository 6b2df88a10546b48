//! Extraction: title, intent, summary, subjects, questions, decisions and
//! key concepts of a prepared capture.
//!
//! An LLM-backed [`Extractor`] will come later; [`LocalExtractor`] is the
//! always-available fallback. It is deterministic, needs no network and
//! runs in well under a millisecond on a 3,000-character capture, so the
//! daemon can call it inline for every tool output.
//!
//! How the local extractor works:
//!
//! * tokens are words, code identifiers (`CamelCase`, `snake_case`,
//!   `dotted.names`, `a::b` paths) and file paths;
//! * English, French and Spanish stopwords, action verbs ("fix",
//!   "corriger", "arreglar"...), polite filler and language keywords are
//!   dropped;
//! * each term is scored by (sub-linear) frequency with boosts for
//!   identifiers, file names from paths (`src/store/atomic.rs` gives the
//!   topic `atomic.rs` and the directory `store`), capitalised technical
//!   terms, and words near the start (where the subject is usually
//!   stated); word pairs that repeat become two-word topics;
//! * the title is a *subject* noun phrase built from the top terms
//!   ("Atomic writes in store/atomic.rs"), never an action
//!   ("Fixing the store").

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::source::SourceType;

/// Only the first this-many characters are analysed: the subject of a
/// capture is stated early, and it bounds the cost per capture.
pub const MAX_EXTRACTION_INPUT: usize = 3000;
/// Shortest accepted topic, in characters.
pub const MIN_TOPIC_CHARS: usize = 3;
/// At most this many `subjects`.
pub const MAX_SUBJECTS: usize = 6;
/// At most this many `key_concepts`.
pub const MAX_KEY_CONCEPTS: usize = 8;
/// Maximum `summary` length, in characters.
pub const MAX_SUMMARY_CHARS: usize = 240;
/// Maximum `intent` length, in characters.
pub const MAX_INTENT_CHARS: usize = 160;
/// At most this many `questions` and `decisions`.
pub const MAX_LIST_ITEMS: usize = 5;
/// Title length bounds, in words.
pub const TITLE_MIN_WORDS: usize = 3;
/// See [`TITLE_MIN_WORDS`].
pub const TITLE_MAX_WORDS: usize = 8;

/// What an extractor found in a capture.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    /// Subject of the capture, 3-8 words, a noun phrase.
    pub title: String,
    /// For prompts: what the user asked (first sentence). Empty otherwise.
    pub intent: String,
    /// The most informative one or two sentences.
    pub summary: String,
    /// 3-6 lowercase topics used for matching threads.
    pub subjects: Vec<String>,
    /// Sentences that ask something.
    pub questions: Vec<String>,
    /// Sentences that record a decision.
    pub decisions: Vec<String>,
    /// Up to 8 salient terms, identifiers in their original case.
    pub key_concepts: Vec<String>,
}

/// Why an extraction failed.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    /// Nothing to analyse.
    #[error("nothing to extract: content is empty")]
    EmptyContent,
    /// The backend (e.g. an LLM endpoint) cannot be reached or is disabled.
    #[error("extractor unavailable: {0}")]
    Unavailable(String),
    /// The backend answered with an error.
    #[error("extractor backend failed: {0}")]
    Backend(String),
    /// The backend answered something that is not a valid extraction.
    #[error("invalid extractor output: {0}")]
    InvalidOutput(String),
    /// The backend did not answer in time.
    #[error("extractor timed out after {0:?}")]
    Timeout(std::time::Duration),
}

/// Turns prepared content into an [`Extraction`].
///
/// An LLM extractor will implement this later; the local one needs no
/// network. Implementations must be cheap to share between threads.
pub trait Extractor: Send + Sync {
    /// Extracts from `content` (already cleaned and redacted).
    fn extract(&self, content: &str, source: SourceType) -> Result<Extraction, ExtractError>;
    /// Short stable name, recorded with the extraction for diagnostics.
    fn name(&self) -> &'static str;
}

/// Deterministic heuristic extractor (English, French, Spanish).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalExtractor;

impl Extractor for LocalExtractor {
    fn extract(&self, content: &str, source: SourceType) -> Result<Extraction, ExtractError> {
        let limited = limit_chars(content.trim(), MAX_EXTRACTION_INPUT);
        if limited.trim().is_empty() {
            return Err(ExtractError::EmptyContent);
        }
        Ok(extract_local(limited, source))
    }

    fn name(&self) -> &'static str {
        "local"
    }
}

// ---------------------------------------------------------------------------
// Vocabulary
// ---------------------------------------------------------------------------

/// Words too vague to name a subject, per language (fillers, weak verbs, politeness), on top
/// of the function words every text tool skips ([`ai_smartness_text`]).
#[rustfmt::skip]
const VAGUE_EN: &[&str] = &[
    "actually", "almost", "already", "although", "always", "among", "another", "anything",
    "around", "back", "basically", "currently", "everything", "getting", "go", "goes", "going",
    "gone", "hasn", "haven", "instead", "know", "last", "least", "less", "lets", "lot", "lots",
    "many", "maybe", "need", "needs", "neither", "never", "next", "nothing", "often", "ok", "okay",
    "one", "onto", "others", "per", "perhaps", "please", "probably", "quite", "rather", "really",
    "right", "see", "seem", "seems", "simply", "since", "something", "sometimes", "still", "stuff",
    "sure", "thank", "thanks", "thing", "things", "think", "though", "three", "two", "use", "used",
    "uses", "using", "usually", "via", "want", "wants", "way", "well", "whatever", "yeah", "yes",
    "able", "across", "along", "seen", "says", "said", "tell", "told", "give", "gives", "take",
    "takes", "put", "keep", "keeps", "kept", "find", "found", "work", "works", "worked", "working",
    "decide", "decided", "decision", "chose", "chosen", "choose",
];

#[rustfmt::skip]
const VAGUE_FR: &[&str] = &[
    "afin", "ai", "ainsi", "as", "aucun", "autre", "autres", "avant", "avez", "avons", "bien",
    "celle", "celles", "celui", "cependant", "ceux", "chaque", "chose", "choses", "comment",
    "depuis", "doit", "doivent", "dois", "dont", "entre", "es", "eux", "faut", "jamais", "juste",
    "là", "lequel", "lorsque", "maintenant", "merci", "moins", "non", "oui", "parce", "pendant",
    "peut", "peuvent", "peux", "pourquoi", "pourrais", "pourrait", "pouvez", "puis", "qu",
    "quelque", "quelques", "rien", "son", "stp", "svp", "toujours", "vers", "veux", "voici",
    "voilà", "voudrais", "voulez", "vraiment", "faire", "fais", "sommes", "êtes", "après",
    "aujourd", "hui", "bonjour", "salut", "aide", "aider",
];

#[rustfmt::skip]
const VAGUE_ES: &[&str] = &[
    "alguna", "algunas", "alguno", "ahora", "ahí", "así", "aunque", "aún", "bien", "cosa", "cosas",
    "cuál", "cuándo", "después", "durante", "entonces", "estas", "estoy", "favor", "gracias", "he",
    "hemos", "hola", "mientras", "mucho", "necesito", "nunca", "os", "otras", "podrías", "puede",
    "pueden", "puedes", "quiero", "quieres", "sin", "solo", "sólo", "tan", "tanto", "tengo",
    "tienen", "todavía", "vez", "veces", "hace", "hacer", "haz", "ayuda", "ayudar", "usar", "uso",
];

/// Action verbs and their common forms: a title must describe a subject,
/// not a task ("Fixing the pool" → "Connection pool timeouts").
#[rustfmt::skip]
const ACTION_VERBS: &[&str] = &[
    // English
    "fix", "fixes", "fixed", "fixing", "add", "adds", "added", "adding", "implement",
    "implements", "implemented", "implementing", "run", "runs", "ran", "running", "create",
    "creates", "created", "creating", "update", "updates", "updated", "updating", "make",
    "makes", "made", "making", "remove", "removes", "removed", "removing", "delete", "deletes",
    "deleted", "deleting", "change", "changed", "changing", "modify", "modifies", "modified",
    "modifying", "improve", "improves", "improved", "improving", "refactor", "refactors",
    "refactored", "refactoring", "check", "checks", "checked", "checking", "try", "tries",
    "tried", "trying", "help", "helps", "helping", "show", "shows", "showed", "showing",
    "explain", "explains", "explaining", "investigate", "investigating", "look", "looks",
    "looked", "looking", "review", "reviewing", "write", "writing", "wrote", "install",
    "installing", "move", "moving", "rename", "renaming", "debug", "debugging", "resolve",
    "resolving",
    // French
    "corriger", "corrige", "corrigez", "corrigé", "ajouter", "ajoute", "ajoutez", "ajouté",
    "implémenter", "implémente", "implémentez", "créer", "crée", "créez", "mettre", "mets",
    "mettez", "lancer", "lance", "lancez", "exécuter", "exécute", "exécutez", "vérifier",
    "vérifie", "vérifiez", "regarder", "regarde", "regardez", "modifier", "modifie",
    "modifiez", "supprimer", "supprime", "supprimez", "changer", "améliorer", "améliore",
    "réparer", "répare", "essayer", "essaie", "expliquer", "explique", "expliquez", "trouver",
    "trouve", "écrire", "écris", "refactoriser", "déboguer", "installer", "renommer", "gérer",
    // Spanish
    "arreglar", "arregla", "arreglame", "arréglame", "corregir", "corrige", "corrija", "añadir",
    "añade", "agregar", "agrega", "implementar", "implementa", "crear", "crea", "actualizar",
    "actualiza", "ejecutar", "ejecuta", "revisar", "revisa", "cambiar", "cambia", "eliminar",
    "elimina", "borrar", "borra", "mejorar", "mejora", "explicar", "explica", "escribir",
    "escribe", "buscar", "busca", "instalar", "depurar", "renombrar",
];

/// Programming-language keywords and ubiquitous std names: frequent in code
/// captures, meaningless as topics.
#[rustfmt::skip]
const CODE_WORDS: &[&str] = &[
    "fn", "pub", "let", "mut", "impl", "self", "struct", "enum", "match", "return", "mod",
    "crate", "super", "where", "trait", "type", "const", "static", "async", "await", "move",
    "ref", "dyn", "loop", "while", "true", "false", "none", "some", "err", "unwrap", "expect",
    "def", "class", "import", "function", "var", "this", "new", "null", "nil", "undefined",
    "void", "int", "bool", "string", "str", "u8", "u16", "u32", "u64", "usize", "i32", "i64",
    "f32", "f64", "vec", "option", "box", "arc", "clone", "into", "iter", "map", "collect",
    "println", "format", "assert", "assert_eq", "cfg", "derive", "default", "result", "elif",
    "lambda", "pass", "yield", "except", "raise", "try", "catch", "throw", "throws", "public",
    "private", "protected", "package", "export", "require", "module", "interface", "extends",
    "implements", "echo", "then", "done", "esac", "local", "sudo", "args", "arg", "len",
    "stdout", "stderr", "stdin", "todo", "fixme", "http", "https", "www", "com", "org", "html",
    "redacted", "truncated", "chars", "line", "lines", "file", "files", "fichier", "fichiers",
    "archivo", "archivos", "bytes", "output", "input", "value", "values", "data", "info",
    "main", "lib", "path", "paths", "std", "tmp", "unwrap_or", "unwrap_or_default", "unwrap_or_else",
    "to_string", "to_owned", "as_str", "as_ref", "into_iter", "iter_mut", "is_some", "is_none",
    "is_empty", "push_str", "ok_or", "ok_or_else", "map_err", "and_then", "to_vec", "as_bytes",
];

/// Directory names too generic to be topics or locations.
#[rustfmt::skip]
const GENERIC_DIRS: &[&str] = &[
    "src", "lib", "bin", "home", "usr", "tmp", "var", "etc", "opt", "dev", "users", "user",
    "project", "projects", "app", "code", "repo", "repos", "work", "workspace", "target",
    "debug", "release", "node_modules", "dist", "build", "out", "pkg", "internal", "cmd",
    "root", "mnt", "local", "share", "include", "vendor", "packages", "github.com",
];

/// File stems too generic to say what a file is about.
#[rustfmt::skip]
const GENERIC_STEMS: &[&str] = &[
    "mod", "main", "lib", "index", "init", "__init__", "utils", "util", "helpers", "common",
    "readme", "license", "setup", "package", "cargo", "makefile", "dockerfile",
];

/// Extensions that make a dotted token a file name.
#[rustfmt::skip]
const FILE_EXTENSIONS: &[&str] = &[
    "rs", "py", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "rb", "php", "c",
    "h", "cc", "cpp", "hpp", "cs", "swift", "scala", "sh", "bash", "zsh", "fish", "ps1",
    "toml", "json", "jsonl", "yaml", "yml", "xml", "md", "mdx", "rst", "txt", "csv", "sql",
    "html", "css", "scss", "vue", "svelte", "lock", "cfg", "ini", "conf", "env", "proto",
    "graphql", "tf", "nix", "lua", "ex", "exs", "erl", "hs", "ml", "zig", "dart", "r", "ipynb",
    "log", "pem", "dockerfile", "mk",
];

/// Sentence fragments that mark a decision.
const DECISION_MARKERS: &[&str] = &[
    // English
    "decided",
    "decision:",
    "we'll use",
    "we will use",
    "we'll go with",
    "let's go with",
    "let's use",
    "going with",
    "go with",
    "chose",
    "chosen",
    "switch to",
    "switched to",
    "switching to",
    "settled on",
    "opted for",
    "we'll keep",
    "we will keep",
    // French
    "décidé",
    "décision",
    "on garde",
    "on utilise",
    "on part sur",
    "on va utiliser",
    "on passe à",
    "on passe sur",
    "nous utiliserons",
    "choisi",
    "opté",
    // Spanish
    "decidimos",
    "decidido",
    "decisión",
    "vamos a usar",
    "usaremos",
    "elegimos",
    "elegido",
    "nos quedamos con",
    "cambiamos a",
    "optamos",
];

/// All decision markers as one case-insensitive alternation, delimited by
/// non-word characters (so "go with" matches neither "algo with" nor
/// "go without"); `'` also matches the typographic `’`.
static DECISION: LazyLock<Regex> = LazyLock::new(|| {
    let alternation = DECISION_MARKERS
        .iter()
        .map(|m| regex::escape(m).replace('\'', "['’]"))
        .collect::<Vec<_>>()
        .join("|");
    Regex::new(&format!(
        r"(?i)(?:^|[^\p{{L}}\p{{N}}_])(?:{alternation})(?:[^\p{{L}}\p{{N}}_]|$)"
    ))
    .expect("valid DECISION regex")
});

static STOPWORDS: LazyLock<HashSet<&'static str>> = LazyLock::new(|| {
    ai_smartness_text::LANGUAGES
        .iter()
        .flat_map(|l| l.iter())
        .chain(VAGUE_EN)
        .chain(VAGUE_FR)
        .chain(VAGUE_ES)
        .chain(ACTION_VERBS)
        .chain(CODE_WORDS)
        .copied()
        .collect()
});

static ACTION_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| ACTION_VERBS.iter().copied().collect());

/// Words, identifiers, dotted names, `a::b` paths and `a/b/c.ext` paths.
static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[\p{L}\p{N}_]+(?:(?:\.|::|/|-)[\p{L}\p{N}_]+)*").expect("valid TOKEN regex")
});

/// Placeholders and markers our own pipeline inserts.
static PIPELINE_MARKERS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[REDACTED:[a-z_]+\]|\[\.\.\. \d+ chars truncated \.\.\.\]")
        .expect("valid PIPELINE_MARKERS regex")
});

/// Hex literals (`0x1f`), hashes (7+ hex digits) and UUID-like runs of
/// hex groups: unique strings, never topics. (Hand-written instead of a
/// regex: it runs on every token.)
fn is_hexish(s: &str) -> bool {
    let bytes = s.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' && (bytes[1] | 0x20) == b'x' {
        return bytes[2..].iter().all(u8::is_ascii_hexdigit);
    }
    let mut groups = 0usize;
    for group in s.split('-') {
        if group.is_empty() || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
            return false;
        }
        groups += 1;
    }
    groups >= 3 || (groups == 1 && s.len() >= 7)
}

// ---------------------------------------------------------------------------
// Language
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    En,
    Fr,
    Es,
}

/// Function words distinctive enough to vote for a language.
#[rustfmt::skip]
const LANG_EN: &[&str] = &[
    "the", "and", "is", "of", "to", "with", "that", "this", "it", "for", "are", "was", "why",
    "how", "what", "when", "in", "can", "you", "should",
];
#[rustfmt::skip]
const LANG_FR: &[&str] = &[
    "le", "les", "des", "est", "une", "pour", "dans", "qui", "avec", "pas", "sur", "du", "au",
    "cette", "je", "nous", "vous", "ça", "pourquoi", "comment", "quand", "et", "peux",
];
#[rustfmt::skip]
const LANG_ES: &[&str] = &[
    "el", "los", "las", "una", "para", "por", "con", "del", "está", "es", "cómo", "qué", "pero",
    "muy", "esto", "este", "esta", "porque", "cuando", "y", "puedes", "se",
];

struct Words {
    title_in: &'static str,
    title_and: &'static str,
    contents_of: &'static str,
    changes_to: &'static str,
    notes_on: &'static str,
    files_in: &'static str,
    use_of: &'static str,
}

impl Lang {
    fn words(self) -> Words {
        match self {
            Lang::En => Words {
                title_in: "in",
                title_and: "and",
                contents_of: "Contents of",
                changes_to: "Changes to",
                notes_on: "Notes on",
                files_in: "Files in",
                use_of: "Use of",
            },
            Lang::Fr => Words {
                title_in: "dans",
                title_and: "et",
                contents_of: "Contenu de",
                changes_to: "Modifications de",
                notes_on: "Notes sur",
                files_in: "Fichiers dans",
                use_of: "Utilisation de",
            },
            Lang::Es => Words {
                title_in: "en",
                title_and: "y",
                contents_of: "Contenido de",
                changes_to: "Cambios en",
                notes_on: "Notas sobre",
                files_in: "Archivos en",
                use_of: "Uso de",
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Term analysis
// ---------------------------------------------------------------------------

/// What a term is; the order is the "upgrade" order when a term is seen in
/// several forms (`redis` then `Redis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Word,
    Dir,
    Tech,
    Ident,
    File,
}

impl Kind {
    fn weight(self) -> f64 {
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
struct Term {
    /// Lowercase form used in `subjects`.
    subject: String,
    /// Display form (original case for identifiers / technical terms).
    concept: String,
    kind: Kind,
    count: u32,
    /// Occurrences seen capitalised mid-sentence (or as an acronym).
    caps: u32,
    weight_sum: f64,
    first: usize,
}

/// A pair of adjacent content words, possibly joined by a connector
/// ("error de conexión", "list of files").
#[derive(Debug, Clone, Default)]
struct Pair {
    count: u32,
    connector: Option<&'static str>,
    /// Token index of the first occurrence.
    first: usize,
}

/// Words that may sit between the two words of a pair.
const CONNECTORS: &[&str] = &["of", "de", "du", "des", "del", "d"];

/// Tokens of the first sentence (or line) weigh more, up to this many:
/// prompts state their subject first and tool outputs start with the path
/// or command.
const EARLY_TOKENS: usize = 25;
const EARLY_BOOST: f64 = 2.0;

#[derive(Default)]
struct Analysis {
    terms: HashMap<String, Term>,
    /// Adjacent content-word pairs, in text order.
    pairs: HashMap<(String, String), Pair>,
    /// File key → display location (`store/atomic.rs`).
    locations: HashMap<String, String>,
    /// File stems seen in paths (`atomic` for `atomic.rs`).
    stems: HashSet<String>,
    lang_votes: [u32; 3],
    tokens: usize,
}

impl Analysis {
    fn add(&mut self, key: &str, subject: &str, concept: &str, kind: Kind, weight: f64) {
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

    fn lang(&self) -> Lang {
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

fn analyse(text: &str) -> Analysis {
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
fn settle_case(a: &mut Analysis) {
    for term in a.terms.values_mut() {
        if term.kind == Kind::Tech && term.caps * 2 < term.count {
            term.kind = Kind::Word;
            term.concept = term.subject.clone();
        }
    }
}

fn vote_language(a: &mut Analysis, tok: &str) {
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
fn is_definition(before: &str) -> bool {
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
fn is_sentence_start(text: &str, pos: usize) -> bool {
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
fn classify(
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
fn classify_simple(
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
fn add_path(a: &mut Analysis, tok: &str, boost: f64) {
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

fn add_stem(a: &mut Analysis, file: &str, boost: f64) {
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
fn add_dotted(a: &mut Analysis, tok: &str, boost: f64) {
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

fn is_file_name(name: &str) -> bool {
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && stem.chars().any(char::is_alphabetic)
        && FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
}

fn is_location_dir(dir: &str) -> bool {
    dir.chars().count() >= 2
        && !GENERIC_DIRS.contains(&dir.to_lowercase().as_str())
        && !dir.starts_with('.')
        && dir
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'))
        && dir.chars().any(char::is_alphabetic)
}

fn is_meaningful_dir(dir: &str) -> bool {
    let lower = dir.to_lowercase();
    dir.chars().count() >= MIN_TOPIC_CHARS
        && !GENERIC_DIRS.contains(&lower.as_str())
        && !dir.starts_with('.')
        && dir.chars().any(char::is_alphabetic)
        && !is_hexish(dir)
}

/// ≥ 3 chars, not a number, hash, UUID or hex literal.
fn is_topic_candidate(lower: &str) -> bool {
    lower.chars().count() >= MIN_TOPIC_CHARS
        && lower.chars().any(char::is_alphabetic)
        && !(is_hexish(lower) && lower.chars().any(|c| c.is_ascii_digit()))
}

/// `AtomicWriter` → `atomic writer`, `parseHTTPHeader` → `parse http header`.
fn split_camel(tok: &str) -> String {
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
fn merge_plurals(a: &mut Analysis) {
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

// ---------------------------------------------------------------------------
// Ranking
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Candidate {
    /// Term key, or `"a b"` for a pair.
    key: String,
    subject: String,
    concept: String,
    kind: Kind,
    /// Component keys for two-word topics.
    parts: Option<(String, String)>,
    score: f64,
    first: usize,
}

/// Sub-linear frequency: the 10th mention adds less than the 2nd.
fn tf_score(weight_sum: f64, count: u32) -> f64 {
    if count == 0 {
        return 0.0;
    }
    let c = f64::from(count);
    weight_sum / c * (1.0 + c.ln())
}

/// Pairs seen at least this often become two-word topics.
const PAIR_MIN_COUNT: u32 = 2;
const PAIR_BOOST: f64 = 1.6;

fn rank(a: &Analysis) -> Vec<Candidate> {
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
const WEAK_TOPIC_RATIO: f64 = 0.25;

fn select_subjects(ranked: &[Candidate]) -> Vec<String> {
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

fn select_concepts(ranked: &[Candidate]) -> Vec<String> {
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

// ---------------------------------------------------------------------------
// Title
// ---------------------------------------------------------------------------

/// A shell command recognised from a `$ cmd` first line or from the shape of
/// its output, for titles like "Cargo test failures in store/atomic.rs".
struct CommandInfo {
    label: String,
    outcome: Option<&'static str>,
}

/// Programs whose first argument is a subcommand worth naming.
#[rustfmt::skip]
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "cargo", "git", "npm", "pnpm", "yarn", "bun", "deno", "go", "docker", "kubectl", "pip",
    "uv", "poetry", "rustup", "dotnet", "mvn", "gradle", "make", "helm", "terraform", "gh",
    "brew", "apt", "systemctl", "npx",
];

static GIT_LOG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^commit [0-9a-f]{40}").expect("valid GIT_LOG regex"));
static GO_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:ok|FAIL|---\s+FAIL:)\s+\S+").expect("valid GO_TEST regex")
});
static TS_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"error TS\d{4}").expect("valid TS_ERROR regex"));

fn detect_command(text: &str) -> Option<CommandInfo> {
    let first_line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let label = match first_line.strip_prefix("$ ") {
        Some(cmd) => command_label(cmd)?,
        None => signature_label(text)?,
    };
    let lower_label = label.to_lowercase();
    let failed = text.contains("FAILED")
        || text.contains("failures:")
        || text.contains("panicked at")
        || text.contains("FAIL ")
        || text.contains("--- FAIL")
        || text.contains("npm ERR!");
    let errored = text.contains("error[") || text.contains("error:") || text.contains("fatal:");
    let outcome = if lower_label.contains("test") || lower_label.contains("jest") {
        Some(if failed { "failures" } else { "results" })
    } else if errored || failed {
        Some("errors")
    } else if text.contains("warning:") {
        Some("warnings")
    } else {
        None
    };
    Some(CommandInfo { label, outcome })
}

/// `cargo test --lib` → "Cargo test"; `FOO=1 sudo ./x.sh` → "X.sh".
fn command_label(cmd: &str) -> Option<String> {
    let mut words = cmd
        .split_whitespace()
        .skip_while(|w| w.contains('=') || matches!(*w, "sudo" | "time" | "env" | "nice"));
    let program_path = words.next()?;
    let program = program_path.rsplit('/').next().unwrap_or(program_path);
    if program.is_empty() {
        return None;
    }
    let mut label = capitalise(program);
    if SUBCOMMAND_PROGRAMS.contains(&program) {
        if let Some(sub) = words.next() {
            if !sub.starts_with('-') && sub.chars().all(|c| c.is_alphanumeric() || c == '-') {
                label.push(' ');
                label.push_str(sub);
            }
        }
    }
    Some(label)
}

/// Recognises well-known tool outputs without the command line.
fn signature_label(text: &str) -> Option<String> {
    let label = if text.contains("test result:") && text.contains("running ") {
        "Cargo test"
    } else if text.contains("test session starts") {
        "Pytest"
    } else if text.contains("Test Suites:") && text.contains("Tests:") {
        "Jest"
    } else if text.contains("Compiling ") || text.contains("error[E") {
        if text.contains("clippy::") {
            "Cargo clippy"
        } else {
            "Cargo build"
        }
    } else if text.contains("npm ERR!") || text.contains("npm error") {
        "Npm"
    } else if text.contains("diff --git") {
        "Git diff"
    } else if text.contains("On branch ") {
        "Git status"
    } else if GIT_LOG.is_match(text) {
        "Git log"
    } else if GO_TEST.is_match(text) && text.contains("go") {
        "Go test"
    } else if TS_ERROR.is_match(text) {
        "TypeScript compiler"
    } else {
        return None;
    };
    Some(label.to_string())
}

/// Uppercases the first letter.
fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// True when the first word is made of letters only (not an identifier,
/// path or file name).
fn starts_with_plain_word(title: &str) -> bool {
    title
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
}

/// Plain words get a capital; identifiers and paths keep their exact case.
fn capitalise_title(title: &str) -> String {
    if starts_with_plain_word(title) {
        capitalise(title)
    } else {
        title.to_string()
    }
}

/// A neighbour scoring below this fraction of the head's score does not
/// join the head phrase.
const PHRASE_NEIGHBOUR_RATIO: f64 = 0.3;
/// Longest head phrase, in content words.
const PHRASE_MAX_WORDS: usize = 3;

struct TitleParts {
    head: Option<String>,
    second: Option<String>,
    location: Option<String>,
    /// Set instead of `head`/`location` for listings of several files.
    directory: Option<String>,
}

fn title_parts(a: &Analysis, ranked: &[Candidate]) -> TitleParts {
    let location_cand = ranked.iter().find(|c| c.kind == Kind::File);
    let location = location_cand.map(|c| {
        a.locations
            .get(&c.key)
            .cloned()
            .unwrap_or_else(|| c.concept.clone())
    });
    let loc_stem = location_cand
        .and_then(|c| c.key.split('.').next())
        .unwrap_or("")
        .to_string();

    // The file is the location; its stem alone would repeat it.
    let topical: Vec<&Candidate> = ranked
        .iter()
        .filter(|c| c.kind != Kind::File && c.kind != Kind::Dir)
        .filter(|c| location.is_none() || c.key != loc_stem)
        .collect();
    let Some(head) = topical.first() else {
        // Only files and directories (Glob / Grep listings): name the
        // directory they share when there is one.
        let files = ranked.iter().filter(|c| c.kind == Kind::File).count();
        let dir = ranked.iter().find(|c| c.kind == Kind::Dir);
        return match dir {
            Some(d) if files > 1 => TitleParts {
                head: None,
                second: None,
                location: None,
                directory: Some(d.concept.clone()),
            },
            _ => TitleParts {
                head: None,
                second: None,
                location,
                directory: None,
            },
        };
    };
    let words: HashMap<&str, &Candidate> = topical
        .iter()
        .filter(|c| c.parts.is_none() && matches!(c.kind, Kind::Word | Kind::Tech))
        .map(|c| (c.key.as_str(), *c))
        .collect();

    let mut used: HashSet<&str> = HashSet::new();
    used.insert(head.key.as_str());
    let (mut first_key, mut last_key, mut phrase, mut len) = match &head.parts {
        Some((x, y)) => {
            used.insert(x.as_str());
            used.insert(y.as_str());
            (x.as_str(), y.as_str(), head.concept.clone(), 2)
        }
        None => (
            head.key.as_str(),
            head.key.as_str(),
            head.concept.clone(),
            1,
        ),
    };
    if head.parts.is_some() || words.contains_key(head.key.as_str()) {
        // Grow the phrase with the best adjacent neighbour, left or right:
        // "connection pool" + "timeouts", "error" + "de conexión".
        while len < PHRASE_MAX_WORDS {
            // (pair count, score, first occurrence, key, text, left)
            let mut best: Option<(u32, f64, usize, &str, String, bool)> = None;
            for ((x, y), pair) in &a.pairs {
                let (other, left) = if x == last_key {
                    (y.as_str(), false)
                } else if y == first_key {
                    (x.as_str(), true)
                } else {
                    continue;
                };
                if used.contains(other) {
                    continue;
                }
                let Some(cand) = words.get(other) else {
                    continue;
                };
                if cand.score < head.score * PHRASE_NEIGHBOUR_RATIO {
                    continue;
                }
                // More frequent pair, then better neighbour, then earlier.
                let better = best.as_ref().is_none_or(|b| {
                    (pair.count, cand.score, std::cmp::Reverse(pair.first))
                        .partial_cmp(&(b.0, b.1, std::cmp::Reverse(b.2)))
                        .is_some_and(|o| o.is_gt())
                });
                if better {
                    let text = match (pair.connector, left) {
                        (Some("d"), false) => format!("{phrase} d'{}", cand.concept),
                        (Some("d"), true) => format!("{} d'{phrase}", cand.concept),
                        (Some(c), false) => format!("{phrase} {c} {}", cand.concept),
                        (Some(c), true) => format!("{} {c} {phrase}", cand.concept),
                        (None, false) => format!("{phrase} {}", cand.concept),
                        (None, true) => format!("{} {phrase}", cand.concept),
                    };
                    best = Some((
                        pair.count,
                        cand.score,
                        pair.first,
                        cand.key.as_str(),
                        text,
                        left,
                    ));
                }
            }
            let Some((_, _, _, key, text, left)) = best else {
                break;
            };
            used.insert(key);
            if left {
                first_key = key;
            } else {
                last_key = key;
            }
            phrase = text;
            len += 1;
        }
    }
    let second = topical
        .iter()
        .skip(1)
        .find(|c| {
            !used.contains(c.key.as_str())
                && c.parts
                    .as_ref()
                    .is_none_or(|(x, y)| !used.contains(x.as_str()) && !used.contains(y.as_str()))
        })
        .map(|c| c.concept.clone());
    TitleParts {
        head: Some(phrase),
        second,
        location,
        directory: None,
    }
}

fn build_title(source: SourceType, text: &str, a: &Analysis, ranked: &[Candidate]) -> String {
    let words = a.lang().words();
    let parts = title_parts(a, ranked);
    let raw = if source == SourceType::Command {
        detect_command(text).map(|cmd| {
            let mut t = cmd.label;
            if let Some(outcome) = cmd.outcome {
                t.push(' ');
                t.push_str(outcome);
            }
            match (&parts.location, &parts.head) {
                (Some(loc), _) => format!("{t} {} {loc}", words.title_in),
                (None, Some(head)) => format!("{t}: {head}"),
                (None, None) if t.split_whitespace().count() < TITLE_MIN_WORDS => {
                    format!("{t} output")
                }
                (None, None) => t,
            }
        })
    } else {
        None
    };
    let raw = raw.unwrap_or_else(|| topic_title(source, &parts, &words));
    finish_title(&raw, source, &parts, &words)
}

fn topic_title(source: SourceType, parts: &TitleParts, words: &Words) -> String {
    if let Some(dir) = &parts.directory {
        return format!("{} {dir}", words.files_in);
    }
    match (&parts.head, &parts.location) {
        (Some(head), Some(loc)) => format!("{head} {} {loc}", words.title_in),
        (Some(head), None) => match &parts.second {
            Some(second) if head.split_whitespace().count() < 2 => {
                format!("{head} {} {second}", words.title_and)
            }
            _ => head.clone(),
        },
        (None, Some(loc)) => match source {
            SourceType::Write => format!("{} {loc}", words.changes_to),
            SourceType::Read => format!("{} {loc}", words.contents_of),
            _ => format!("{} {loc}", words.notes_on),
        },
        (None, None) => format!("Untitled {source} capture"),
    }
}

/// Enforces the title rules: no leading action verb, 3-8 words, capital
/// first letter for plain words.
fn finish_title(raw: &str, source: SourceType, parts: &TitleParts, words: &Words) -> String {
    let mut tokens: Vec<&str> = raw.split_whitespace().collect();
    while tokens
        .first()
        .is_some_and(|w| ACTION_SET.contains(w.to_lowercase().as_str()))
    {
        tokens.remove(0);
    }
    tokens.truncate(TITLE_MAX_WORDS);
    let mut title = tokens.join(" ");
    if tokens.len() < TITLE_MIN_WORDS {
        let subject = if title.is_empty() {
            parts.location.clone().unwrap_or_default()
        } else {
            title.clone()
        };
        title = if subject.is_empty() {
            format!("Untitled {source} capture")
        } else {
            let prefix = match source {
                SourceType::Write if parts.head.is_none() => words.changes_to,
                SourceType::Read if parts.head.is_none() => words.contents_of,
                _ => words.notes_on,
            };
            format!("{prefix} {subject}")
        };
        let mut t: Vec<&str> = title.split_whitespace().collect();
        t.truncate(TITLE_MAX_WORDS);
        title = t.join(" ");
    }
    // `sync_all in store/atomic.rs` cannot be capitalised without breaking
    // the identifier: put a noun in front instead.
    let starts_lower = title.chars().next().is_some_and(char::is_lowercase);
    if starts_lower && !starts_with_plain_word(&title) {
        let prefix = match source {
            SourceType::Write => words.changes_to,
            _ => words.use_of,
        };
        let prefixed = format!("{prefix} {title}");
        let mut t: Vec<&str> = prefixed.split_whitespace().collect();
        t.truncate(TITLE_MAX_WORDS);
        title = t.join(" ");
    }
    capitalise_title(&title)
}

// ---------------------------------------------------------------------------
// Sentences: summary, questions, decisions, intent
// ---------------------------------------------------------------------------

/// Splits into sentences: line breaks are hard boundaries, and `.`, `!`,
/// `?` followed by whitespace end a sentence. Comment markers and list
/// bullets are stripped so doc comments read as prose.
fn sentences(text: &str) -> Vec<String> {
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

fn strip_line_marker(line: &str) -> &str {
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

fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

/// Prose, not code: enough words and mostly letters.
fn is_prose(s: &str, min_words: usize) -> bool {
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
fn shorten(s: &str, max: usize) -> String {
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

fn summary(sents: &[String], ranked: &[Candidate], parts: &TitleParts) -> String {
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
fn fallback_summary(ranked: &[Candidate], parts: &TitleParts, sents: &[String]) -> String {
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

fn questions(sents: &[String]) -> Vec<String> {
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

fn decisions(sents: &[String]) -> Vec<String> {
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

fn intent(sents: &[String]) -> String {
    sents
        .first()
        .map(|s| shorten(s, MAX_INTENT_CHARS))
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

/// First `max` characters of `s` (on a char boundary).
fn limit_chars(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// Runs the local heuristics on already-limited text.
fn extract_local(text: &str, source: SourceType) -> Extraction {
    let text = PIPELINE_MARKERS.replace_all(text, " ");
    let text = text.as_ref();
    let analysis = analyse(text);
    let ranked = rank(&analysis);
    let sents = sentences(text);
    let parts = title_parts(&analysis, &ranked);
    Extraction {
        title: build_title(source, text, &analysis, &ranked),
        intent: if source == SourceType::Prompt {
            intent(&sents)
        } else {
            String::new()
        },
        summary: summary(&sents, &ranked, &parts),
        subjects: select_subjects(&ranked),
        questions: questions(&sents),
        decisions: decisions(&sents),
        key_concepts: select_concepts(&ranked),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(content: &str, source: SourceType) -> Extraction {
        match LocalExtractor.extract(content, source) {
            Ok(e) => e,
            Err(e) => panic!("extraction failed: {e}"),
        }
    }

    fn assert_title_rules(e: &Extraction) {
        let n = e.title.split_whitespace().count();
        assert!(
            e.title.chars().next().is_some_and(|c| !c.is_lowercase()),
            "title not capitalised: {:?}",
            e.title
        );
        assert!((3..=8).contains(&n), "title word count {n}: {:?}", e.title);
        let first = e
            .title
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_lowercase();
        assert!(
            !ACTION_SET.contains(first.as_str()),
            "action verb title: {:?}",
            e.title
        );
        for s in &e.subjects {
            assert!(s.chars().count() >= MIN_TOPIC_CHARS, "short subject {s:?}");
            assert_eq!(s, &s.to_lowercase(), "subject not lowercase {s:?}");
            assert!(!s.chars().all(|c| c.is_ascii_digit()));
        }
        assert!(e.subjects.len() <= MAX_SUBJECTS);
        assert!(e.key_concepts.len() <= MAX_KEY_CONCEPTS);
        assert!(e.summary.chars().count() <= MAX_SUMMARY_CHARS);
        assert!(e.intent.chars().count() <= MAX_INTENT_CHARS);
    }

    const ATOMIC_READ: &str = "/home/dev/ai-smartness/src/store/atomic.rs
//! Atomic writes for the thread store.
//!
//! Atomic writes go through a temporary file in the same directory, then a
//! rename. The rename is atomic on POSIX, so readers never see a partial
//! thread file.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `data` to `path` atomically: temp file, fsync, rename, fsync dir.
pub fn write_atomic(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new(\".\"));
    let tmp = dir.join(format!(\".{}.tmp\", std::process::id()));
    let mut file = File::create(&tmp)?;
    file.write_all(data)?;
    file.sync_all()?;
    fs::rename(&tmp, path)?;
    File::open(dir)?.sync_all()?;
    Ok(())
}";

    #[test]
    fn read_of_atomic_store_file() {
        let e = run(ATOMIC_READ, SourceType::Read);
        assert_title_rules(&e);
        assert_eq!(e.title, "Atomic writes in store/atomic.rs");
        assert!(
            e.subjects.contains(&"atomic writes".to_string()),
            "{:?}",
            e.subjects
        );
        assert!(
            e.subjects.contains(&"atomic.rs".to_string()),
            "{:?}",
            e.subjects
        );
        assert!(
            e.key_concepts.iter().any(|c| c == "write_atomic"),
            "{:?}",
            e.key_concepts
        );
        assert!(e.summary.contains("Atomic writes"), "{}", e.summary);
        assert!(e.intent.is_empty());
    }

    #[test]
    fn cargo_test_failure_output() {
        let out = "running 3 tests
test store::atomic::tests::rename_is_atomic ... ok
test store::atomic::tests::fsync_parent_dir ... FAILED
test store::atomic::tests::partial_write_recovery ... ok

failures:

---- store::atomic::tests::fsync_parent_dir stdout ----
thread 'store::atomic::tests::fsync_parent_dir' panicked at src/store/atomic.rs:88:9:
assertion failed: dir_synced

failures:
    store::atomic::tests::fsync_parent_dir

test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out";
        let e = run(out, SourceType::Command);
        assert_title_rules(&e);
        assert_eq!(e.title, "Cargo test failures in store/atomic.rs");
        assert!(
            e.key_concepts.iter().any(|c| c == "fsync_parent_dir"),
            "{:?}",
            e.key_concepts
        );
    }

    #[test]
    fn command_line_prefix_names_the_command() {
        let out = "$ git status --short\n M src/store/atomic.rs\n?? src/capture/redact.rs";
        let e = run(out, SourceType::Command);
        assert!(e.title.starts_with("Git status in "), "{}", e.title);
        assert_title_rules(&e);
    }

    #[test]
    fn english_prompt() {
        let prompt = "Can you fix the connection pool timeouts in src/db/pool.rs? \
Under load the connection pool runs out of connections after 30 seconds. \
We decided to switch to deadpool instead of r2d2.";
        let e = run(prompt, SourceType::Prompt);
        assert_title_rules(&e);
        assert!(e.title.starts_with("Connection pool"), "{}", e.title);
        assert!(e.title.ends_with("db/pool.rs"), "{}", e.title);
        assert_eq!(
            e.intent,
            "Can you fix the connection pool timeouts in src/db/pool.rs?"
        );
        assert_eq!(e.questions, vec![e.intent.clone()]);
        assert_eq!(
            e.decisions,
            vec!["We decided to switch to deadpool instead of r2d2.".to_string()]
        );
        assert!(
            e.subjects.contains(&"connection pool".to_string()),
            "{:?}",
            e.subjects
        );
    }

    #[test]
    fn french_prompt() {
        let prompt = "Peux-tu corriger le bug dans src/store/atomic.rs ? \
Les écritures atomiques échouent quand le disque est plein, et le fichier \
temporaire reste sur le disque. On garde le renommage atomique mais on \
utilise un fsync du répertoire.";
        let e = run(prompt, SourceType::Prompt);
        assert_title_rules(&e);
        assert_eq!(e.title, "Bug dans store/atomic.rs");
        assert_eq!(
            e.intent,
            "Peux-tu corriger le bug dans src/store/atomic.rs ?"
        );
        assert_eq!(e.questions.len(), 1);
        assert_eq!(e.decisions.len(), 1, "{:?}", e.decisions);
        assert!(e.subjects.iter().any(|s| s == "disque"), "{:?}", e.subjects);
        assert!(!e.subjects.iter().any(|s| s == "corriger" || s == "peux"));
    }

    #[test]
    fn spanish_prompt() {
        let prompt = "¿Puedes arreglar el error de conexión en src/db/pool.rs? \
El pool de conexiones se agota con mucha carga y las consultas fallan. \
Decidimos usar deadpool en lugar de r2d2.";
        let e = run(prompt, SourceType::Prompt);
        assert_title_rules(&e);
        assert!(e.title.ends_with(" en db/pool.rs"), "{}", e.title);
        assert!(!e.title.to_lowercase().starts_with("arreglar"));
        assert_eq!(e.questions.len(), 1);
        assert_eq!(
            e.decisions,
            vec!["Decidimos usar deadpool en lugar de r2d2.".to_string()]
        );
        assert!(
            e.subjects
                .iter()
                .any(|s| s == "conexión" || s == "conexiones"),
            "{:?}",
            e.subjects
        );
    }

    #[test]
    fn grep_file_list() {
        let out =
            "src/store/atomic.rs\nsrc/store/mod.rs\nsrc/store/index.rs\ntests/store_roundtrip.rs";
        let e = run(out, SourceType::Read);
        assert_title_rules(&e);
        assert!(e.subjects.iter().any(|s| s == "store"), "{:?}", e.subjects);
    }

    #[test]
    fn assistant_response_with_identifiers() {
        let text = "The ThreadManager keeps every thread in a BTreeMap keyed by ThreadId. \
When the embedding index is rebuilt, ThreadManager::reindex walks the map and \
recomputes each vector. I chose to keep the embedding index in memory; let's go with \
a full rebuild on startup.";
        let e = run(text, SourceType::Response);
        assert_title_rules(&e);
        assert!(
            e.key_concepts.iter().any(|c| c == "ThreadManager"),
            "{:?}",
            e.key_concepts
        );
        assert!(
            e.subjects.iter().any(|s| s == "thread manager"),
            "{:?}",
            e.subjects
        );
        assert_eq!(e.decisions.len(), 1, "{:?}", e.decisions);
    }

    #[test]
    fn title_never_starts_with_action_verb() {
        for text in [
            "Fix fix fixing the parser crash when the input has a BOM marker.",
            "Implement caching caching caching for the embedding model downloads.",
            "Corriger corriger le cache des embeddings qui grossit sans limite.",
            "Arreglar arreglar la caché de embeddings que crece sin límite.",
        ] {
            let e = run(text, SourceType::Prompt);
            assert_title_rules(&e);
        }
    }

    #[test]
    fn subjects_skip_numbers_and_hashes() {
        let text = "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Dev <dev@example.com>\n\n    Store: fsync the parent directory after rename\n\n    Refs 550e8400-e29b-41d4-a716-446655440000, 12345";
        let e = run(text, SourceType::Command);
        assert_title_rules(&e);
        for s in &e.subjects {
            assert!(!s.contains("9fceb02d"), "{s}");
            assert!(!s.contains("550e8400"), "{s}");
            assert_ne!(s, "12345");
        }
    }

    #[test]
    fn pipeline_markers_are_ignored() {
        let text = "GITHUB_TOKEN=[REDACTED:github_token] configured for the release workflow.\n[... 1200 chars truncated ...]\nrelease workflow finished";
        let e = run(text, SourceType::Command);
        for c in e.subjects.iter().chain(&e.key_concepts) {
            let c = c.to_lowercase();
            assert!(
                !c.contains("redacted") && c != "chars" && c != "truncated",
                "{c}"
            );
        }
    }

    #[test]
    fn empty_content_is_an_error() {
        assert!(matches!(
            LocalExtractor.extract("   \n ", SourceType::Read),
            Err(ExtractError::EmptyContent)
        ));
        assert_eq!(LocalExtractor.name(), "local");
    }

    #[test]
    fn code_only_gets_a_fallback_summary() {
        let code = "fn main() {\n    let cfg = Config::load(\"app.toml\")?;\n    Server::bind(cfg.addr).serve(router()).await?;\n}";
        let e = run(code, SourceType::Read);
        assert_title_rules(&e);
        assert!(!e.summary.is_empty());
    }

    #[test]
    fn deterministic() {
        let a = run(ATOMIC_READ, SourceType::Read);
        for _ in 0..5 {
            assert_eq!(run(ATOMIC_READ, SourceType::Read), a);
        }
    }

    #[test]
    fn long_input_is_extracted_within_its_bounds() {
        // Its speed is measured where speed is measured: `cargo bench --bench daemon` (capture
        // throughput, extraction included).
        let mut big = String::new();
        while big.chars().count() < 20_000 {
            big.push_str(ATOMIC_READ);
            big.push('\n');
        }
        let e = run(&big, SourceType::Read);
        assert!(!e.title.is_empty());
        assert!(!e.subjects.is_empty());
        assert!(e.summary.chars().count() <= MAX_SUMMARY_CHARS);
    }

    #[test]
    fn decision_markers() {
        let sents: Vec<String> = [
            "We’ll use SQLite for the index.",
            "We go without tests for now.",
            "Al final decidimos mantener el formato JSON.",
            "Bon, on garde le format actuel.",
            "This is algo with extra words.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let found = decisions(&sents);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(!found.iter().any(|d| d.contains("without")));
    }

    #[test]
    fn hexish_tokens() {
        assert!(is_hexish("9fceb02d0ae598e95dc970b74767f19372d61af8"));
        assert!(is_hexish("550e8400-e29b-41d4-a716-446655440000"));
        assert!(is_hexish("0xDEADBEEF"));
        assert!(!is_hexish("abc-defg1"));
        assert!(!is_hexish("cafe"));
        assert!(!is_hexish("atomic"));
    }

    #[test]
    fn camel_splitting() {
        assert_eq!(split_camel("AtomicWriter"), "atomic writer");
        assert_eq!(split_camel("parseHTTPHeader"), "parse http header");
        assert_eq!(split_camel("BTreeMap"), "b tree map");
    }

    #[test]
    fn serde_round_trip() -> Result<(), serde_json::Error> {
        let e = run(ATOMIC_READ, SourceType::Read);
        let json = serde_json::to_string(&e)?;
        let back: Extraction = serde_json::from_str(&json)?;
        assert_eq!(back, e);
        Ok(())
    }
}
