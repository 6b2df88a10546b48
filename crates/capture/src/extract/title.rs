//! Titles: a subject noun phrase built from the top terms.

use super::*;

/// A shell command recognised from a `$ cmd` first line or from the shape of
/// its output, for titles like "Cargo test failures in store/atomic.rs".
pub(super) struct CommandInfo {
    pub(super) label: String,
    pub(super) outcome: Option<&'static str>,
}

/// Programs whose first argument is a subcommand worth naming.
#[rustfmt::skip]
pub(super) const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "cargo", "git", "npm", "pnpm", "yarn", "bun", "deno", "go", "docker", "kubectl", "pip",
    "uv", "poetry", "rustup", "dotnet", "mvn", "gradle", "make", "helm", "terraform", "gh",
    "brew", "apt", "systemctl", "npx",
];

pub(super) static GIT_LOG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^commit [0-9a-f]{40}").expect("valid GIT_LOG regex"));
pub(super) static GO_TEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:ok|FAIL|---\s+FAIL:)\s+\S+").expect("valid GO_TEST regex")
});
pub(super) static TS_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"error TS\d{4}").expect("valid TS_ERROR regex"));

pub(super) fn detect_command(text: &str) -> Option<CommandInfo> {
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
pub(super) fn command_label(cmd: &str) -> Option<String> {
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
pub(super) fn signature_label(text: &str) -> Option<String> {
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
pub(super) fn capitalise(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// True when the first word is made of letters only (not an identifier,
/// path or file name).
pub(super) fn starts_with_plain_word(title: &str) -> bool {
    title
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
}

/// Plain words get a capital; identifiers and paths keep their exact case.
pub(super) fn capitalise_title(title: &str) -> String {
    if starts_with_plain_word(title) {
        capitalise(title)
    } else {
        title.to_string()
    }
}

/// A neighbour scoring below this fraction of the head's score does not
/// join the head phrase.
pub(super) const PHRASE_NEIGHBOUR_RATIO: f64 = 0.3;
/// Longest head phrase, in content words.
pub(super) const PHRASE_MAX_WORDS: usize = 3;

pub(super) struct TitleParts {
    pub(super) head: Option<String>,
    pub(super) second: Option<String>,
    pub(super) location: Option<String>,
    /// Set instead of `head`/`location` for listings of several files.
    pub(super) directory: Option<String>,
}

pub(super) fn title_parts(a: &Analysis, ranked: &[Candidate]) -> TitleParts {
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

pub(super) fn build_title(
    source: SourceType,
    text: &str,
    a: &Analysis,
    ranked: &[Candidate],
) -> String {
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

pub(super) fn topic_title(source: SourceType, parts: &TitleParts, words: &Words) -> String {
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
pub(super) fn finish_title(
    raw: &str,
    source: SourceType,
    parts: &TitleParts,
    words: &Words,
) -> String {
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
