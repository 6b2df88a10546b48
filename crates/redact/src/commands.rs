//! Passwords given to a command on its command line: `sshpass -p`, `mysql -pVALUE`,
//! `docker login -p`, `curl -u user:pass`, `redis-cli -a`, and any `--password VALUE`.

use crate::keys::{self, NameUse};
use crate::{is_placeholder, not_placeholder, placeholder, split_quotes, Rule};
use regex::Regex;
use std::sync::LazyLock;

/// A value on a command line: quoted, or a word up to the next separator of the shell.
macro_rules! value {
    () => {
        r#"(?P<val>'[^'\n]*'|"[^"\n]*"|[^\s'"|;&<>()][^\s'"|;&<>()]*)"#
    };
}

/// The rest of a command before the option, on one line and before the next command.
macro_rules! args {
    () => {
        r"[^\n|;&]*?[ \t]"
    };
}

pub(crate) static RULES: [Rule; 5] = [
    // sshpass -p PASS, -pPASS
    Rule::new(
        "password",
        concat!(r"(?P<pre>\bsshpass\b", args!(), r"-p[ \t]*)", value!()),
        &["sshpass"],
        not_placeholder,
    ),
    // mysql -pPASS, -p'PASS': the value is attached (`-p` alone asks for it).
    Rule::new(
        "password",
        concat!(
            r"(?P<pre>\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh|mariadb|mariadb-dump|mariadb-admin)\b",
            args!(),
            r"-p)",
            value!()
        ),
        &["mysql", "mariadb"],
        not_placeholder,
    ),
    // docker login -p PASS / --password PASS (not --password-stdin)
    Rule::new(
        "password",
        concat!(
            r"(?P<pre>\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry)[ \t]+login\b",
            args!(),
            r"(?:-p[ \t]*|--password(?:[ \t]+|=)))",
            value!()
        ),
        &["login"],
        not_placeholder,
    ),
    // curl -u user:PASS, --user user:PASS, --proxy-user user:PASS
    Rule::new(
        "password",
        concat!(
            r#"(?P<pre>\bcurl\b"#,
            args!(),
            r#"(?:-u[ \t]*|-U[ \t]*|--user(?:[ \t]+|=)|--proxy-user(?:[ \t]+|=))['"]?[^\s:'"]+:)(?P<val>[^\s'"]+)"#
        ),
        &["curl"],
        not_placeholder,
    ),
    // redis-cli -a PASS
    Rule::new(
        "password",
        concat!(
            r"(?P<pre>\bredis-cli\b",
            args!(),
            r"(?:-a|--pass)[ \t]+)",
            value!()
        ),
        &["redis-cli"],
        not_placeholder,
    ),
];

/// `--NAME VALUE` with a space, where NAME says the value is a secret (`--password`,
/// `--db-pass`, `--api-key`, `--token`); `--NAME=VALUE` is an assignment.
static LONG_OPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?m)(?P<pre>(?:^|[ \t])--(?P<name>[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*)[ \t]+)",
        r#"(?P<val>'[^'\n]*'|"[^"\n]*"|[^\s'"|;&<>()\-\\][^\s'"|;&<>()\\]*)"#
    ))
    .expect("valid LONG_OPTION regex")
});

/// Redacts the value of every long option named like a secret.
pub(crate) fn redact_long_options(text: &str, count: &mut usize) -> String {
    if !text.contains("--") {
        return text.to_string();
    }
    LONG_OPTION
        .replace_all(text, |caps: &regex::Captures| {
            let whole = caps.get(0).map_or("", |m| m.as_str());
            let name = caps.name("name").map_or("", |m| m.as_str());
            let pre = caps.name("pre").map_or("", |m| m.as_str());
            let val = caps.name("val").map_or("", |m| m.as_str());
            let (open, inner, close) = split_quotes(val);
            let Some(kind) = keys::secret_kind(name, NameUse::Option) else {
                return whole.to_string();
            };
            if is_placeholder(inner) {
                return whole.to_string();
            }
            *count += 1;
            format!("{pre}{open}{}{close}", placeholder(kind))
        })
        .into_owned()
}
