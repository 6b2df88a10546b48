//! Evidence units: a long capture cut into the parts a person would point at, a function or
//! a section of a file, a block of a log, a paragraph of an answer, each with where it comes
//! from (the file and its lines, the command). Retrieval ranks units and the context quotes
//! them whole, so a question about line 900 of a file read finds line 900, not the file's
//! opening.
//!
//! Cuts fall between lines, after a blank line or where a definition, a heading or a diff hunk
//! starts when one is near; a unit is never longer than [`UNIT_MAX`] bytes (a longer line is
//! cut between characters). A capture of at most [`UNIT_MAX`] bytes is one unit: its message.

/// A unit is cut at a boundary once it holds this many bytes.
pub const UNIT_MIN: usize = 300;
/// Past this many bytes, a unit is cut at the next line end, boundary or not.
pub const UNIT_TARGET: usize = 700;
/// A unit never holds more: about what the embedding model reads (256 word pieces).
pub const UNIT_MAX: usize = 1_200;

/// One unit: a byte range of the content and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub end: usize,
    /// `src/pool.rs:120-168`, `$ cargo test (lines 40-62)`, `answer`: shown before the quote.
    pub label: String,
}

/// What a capture's first line is, for the tools that put it there.
enum Head<'a> {
    /// A file's path (`Read`, `Edit`, `Write`): the lines after it are the file's.
    Path(&'a str),
    /// A shell command (`$ cargo test`): the lines after it are its output.
    Command(&'a str),
    /// A sub-agent's task (`Task: Explore the reader code`): the lines after it are its report,
    /// and each section of the report answers that task.
    Task(&'a str),
    None,
}

fn head<'a>(tool: &str, content: &'a str) -> Head<'a> {
    let first = content.lines().next().unwrap_or("").trim();
    match tool {
        "Read" | "Edit" | "MultiEdit" | "Write" | "NotebookEdit"
            if !first.is_empty() && !first.contains(char::is_whitespace) =>
        {
            Head::Path(first)
        }
        "Bash" if first.starts_with("$ ") => Head::Command(first.trim_start_matches("$ ")),
        "Task" | "Agent" if first.len() > TASK_PREFIX.len() && first.starts_with(TASK_PREFIX) => {
            Head::Task(first[TASK_PREFIX.len()..].trim())
        }
        _ => Head::None,
    }
}

/// How a sub-agent's report names its task on its first line.
const TASK_PREFIX: &str = "Task: ";
/// Who wrote a report, as its label says.
const REPORT: &str = "agent's report";

/// A report's label: who wrote it, and the task it answers (`agent's report: Explore the
/// reader code`). Its words are the unit's too: a question that names the task finds the
/// section that answers it, not only the report's opening.
fn task_label(task: &str) -> String {
    format!("{REPORT}: {}", shorten(task, 60))
}

/// What gets embedded for a unit: where it comes from, then its text. A report's task is left
/// out of the vector: every section of the report shares it, and in their vectors it would
/// make them alike, all as close to a question as the closest of them.
pub fn embedding_text(label: &str, text: &str) -> String {
    let label = match label.strip_prefix(REPORT) {
        Some(task) if task.starts_with(": ") => REPORT,
        _ => label,
    };
    format!("{label}\n{}", text.trim())
}

/// The label of a message quoted whole, from its tool and content (`answer`, `prompt`, a
/// file's path, a command).
pub fn whole_label(tool: &str, content: &str) -> String {
    match head(tool, content) {
        Head::Path(p) => p.to_string(),
        Head::Command(c) => format!("$ {}", shorten(c, 60)),
        Head::Task(t) => task_label(t),
        Head::None => plain_label(tool),
    }
}

fn plain_label(tool: &str) -> String {
    match tool {
        "UserPrompt" | "Prompt" => "prompt".into(),
        "Response" => "answer".into(),
        "Task" | "Agent" => REPORT.into(),
        "" => "note".into(),
        other => shorten(other, 40),
    }
}

fn shorten(s: &str, max: usize) -> String {
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        format!("{}…", flat.chars().take(max).collect::<String>())
    }
}

/// The line number `cat -n` put before a line (`   120→text`), when it did.
fn numbered(line: &str) -> Option<u32> {
    let (n, _) = line.split_once('→')?;
    n.trim().parse().ok()
}

/// The text of a line without the number `cat -n` put before it.
fn unnumbered(line: &str) -> &str {
    match line.split_once('→') {
        Some((n, rest)) if n.trim().chars().all(|c| c.is_ascii_digit()) => rest,
        _ => line,
    }
}

/// A line before which a new unit may start: one opening a definition, a heading, a diff hunk
/// or a log's new part.
fn opens_unit(line: &str) -> bool {
    let text = unnumbered(line);
    if text.trim().is_empty() {
        return false;
    }
    // Indented lines belong to what opened above them.
    if text.starts_with([' ', '\t']) {
        return false;
    }
    const OPENERS: &[&str] = &[
        "fn ",
        "pub ",
        "async ",
        "impl",
        "struct ",
        "enum ",
        "trait ",
        "mod ",
        "def ",
        "class ",
        "function ",
        "export ",
        "const ",
        "let ",
        "var ",
        "type ",
        "interface ",
        "module ",
        "package ",
        "func ",
        "describe(",
        "it(",
        "test(",
        "#[",
        "# ",
        "## ",
        "### ",
        "#### ",
        "@@",
        "diff --git",
        "---- ",
        "===",
        "error",
        "warning",
        "FAIL",
        "Traceback",
        "test ",
        "running ",
    ];
    OPENERS.iter().any(|o| text.starts_with(o))
}

/// The units of a capture of `tool`: empty when the whole content is one unit.
pub fn split(tool: &str, content: &str) -> Vec<Span> {
    if content.len() <= UNIT_MAX {
        return Vec::new();
    }
    let head = head(tool, content);
    // The first line of a file's or a command's capture says what follows: its lines are
    // numbered from the next one.
    let body_from = match head {
        Head::None => 0,
        _ => content.find('\n').map_or(content.len(), |i| i + 1),
    };
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut start = 0usize;
    let mut pos = 0usize;
    for line in content.split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        // A line too long for one unit is cut between characters.
        if line.len() > UNIT_MAX {
            if line_start > start {
                spans.push((start, line_start));
            }
            let mut from = line_start;
            while pos - from > UNIT_MAX {
                let mut cut = from + UNIT_TARGET;
                while !content.is_char_boundary(cut) {
                    cut -= 1;
                }
                spans.push((from, cut));
                from = cut;
            }
            start = from;
            continue;
        }
        let held = line_start - start;
        let opener = held >= UNIT_MIN && opens_unit(line);
        if line_start > start && (opener || held >= UNIT_TARGET || pos - start > UNIT_MAX) {
            spans.push((start, line_start));
            start = line_start;
        }
        // A blank line ends a paragraph: the unit closes after it.
        if unnumbered(line).trim().is_empty() && pos - start >= UNIT_MIN {
            spans.push((start, pos));
            start = pos;
        }
    }
    if start < content.len() {
        spans.push((start, content.len()));
    }
    // A last sliver goes with the unit before it when both fit.
    if spans.len() >= 2 {
        let (a, b) = (spans[spans.len() - 2], spans[spans.len() - 1]);
        if b.1 - b.0 < UNIT_MIN / 2 && b.1 - a.0 <= UNIT_MAX {
            spans.pop();
            if let Some(last) = spans.last_mut() {
                last.1 = b.1;
            }
        }
    }
    if spans.len() < 2 {
        return Vec::new();
    }
    spans
        .into_iter()
        .map(|(start, end)| Span {
            label: label(&head, tool, content, body_from, start, end),
            start,
            end,
        })
        .collect()
}

/// Where a unit comes from: the file and its lines, the command and the lines of its output,
/// or who said it.
fn label(
    head: &Head,
    tool: &str,
    content: &str,
    body_from: usize,
    start: usize,
    end: usize,
) -> String {
    let lines = |start: usize, end: usize| -> Option<(u32, u32)> {
        let unit = &content[start.max(body_from)..end.max(body_from)];
        if unit.trim().is_empty() {
            return None;
        }
        // `cat -n` numbers when the tool gave them, else counted from the body's start.
        let mut numbers = unit.lines().filter_map(numbered);
        if let Some(first) = numbers.next() {
            let last = numbers.next_back().unwrap_or(first);
            return Some((first, last));
        }
        let before = content[body_from..start.max(body_from)]
            .matches('\n')
            .count() as u32;
        let within = unit.trim_end_matches('\n').matches('\n').count() as u32;
        Some((before + 1, before + 1 + within))
    };
    match head {
        Head::Path(p) => match lines(start, end) {
            Some((a, b)) if a == b => format!("{p}:{a}"),
            Some((a, b)) => format!("{p}:{a}-{b}"),
            None => p.to_string(),
        },
        Head::Command(c) => match lines(start, end) {
            Some((a, b)) if start > body_from => {
                format!("$ {} (output lines {a}-{b})", shorten(c, 60))
            }
            _ => format!("$ {}", shorten(c, 60)),
        },
        Head::Task(t) => task_label(t),
        Head::None => plain_label(tool),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(lines: usize) -> String {
        let mut out = String::from("src/pool.rs\n");
        for i in 1..=lines {
            if i % 12 == 1 {
                out.push_str(&format!(
                    "pub fn handler_{i}(conn: &mut Conn) -> Result<()> {{\n"
                ));
            } else if i % 12 == 0 {
                out.push_str("}\n");
            } else {
                out.push_str(&format!("    conn.step_{i}()?; // keep the pool warm\n"));
            }
        }
        out
    }

    #[test]
    fn each_section_of_a_report_names_its_task_in_words_not_in_its_vector() {
        let mut report = String::from("Task: Explore Flutter reader code\nFind the reader.\n");
        for i in 0..12 {
            report.push_str(&format!("\n### Section {i}\n"));
            report.push_str(&"The overlay resolves fonts and colours here. ".repeat(6));
            report.push('\n');
        }
        let units = split("Task", &report);
        assert!(units.len() >= 3, "{units:?}");
        assert!(units
            .iter()
            .all(|u| u.label == "agent's report: Explore Flutter reader code"));
        assert_eq!(
            whole_label("Task", "Task: Explore Flutter reader code\nDone."),
            "agent's report: Explore Flutter reader code"
        );
        assert_eq!(whole_label("Task", "Done."), "agent's report");
        assert_eq!(
            embedding_text(&units[1].label, "The overlay resolves fonts."),
            "agent's report\nThe overlay resolves fonts."
        );
        assert_eq!(
            embedding_text("src/pool.rs:1-9", "fn main() {}"),
            "src/pool.rs:1-9\nfn main() {}"
        );
    }

    #[test]
    fn a_short_capture_is_one_unit() {
        assert!(split("Read", "src/a.rs\nfn main() {}\n").is_empty());
        assert_eq!(whole_label("Read", "src/a.rs\nfn main() {}"), "src/a.rs");
        assert_eq!(whole_label("Bash", "$ cargo test\nok"), "$ cargo test");
        assert_eq!(whole_label("Response", "Done."), "answer");
    }

    #[test]
    fn a_file_is_cut_between_functions_and_says_its_lines() {
        let content = file(120);
        let units = split("Read", &content);
        assert!(units.len() >= 4, "{units:?}");
        // Every byte is in exactly one unit, in order.
        assert_eq!(units[0].start, 0);
        assert_eq!(units.last().unwrap().end, content.len());
        for w in units.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        for u in &units {
            assert!(u.end - u.start <= UNIT_MAX, "{u:?}");
            assert!(content[..u.end].ends_with('\n') || u.end == content.len());
            assert!(u.label.starts_with("src/pool.rs:"), "{u:?}");
        }
        // Most cuts fall where a function starts.
        let at_fn = units[1..]
            .iter()
            .filter(|u| content[u.start..].starts_with("pub fn"))
            .count();
        assert!(at_fn * 2 >= units.len() - 1, "{units:?}");
        // The line numbers are the file's: the second unit starts where the first ended.
        let first_end: u32 = units[0].label.rsplit('-').next().unwrap().parse().unwrap();
        let second: Vec<u32> = units[1]
            .label
            .trim_start_matches("src/pool.rs:")
            .split('-')
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(second[0], first_end + 1);
    }

    #[test]
    fn cat_n_numbers_are_read_and_a_log_is_labelled_by_its_command() {
        let mut read = String::from("src/app.ts\n");
        for i in 500..600 {
            read.push_str(&format!("{i:>6}→  const value_{i} = compute(input_{i});\n"));
        }
        let units = split("Read", &read);
        assert!(
            units[0].label.starts_with("src/app.ts:500-"),
            "{:?}",
            units[0]
        );
        let mut log = String::from("$ cargo test --workspace\n");
        for i in 0..80 {
            log.push_str(&format!("test module_{i}::works ... ok\n"));
        }
        log.push_str("error: test failed, to rerun pass `--lib`\n");
        let units = split("Bash", &log);
        assert_eq!(units[0].label, "$ cargo test --workspace");
        assert!(units[1]
            .label
            .starts_with("$ cargo test --workspace (output lines "));
    }

    #[test]
    fn a_long_line_is_cut_between_characters() {
        let line = "é".repeat(2_000);
        let units = split("Bash", &line);
        assert!(units.len() >= 3);
        for u in &units {
            assert!(line.is_char_boundary(u.start) && line.is_char_boundary(u.end));
            assert!(u.end - u.start <= UNIT_MAX);
        }
        assert_eq!(units.last().unwrap().end, line.len());
    }

    #[test]
    fn an_answer_is_cut_between_paragraphs() {
        let para = "The pool was too small for the worker count, so requests queued behind \
                    the health checks. Raising it fixed the timeouts we saw in the logs.\n\n";
        let answer = para.repeat(12);
        let units = split("Response", &answer);
        assert!(units.len() >= 2);
        for u in &units {
            assert_eq!(u.label, "answer");
            assert!(answer[u.start..u.end].starts_with("The pool"), "{u:?}");
        }
    }
}
