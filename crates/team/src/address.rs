//! A store's address in libpq's two forms, read without ever repeating it: a URL
//! (`postgresql://user:password@host:port/db?param=value`, where the host may be empty and the
//! socket folder given by `host=` in the query) or keyword/value pairs
//! (`host=/run/pg dbname=team user=ann`). Its password can be taken out, and an error says what
//! is wrong without the text, which may hold a password.

use crate::TeamError;
use percent_encoding::percent_decode_str;

/// What an address must look like, for errors.
const EXPECTED: &str = "expected postgres://USER@HOST:PORT/DATABASE (or postgresql://USER@/DATABASE?host=/SOCKET/FOLDER), \
     or keyword=value pairs such as host=HOST dbname=DATABASE user=USER; the address is not \
     repeated here, as it may hold a password";

/// An address, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address {
    Url {
        /// `postgres` or `postgresql`, as written.
        scheme: String,
        /// The user, as written (percent-encoded); None without an `@`.
        user: Option<String>,
        /// The password, as written (percent-encoded).
        password: Option<String>,
        /// Hosts and ports, as written (may be empty: a socket folder comes in the query).
        hosts: String,
        /// `/database`, or empty.
        path: String,
        /// The query's pairs, as written (percent-encoded).
        query: Vec<(String, String)>,
    },
    /// Keyword/value pairs, values decoded.
    Pairs(Vec<(String, String)>),
}

impl Address {
    pub(crate) fn parse(text: &str) -> Result<Address, TeamError> {
        let text = text.trim();
        if let Some((scheme, rest)) = text.split_once("://") {
            return Self::parse_url(scheme, rest);
        }
        if text.contains('=') {
            return parse_pairs(text).map(Address::Pairs);
        }
        Err(TeamError::Url(format!("not an address: {EXPECTED}")))
    }

    fn parse_url(scheme: &str, rest: &str) -> Result<Address, TeamError> {
        if !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "postgres" | "postgresql"
        ) {
            let shown = if scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '+')
            {
                format!("`{scheme}://` is not PostgreSQL's scheme")
            } else {
                "the scheme is not PostgreSQL's".to_string()
            };
            return Err(TeamError::Url(format!("{shown}: {EXPECTED}")));
        }
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, after) = rest.split_at(authority_end);
        // The user's part ends at the last `@`: a password may hold one, percent-encoded or not.
        let (user, password, hosts) = match authority.rsplit_once('@') {
            Some((info, hosts)) => match info.split_once(':') {
                Some((u, p)) => (Some(u.to_string()), Some(p.to_string()), hosts),
                None => (Some(info.to_string()), None, hosts),
            },
            None => (None, None, authority),
        };
        let (path, query) = match after.split_once('?') {
            Some((path, query)) => (path, query),
            None => (after, ""),
        };
        let query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (pair.to_string(), String::new()),
            })
            .collect();
        let address = Address::Url {
            scheme: scheme.to_string(),
            user,
            password,
            hosts: hosts.to_string(),
            path: path.to_string(),
            query,
        };
        if matches!(&address, Address::Url { hosts, query, .. } if hosts.is_empty() && !query.iter().any(|(k, _)| k == "host"))
        {
            return Err(TeamError::Url(format!(
                "no host: name one after the `@`, or a socket folder with `?host=/FOLDER`; {EXPECTED}"
            )));
        }
        Ok(address)
    }

    /// Takes the password out, wherever it was (the user's part or a `password` parameter).
    pub(crate) fn take_password(&mut self) -> Result<Option<String>, TeamError> {
        let in_user = match self {
            Address::Url { password, .. } => password.take().map(|p| decode(&p)).transpose()?,
            Address::Pairs(_) => None,
        };
        let param = self.take("password")?;
        Ok(in_user.or(param).filter(|p| !p.is_empty()))
    }

    /// Takes a parameter out (decoded); the last one when it is given twice.
    pub(crate) fn take(&mut self, key: &str) -> Result<Option<String>, TeamError> {
        let pairs = match self {
            Address::Url { query, .. } => query,
            Address::Pairs(pairs) => pairs,
        };
        let mut found = None;
        pairs.retain(|(k, v)| {
            if k == key {
                found = Some(v.clone());
                false
            } else {
                true
            }
        });
        match (self, found) {
            (Address::Url { .. }, Some(v)) => decode(&v).map(Some),
            (_, found) => Ok(found),
        }
    }

    /// The address as text again.
    pub(crate) fn render(&self) -> String {
        match self {
            Address::Url {
                scheme,
                user,
                password,
                hosts,
                path,
                query,
            } => {
                let mut out = format!("{scheme}://");
                if let Some(user) = user {
                    out.push_str(user);
                    if let Some(p) = password {
                        out.push(':');
                        out.push_str(p);
                    }
                    out.push('@');
                }
                out.push_str(hosts);
                out.push_str(path);
                if !query.is_empty() {
                    out.push('?');
                    let pairs: Vec<String> =
                        query.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    out.push_str(&pairs.join("&"));
                }
                out
            }
            Address::Pairs(pairs) => pairs
                .iter()
                .map(|(k, v)| format!("{k}={}", quote_value(v)))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

fn decode(s: &str) -> Result<String, TeamError> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| {
            TeamError::Url(format!(
                "a part is not valid UTF-8 once decoded: {EXPECTED}"
            ))
        })
}

/// libpq's keyword/value form: `key = value` pairs apart by spaces; a value may be quoted
/// with `'`, inside which `\'` and `\\` stand for a quote and a backslash.
fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, TeamError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') || key.is_empty() {
            return Err(TeamError::Url(format!(
                "a keyword without `= value`: {EXPECTED}"
            )));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some(next) => value.push(next),
                        None => break,
                    },
                    '\'' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(TeamError::Url(format!(
                    "a quoted value is not closed: {EXPECTED}"
                )));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        pairs.push((key, value));
    }
    if pairs.is_empty() {
        return Err(TeamError::Url(format!("an empty address: {EXPECTED}")));
    }
    Ok(pairs)
}

/// A value as libpq reads it back: quoted when it is empty or holds a space, a quote or a
/// backslash.
fn quote_value(v: &str) -> String {
    if !v.is_empty() && !v.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return v.to_string();
    }
    let mut out = String::from("'");
    for c in v.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PW: &str = "Pw9-s3cret";

    #[test]
    fn both_forms_lose_their_password_and_keep_the_rest() {
        let mut a =
            Address::parse("postgresql://ann:Pw9-s3cret@/team?host=/run/pg&port=6432").unwrap();
        assert_eq!(a.take_password().unwrap().as_deref(), Some(PW));
        assert_eq!(a.render(), "postgresql://ann@/team?host=/run/pg&port=6432");
        let mut a =
            Address::parse("postgres://ann@db:5432/team?password=Pw9%2Ds3cret&sslmode=require")
                .unwrap();
        assert_eq!(a.take_password().unwrap().as_deref(), Some(PW));
        assert_eq!(a.take("sslmode").unwrap().as_deref(), Some("require"));
        assert_eq!(a.render(), "postgres://ann@db:5432/team");
        // A password holding `@` and `:`, percent-encoded or not.
        let mut a = Address::parse("postgres://ann:p@ss:w@db/team").unwrap();
        assert_eq!(a.take_password().unwrap().as_deref(), Some("p@ss:w"));
        assert_eq!(a.render(), "postgres://ann@db/team");
        let mut a = Address::parse(
            "host=/run/pg port=6432 user=ann password='Pw9-s3cret' dbname = 'my team'",
        )
        .unwrap();
        assert_eq!(a.take_password().unwrap().as_deref(), Some(PW));
        assert_eq!(
            a.render(),
            "host=/run/pg port=6432 user=ann dbname='my team'"
        );
        let a = Address::parse(r"password='it\'s' user=ann").unwrap();
        assert_eq!(a.render(), r"password='it\'s' user=ann");
    }

    #[test]
    fn errors_never_repeat_the_address() {
        for bad in [
            "mysql://ann:Pw9-s3cret@db/team",
            "Pw9-s3cret",
            "postgres://ann:Pw9-s3cret@/team",
            "host=db password=Pw9-s3cret dbname",
            "host=db password='Pw9-s3cret",
            "postgres://ann:Pw9-s3cret%ff@db/team",
        ] {
            let e = Address::parse(bad).and_then(|mut a| a.take_password().map(|_| ()));
            let e = e.expect_err(bad).to_string();
            assert!(!e.contains(PW), "{bad}: {e}");
        }
    }
}
