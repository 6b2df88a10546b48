//! Tables whose column (or whose row label) names a secret: Markdown tables
//! (`| user | password |`) and plain-text ones, columns apart by two spaces or a tab
//! (`USER    PASSWORD    HOST`).

use crate::keys::{self, NameUse};
use crate::{is_placeholder, placeholder};

/// Redacts the cells of secret columns, and the cell after a secret label.
pub(crate) fn redact(text: &str, lower: &str, count: &mut usize) -> String {
    // Cheap test first: a table needs a secret word somewhere.
    if ![
        "passw",
        "pwd",
        "passphrase",
        "secret",
        "token",
        "key",
        "credential",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        return text.to_string();
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(header) = markdown_cells(line) {
            let mut j = i + 1;
            while j < lines.len() && markdown_cells(lines[j]).is_some() {
                j += 1;
            }
            out.extend(markdown_table(&header, &lines[i..j], count));
            i = j;
            continue;
        }
        if let Some(columns) = plain_secret_columns(line) {
            out.push(line.to_string());
            let mut j = i + 1;
            while j < lines.len() && !lines[j].trim().is_empty() {
                out.push(plain_row(lines[j], &columns, count));
                j += 1;
            }
            i = j;
            continue;
        }
        out.push(line.to_string());
        i += 1;
    }
    out.join("\n")
}

/// The cells of a Markdown table line (`| a | b |`), when it is one.
fn markdown_cells(line: &str) -> Option<Vec<&str>> {
    let t = line.trim();
    if !t.starts_with('|') || t.len() < 3 || !t[1..].contains('|') {
        return None;
    }
    let inner = t.strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split('|').map(str::trim).collect())
}

fn is_separator_row(cells: &[&str]) -> bool {
    cells.iter().all(|c| {
        !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')) && c.contains('-')
    })
}

/// What a header cell or a row label says about its values: a password is any value, a
/// token or key only a value that looks made by a machine (a tokenizer's "Token" column
/// holds words).
#[derive(Clone, Copy)]
struct SecretColumn {
    kind: &'static str,
    any_value: bool,
}

fn secret_column(label: &str) -> Option<SecretColumn> {
    let label = label.trim_matches(|c: char| c == '*' || c == '`' || c == '_' || c.is_whitespace());
    if label.is_empty() || label.len() > 40 || label.split_whitespace().count() > 4 {
        return None;
    }
    let kind = keys::secret_kind(label, NameUse::Label)?;
    Some(SecretColumn {
        kind,
        any_value: kind == "password",
    })
}

/// Whether a cell of a secret column holds a secret.
fn holds_secret(cell: &str, column: SecretColumn) -> bool {
    let value = cell.trim_matches(|c: char| c == '`' || c.is_whitespace());
    if value.is_empty() || is_placeholder(value) || value.len() > 200 {
        return false;
    }
    const NOT_A_VALUE: &[&str] = &[
        "-",
        "—",
        "–",
        "n/a",
        "na",
        "none",
        "empty",
        "yes",
        "no",
        "true",
        "false",
        "required",
        "optional",
        "same",
        "unchanged",
        "hidden",
        "set",
        "unset",
        "✓",
        "✗",
        "x",
        "?",
    ];
    if NOT_A_VALUE.contains(&value.to_lowercase().as_str()) {
        return false;
    }
    if column.any_value {
        return value.split_whitespace().count() <= 4;
    }
    !value.contains(' ')
        && value.len() >= 8
        && (value.bytes().any(|b| b.is_ascii_digit())
            || value
                .bytes()
                .any(|b| b.is_ascii_punctuation() && b != b'_' && b != b'-'))
        && value.bytes().any(|b| b.is_ascii_alphabetic())
}

fn markdown_table(header: &[&str], lines: &[&str], count: &mut usize) -> Vec<String> {
    let has_header = lines
        .get(1)
        .and_then(|l| markdown_cells(l))
        .is_some_and(|c| is_separator_row(&c));
    let columns: Vec<Option<SecretColumn>> = if has_header {
        header.iter().map(|c| secret_column(c)).collect()
    } else {
        Vec::new()
    };
    let mut out = Vec::with_capacity(lines.len());
    for (n, line) in lines.iter().enumerate() {
        let Some(cells) = markdown_cells(line) else {
            out.push(line.to_string());
            continue;
        };
        if (has_header && n == 0) || is_separator_row(&cells) {
            out.push(line.to_string());
            continue;
        }
        let mut changed = false;
        let mut new_cells: Vec<String> = cells.iter().map(|c| c.to_string()).collect();
        for (k, cell) in cells.iter().enumerate() {
            let by_column = columns.get(k).copied().flatten();
            // A key-value table: `| Password | hunter2 |`.
            let by_label = k
                .checked_sub(1)
                .and_then(|p| secret_column(cells[p]))
                .filter(|_| cells.len() <= 3);
            let Some(column) = by_column.or(by_label) else {
                continue;
            };
            if holds_secret(cell, column) {
                new_cells[k] = placeholder(column.kind);
                *count += 1;
                changed = true;
            }
        }
        if !changed {
            out.push(line.to_string());
            continue;
        }
        let indent = &line[..line.len() - line.trim_start().len()];
        let closed = line.trim_end().ends_with('|');
        let mut rebuilt = format!("{indent}| {} ", new_cells.join(" | "));
        if closed {
            rebuilt.push('|');
        }
        out.push(rebuilt.trim_end().to_string());
    }
    out
}

/// Splits a plain-text table line on runs of two or more spaces, or tabs.
fn plain_cells(line: &str) -> Vec<&str> {
    let mut cells = Vec::new();
    let mut start = None;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let gap = bytes[i] == b'\t' || (bytes[i] == b' ' && bytes.get(i + 1) == Some(&b' '));
        if gap {
            if let Some(s) = start.take() {
                cells.push(&line[s..i]);
            }
            while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'\t') {
                i += 1;
            }
            continue;
        }
        if start.is_none() {
            start = Some(i);
        }
        i += 1;
    }
    if let Some(s) = start {
        cells.push(line[s..].trim_end());
    }
    cells
}

/// The columns of a plain-text table header that name secrets, with the header's width in
/// cells; None when the line is not such a header.
fn plain_secret_columns(line: &str) -> Option<(usize, Vec<(usize, SecretColumn)>)> {
    if line.contains('|') || line.trim().is_empty() {
        return None;
    }
    let cells = plain_cells(line);
    if cells.len() < 2 {
        return None;
    }
    // A header is a row of short labels, each starting with a capital (`NAME  PASSWORD`,
    // `Host  Password`), not code nor a sentence.
    let label = |c: &&str| {
        c.split_whitespace().count() <= 3
            && c.starts_with(|ch: char| ch.is_ascii_uppercase())
            && c.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, ' ' | '_' | '-' | '/' | '#'))
    };
    if !cells.iter().all(label) {
        return None;
    }
    let secret: Vec<(usize, SecretColumn)> = cells
        .iter()
        .enumerate()
        .filter_map(|(k, c)| secret_column(c).map(|s| (k, s)))
        .collect();
    (!secret.is_empty()).then_some((cells.len(), secret))
}

fn plain_row(
    line: &str,
    (width, columns): &(usize, Vec<(usize, SecretColumn)>),
    count: &mut usize,
) -> String {
    let cells = plain_cells(line);
    if cells.len() != *width {
        return line.to_string();
    }
    let mut out = line.to_string();
    // Right to left, so that earlier offsets stay valid.
    for &(k, column) in columns.iter().rev() {
        let cell = cells[k];
        if !holds_secret(cell, column) {
            continue;
        }
        let start = cell.as_ptr() as usize - line.as_ptr() as usize;
        out.replace_range(start..start + cell.len(), &placeholder(column.kind));
        *count += 1;
    }
    out
}
