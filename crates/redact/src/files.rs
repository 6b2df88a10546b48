//! Credential files whose lines carry no `=` or `:` after a name: `.netrc`
//! (`machine h login u password p`) and `.pgpass` (`host:port:db:user:password`).

use crate::{not_placeholder, Rule};

pub(crate) static RULES: [Rule; 3] = [
    // .netrc on one line: `machine HOST login USER password PASS`, or `default ...`.
    Rule::new(
        "password",
        r"(?m)(?P<pre>^[ \t]*(?:machine[ \t]+\S+|default)\b[^\n]*?[ \t]password[ \t]+)(?P<val>\S+)",
        &["password"],
        not_placeholder,
    ),
    // .netrc over several lines: `password PASS` alone on its line, after a `machine` or
    // `login` line.
    Rule::new(
        "password",
        r"(?m)(?P<pre>^[ \t]*(?:machine|login|default)\b[^\n]*\n(?:[ \t]*(?:login|account|machine)[ \t]+\S+[ \t]*\n)*[ \t]*password[ \t]+)(?P<val>\S+)[ \t]*$",
        &["password"],
        not_placeholder,
    ),
    // .pgpass: `host:port:database:user:password`, the port a number or `*`. Only a line
    // with four colons and no space is tried.
    Rule::tested(
        "password",
        r"(?m)(?P<pre>^[ \t]*(?:\*|[A-Za-z0-9_.\-]*[A-Za-z.][A-Za-z0-9_.\-]*):(?:\d{1,5}|\*):[A-Za-z0-9_.\-*$]+:[A-Za-z0-9_.\-*@$]+:)(?P<val>\S+)[ \t]*$",
        has_pgpass_line,
        not_placeholder,
    ),
];

/// A line of four colons or more and no space inside: what a `.pgpass` line looks like.
fn has_pgpass_line(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim();
        line.bytes().filter(|&b| b == b':').count() >= 4 && !line.contains([' ', '\t'])
    })
}
