//! The database's connection string: where it comes from (`--database`, `--database-file`
//! or `HOSTPING_DATABASE_URL`, exactly one, so that a password need not appear in `ps`), and
//! how it is shown: with every credential replaced by `***`, in every message and log line.
//!
//! libpq accepts two forms (PostgreSQL manual, 34.1.1 "Connection Strings"), and so does
//! tokio-postgres: a URL, `postgres[ql]://USER:PASSWORD@HOST/DB?password=...`, and
//! `key=value` pairs, `host=H user=U password=P` (a value may be single-quoted, with `\'` and
//! `\\` escapes). A password may sit in the URL's user part, in a `password` query parameter,
//! or in a `password` pair. Redaction reads the text itself rather than a parsed
//! configuration, so that a string the driver refuses is shown without its password too;
//! and an error's words are scrubbed of the password as well, in case a driver quotes it.

use std::error::Error;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable that may hold the connection string.
pub const ENV: &str = "HOSTPING_DATABASE_URL";

/// What replaces a credential.
const HIDDEN: &str = "***";

/// A connection string, shown redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    text: String,
}

impl DatabaseUrl {
    /// The string as given.
    pub fn new(text: impl Into<String>) -> DatabaseUrl {
        DatabaseUrl { text: text.into() }
    }

    /// The string itself, for the driver only: never print it.
    pub fn expose(&self) -> &str {
        &self.text
    }

    /// The string with its credentials replaced by `***`.
    pub fn redacted(&self) -> String {
        if is_url(&self.text) {
            redact_url(&self.text)
        } else {
            redact_pairs(&self.text)
        }
    }

    /// `message` with every password of this string in it (as given, and percent-decoded)
    /// replaced by `***`.
    pub fn scrub(&self, message: &str) -> String {
        let mut out = message.to_owned();
        for secret in self.passwords() {
            // A one-character password would blank every such character of the message;
            // shorter than 4, the message is left as it is (the string itself is never in
            // it: only redacted forms are printed).
            if secret.chars().count() >= 4 {
                out = out.replace(&secret, HIDDEN);
            }
        }
        out
    }

    /// Every password the string holds, as written and percent-decoded.
    fn passwords(&self) -> Vec<String> {
        let mut found = Vec::new();
        if is_url(&self.text) {
            let (authority, _, query) = split_url(&self.text);
            if let Some((_, password)) = authority
                .rsplit_once('@')
                .and_then(|(user, _)| user.split_once(':'))
            {
                found.push(password.to_owned());
            }
            for pair in query.split('&') {
                if let Some(("password", value)) = pair.split_once('=') {
                    found.push(value.to_owned());
                }
            }
        } else {
            for (key, value) in pairs(&self.text) {
                if key == "password" {
                    found.push(unquote(value));
                }
            }
        }
        let decoded: Vec<String> = found.iter().map(|p| percent_decode(p)).collect();
        found.extend(decoded);
        found.retain(|p| !p.is_empty());
        found.sort();
        found.dedup();
        found
    }

    /// An error and its causes in one line (`error connecting to server: Connection refused
    /// (os error 111)`), scrubbed of this string's passwords: a driver's `Display` alone
    /// often says only the outermost words and leaves the reason to `source()`.
    pub fn explain(&self, e: &(dyn Error + 'static)) -> String {
        self.scrub(&model::error::chain(e))
    }
}

/// Shown redacted, whichever way it is formatted.
impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Redacted too: a `{:?}` in a log line must not leak it either.
impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({:?})", self.redacted())
    }
}

fn is_url(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("postgres://") || t.starts_with("postgresql://")
}

/// A URL's scheme with `://`, its authority (`user:password@host:port`, several hosts
/// comma-separated), and its query (after `?`, without the fragment).
fn split_url(text: &str) -> (&str, &str, &str) {
    let rest = text.split_once("://").map_or(text, |(_, r)| r);
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let query = tail.split_once('?').map_or("", |(_, q)| q);
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    (authority, tail, query)
}

fn redact_url(text: &str) -> String {
    let (scheme, rest) = text.split_once("://").unwrap_or(("", text));
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    // The user part ends at the last '@' (a password may hold '@' unescaped).
    let authority = match authority.rsplit_once('@') {
        Some((user, hosts)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:{HIDDEN}@{hosts}"),
            None => format!("{user}@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some(("password", _)) => format!("password={HIDDEN}"),
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The `key=value` pairs of libpq's other form: `(key, raw value)` with the value as written
/// (quoted or not), in order. Spaces around `=` are allowed, as libpq allows them.
fn pairs(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim();
        let after = rest[eq + 1..].trim_start();
        let len = value_len(after);
        out.push((key, &after[..len]));
        rest = after[len..].trim_start();
    }
    out
}

/// How long the value at the start of `text` is: up to the closing quote of a quoted one
/// (past `\`-escapes), else up to the next whitespace.
fn value_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    if text.starts_with('\'') {
        chars.next();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    chars.next();
                }
                '\'' => return i + 1,
                _ => {}
            }
        }
        return text.len();
    }
    text.find(char::is_whitespace).unwrap_or(text.len())
}

/// A pair's value without its quotes and escapes.
fn unquote(value: &str) -> String {
    let Some(inner) = value.strip_prefix('\'') else {
        return value.to_owned();
    };
    let inner = inner.strip_suffix('\'').unwrap_or(inner);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

fn redact_pairs(text: &str) -> String {
    pairs(text)
        .into_iter()
        .map(|(key, value)| {
            if key == "password" {
                format!("{key}={HIDDEN}")
            } else {
                format!("{key}={value}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `%XX` escapes decoded (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where the connection string was given.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// None of the three.
    #[error(
        "no database given: use --database-file FILE, the environment variable {}, or --database URL",
        ENV
    )]
    None,
    /// More than one.
    #[error("the database is given {}: give exactly one", .0.join(" and "))]
    Several(Vec<&'static str>),
    /// The file could not be read.
    #[error("--database-file {}: {source}", .file.display())]
    File {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file or the variable holds nothing.
    #[error("{0} is empty: it must hold the database's connection string (postgres://USER@HOST:PORT/DB)")]
    Empty(String),
}

/// The one connection string of `--database`, `--database-file` and the environment's
/// [`ENV`]. A file holds the string on its own (surrounding whitespace, such as the newline
/// an editor adds, is ignored), as a Kubernetes Secret mounted as a file does.
pub fn resolve(
    flag: Option<String>,
    file: Option<&Path>,
    env: Option<String>,
) -> Result<DatabaseUrl, SourceError> {
    let given: Vec<&'static str> = [
        flag.as_ref().map(|_| "--database"),
        file.map(|_| "--database-file"),
        env.as_ref().map(|_| ENV),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.len() > 1 {
        return Err(SourceError::Several(given));
    }
    let (text, from) = match (flag, file, env) {
        (Some(url), _, _) => (url, "--database".to_owned()),
        (_, Some(file), _) => {
            let text = std::fs::read_to_string(file).map_err(|source| SourceError::File {
                file: file.to_owned(),
                source,
            })?;
            (text, format!("--database-file {}", file.display()))
        }
        (_, _, Some(url)) => (url, ENV.to_owned()),
        (None, None, None) => return Err(SourceError::None),
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(SourceError::Empty(from));
    }
    Ok(DatabaseUrl::new(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn credentials_are_redacted_in_every_form() {
        let cases = [
            (
                "postgres://u:PASSWORD@db.example:5432/hostping",
                "postgres://u:***@db.example:5432/hostping",
            ),
            (
                "postgresql://u@db/hostping?password=PASSWORD&sslmode=require",
                "postgresql://u@db/hostping?password=***&sslmode=require",
            ),
            (
                "postgres://u:p%40ss@h1,h2:5433/db?password=PASSWORD",
                "postgres://u:***@h1,h2:5433/db?password=***",
            ),
            // A password with an unescaped '@': the user part ends at the last one.
            ("postgres://u:a@b@host/db", "postgres://u:***@host/db"),
            (
                "postgres://hostping@localhost/db",
                "postgres://hostping@localhost/db",
            ),
            ("postgres://u:PASSWORD@host", "postgres://u:***@host"),
            (
                "host=db user=u password=PASSWORD dbname=hostping",
                "host=db user=u password=*** dbname=hostping",
            ),
            (
                "host=db password = 'PASS WORD\\'s' user=u",
                "host=db password=*** user=u",
            ),
        ];
        for (given, shown) in cases {
            let url = DatabaseUrl::new(given);
            assert_eq!(url.redacted(), shown, "{given}");
            assert_eq!(url.to_string(), shown);
            assert!(!format!("{url:?}").contains("PASS"), "{url:?}");
        }
    }

    #[test]
    fn error_words_are_scrubbed_of_the_password_and_keep_their_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("error connecting to server")]
        struct Outer(#[source] std::io::Error);
        let url = DatabaseUrl::new("postgres://u:s3cr%2Ft@host/db?password=hunter22");
        let e = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        ));
        assert_eq!(
            url.explain(&e),
            "error connecting to server: Connection refused (os error 111)"
        );
        assert_eq!(
            url.scrub("bad password s3cr/t, s3cr%2Ft or hunter22"),
            "bad password ***, *** or ***"
        );
        let pairs = DatabaseUrl::new("user=u password='it\\'s' host=h");
        assert_eq!(pairs.redacted(), "user=u password=*** host=h");
    }

    #[test]
    fn exactly_one_source_is_taken() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("db");
        std::fs::write(&file, "postgres://u:pw@h/db\n").unwrap();
        let url = |r: Result<DatabaseUrl, SourceError>| r.map(|u| u.expose().to_owned());
        assert_eq!(
            url(resolve(None, Some(&file), None)).unwrap(),
            "postgres://u:pw@h/db"
        );
        assert_eq!(
            url(resolve(None, None, Some("postgres://e@h/db".into()))).unwrap(),
            "postgres://e@h/db"
        );
        assert_eq!(
            resolve(Some("postgres://a@h/d".into()), Some(&file), Some("x".into()))
                .unwrap_err()
                .to_string(),
            "the database is given --database and --database-file and HOSTPING_DATABASE_URL: give exactly one"
        );
        assert_eq!(
            resolve(None, None, None).unwrap_err().to_string(),
            "no database given: use --database-file FILE, the environment variable HOSTPING_DATABASE_URL, or --database URL"
        );
        std::fs::write(&file, "\n").unwrap();
        assert_eq!(
            resolve(None, Some(&file), None).unwrap_err().to_string(),
            format!(
                "--database-file {} is empty: it must hold the database's connection string (postgres://USER@HOST:PORT/DB)",
                file.display()
            )
        );
        let missing = dir.path().join("none");
        let e = resolve(None, Some(&missing), None).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("--database-file {}: ", missing.display())),
            "{e}"
        );
    }

    proptest! {
        /// Whatever the password, neither form shows it, and the rest survives.
        #[test]
        fn no_password_survives_redaction(
            password in "[A-Za-z0-9!$%^()_+=.,;~-]{4,24}",
            user in "[a-z]{1,8}",
            host in "[a-z]{1,8}",
        ) {
            prop_assume!(!user.contains(&password) && !host.contains(&password));
            for given in [
                format!("postgres://{user}:{password}@{host}:5432/db"),
                format!("postgresql://{user}@{host}/db?sslmode=disable&password={password}"),
                format!("host={host} user={user} password={password} dbname=db"),
                format!("host={host} password='{password}' user={user}"),
            ] {
                let shown = DatabaseUrl::new(given.as_str()).redacted();
                prop_assert!(!shown.contains(&password), "{} -> {}", given, shown);
                prop_assert!(shown.contains(&host) && shown.contains(&user), "{}", shown);
                prop_assert!(!DatabaseUrl::new(given.as_str()).scrub(&given).contains(&password));
            }
        }
    }
}
