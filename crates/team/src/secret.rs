//! The store's password is never written by us: not in `config.json`, not in a log. It comes
//! from an environment variable the config names, else `PGPASSWORD`, else the password file
//! PostgreSQL's own tools read (`PGPASSFILE`, else `~/.pgpass`).

use crate::address::Address;
use crate::TeamError;
use std::path::PathBuf;
use tokio_postgres::config::Host;

/// The address without its password, and the password when it had one (in the user's part,
/// or a `password` parameter, in either of libpq's forms). The client library reads the rest
/// back: an address it would refuse is refused here, before anything is written. No error
/// repeats the address.
pub fn split_password(address: &str) -> Result<(String, Option<String>), TeamError> {
    let mut parsed = Address::parse(address)?;
    let password = parsed.take_password()?;
    let kept = parsed.render();
    let (plain, _) = crate::tls::split_tls(&kept)?;
    plain.parse::<tokio_postgres::Config>().map_err(|e| {
        // The library's reasons name an option, never its value.
        let mut why = e.to_string();
        let mut cause = std::error::Error::source(&e);
        while let Some(c) = cause {
            why.push_str(": ");
            why.push_str(&c.to_string());
            cause = c.source();
        }
        TeamError::Url(format!("the client library refuses it ({why})"))
    })?;
    Ok((kept, password))
}

/// The password for `address` (which carries none): the variable `env_name` names, else
/// `PGPASSWORD`, else the password file's matching line.
pub fn password_for(address: &str, env_name: Option<&str>) -> Option<String> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if let Some(p) = env_name.and_then(var) {
        return Some(p);
    }
    if let Some(p) = var("PGPASSWORD") {
        return Some(p);
    }
    let file = var("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(file).ok()?;
    // Without the TLS options the client library does not know (`verify-full`, ...).
    let (address, _) = crate::tls::split_tls(address).ok()?;
    let config: tokio_postgres::Config = address.parse().ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // A socket folder matches `localhost`, as PostgreSQL's own tools do.
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default().to_string();
    let db = config.get_dbname().map_or(user.clone(), str::to_string);
    pgpass_lookup(&text, &host, &port, &db, &user)
}

/// The password of the first line of a password file matching these (`*` matches anything;
/// `\:` and `\\` are a colon and a backslash).
pub fn pgpass_lookup(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_fields(line);
        let [h, p, d, u, password] = fields.as_slice() else {
            continue;
        };
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if matches(h, host) && matches(p, port) && matches(d, db) && matches(u, user) {
            return Some(password.clone());
        }
    }
    None
}

fn split_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(f)) = (chars.next(), fields.last_mut()) {
                    f.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_never_stays_in_the_address() {
        let (url, pw) = split_password("postgres://ann:s%3Acret@db.example.com:6432/team").unwrap();
        assert_eq!(url, "postgres://ann@db.example.com:6432/team");
        assert_eq!(pw.as_deref(), Some("s:cret"));
        let (url, pw) =
            split_password("postgresql://ann@localhost/team?host=/run/pg&password=x1").unwrap();
        assert_eq!(url, "postgresql://ann@localhost/team?host=/run/pg");
        assert_eq!(pw.as_deref(), Some("x1"));
        let (url, pw) = split_password("postgres://ann@localhost/team").unwrap();
        assert_eq!((url.as_str(), pw), ("postgres://ann@localhost/team", None));
        // libpq's own forms: an empty host with the socket folder in the query, and pairs.
        let (url, pw) = split_password("postgresql://ann:pw@/team?host=/run/pg&port=6432").unwrap();
        assert_eq!(url, "postgresql://ann@/team?host=/run/pg&port=6432");
        assert_eq!(pw.as_deref(), Some("pw"));
        let (url, pw) = split_password("host=/run/pg user=ann password=pw dbname=team").unwrap();
        assert_eq!(url, "host=/run/pg user=ann dbname=team");
        assert_eq!(pw.as_deref(), Some("pw"));
        assert!(split_password("mysql://x@y/z").is_err());
        assert!(split_password("not a url").is_err());
        // Refused by the client library, without the password in the error.
        let e = split_password("postgres://ann:Zq7-pw@db:notaport/team").unwrap_err();
        assert!(!e.to_string().contains("Zq7-pw"), "{e}");
        let e = split_password("host=db password=Zq7-pw bogus_option=1").unwrap_err();
        assert!(!e.to_string().contains("Zq7-pw"), "{e}");
    }

    #[test]
    fn the_password_file_is_read_as_postgres_reads_it() {
        let file = "# comment\n\
                    db.example.com:5432:team:ann:first\n\
                    *:*:*:bob:b\\:c\n\
                    localhost:5432:*:ann:socket\n";
        assert_eq!(
            pgpass_lookup(file, "db.example.com", "5432", "team", "ann").as_deref(),
            Some("first")
        );
        assert_eq!(
            pgpass_lookup(file, "x", "1", "y", "bob").as_deref(),
            Some("b:c")
        );
        assert_eq!(
            pgpass_lookup(file, "localhost", "5432", "other", "ann").as_deref(),
            Some("socket")
        );
        assert_eq!(
            pgpass_lookup(file, "db.example.com", "5433", "team", "ann"),
            None
        );
    }
}
