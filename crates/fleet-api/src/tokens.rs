//! Agent tokens: a file of `HOST TOKEN` lines, kept in memory only as SHA-256 digests
//! (DESIGN 4.5, issue 14 part 5). A presented token is hashed and compared with every digest
//! in constant time, so neither the comparison nor the lookup reveals how much of a guess
//! matched.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Why a tokens file was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The file could not be read.
    #[error("cannot read the tokens file {file}: {source}")]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line that is not `HOST TOKEN`.
    #[error("{file}:{line}: {reason}")]
    Line {
        /// The file.
        file: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// The hosts allowed to push runs, each with the digests of its tokens (several per host
/// let a token be rotated without a gap).
#[derive(Debug, Default, Clone)]
pub struct Tokens {
    entries: Vec<(String, [u8; 32])>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Equality whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl Tokens {
    /// Reads a tokens file.
    pub fn load(file: &Path) -> Result<Self, TokenError> {
        let text = std::fs::read_to_string(file).map_err(|source| TokenError::Read {
            file: file.to_owned(),
            source,
        })?;
        Self::parse(file, &text)
    }

    /// Parses `HOST TOKEN` lines; blank lines and `#` comments are skipped. A token given to
    /// two hosts is refused (it could not tell them apart).
    pub fn parse(file: &Path, text: &str) -> Result<Self, TokenError> {
        let mut tokens = Tokens::default();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason: &str| TokenError::Line {
                file: file.to_owned(),
                line: i + 1,
                reason: reason.to_owned(),
            };
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [host, token] = fields[..] else {
                return Err(bad(
                    "expected `NAME TOKEN`: a host (or a probe-token holder), then its token",
                ));
            };
            if token.len() < 16 {
                return Err(bad("the token is shorter than 16 characters"));
            }
            let d = digest(token);
            if let Some((other, _)) = tokens.entries.iter().find(|(_, e)| *e == d) {
                if other != host {
                    return Err(bad(&format!("the token is already given to {other}")));
                }
            }
            tokens.entries.push((host.to_owned(), d));
        }
        Ok(tokens)
    }

    /// The host a token belongs to, if any.
    pub fn host_of(&self, token: &str) -> Option<&str> {
        let d = digest(token);
        let mut found = None;
        // Every entry is compared, whether or not one matched already.
        for (host, e) in &self.entries {
            if constant_time_eq(e, &d) && found.is_none() {
                found = Some(host.as_str());
            }
        }
        found
    }

    /// How many tokens are known.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is known (then every run is refused).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_tokens_to_hosts_and_keeps_only_digests() {
        let text = "# fleet\nnode-1 aaaaaaaaaaaaaaaa1\n\nnode-2  bbbbbbbbbbbbbbbb2\nnode-1 cccccccccccccccc3\n";
        let t = Tokens::parse(Path::new("t"), text).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t.host_of("aaaaaaaaaaaaaaaa1"), Some("node-1"));
        assert_eq!(t.host_of("cccccccccccccccc3"), Some("node-1"));
        assert_eq!(t.host_of("bbbbbbbbbbbbbbbb2"), Some("node-2"));
        assert_eq!(t.host_of("bbbbbbbbbbbbbbbb"), None);
        assert!(!format!("{t:?}").contains("aaaaaaaa"));
    }

    #[test]
    fn refuses_bad_lines_naming_file_and_line() {
        let e = Tokens::parse(Path::new("tok"), "a aaaaaaaaaaaaaaaa\nb\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "tok:2: expected `NAME TOKEN`: a host (or a probe-token holder), then its token"
        );
        let e = Tokens::parse(Path::new("tok"), "a short\n").unwrap_err();
        assert!(e.to_string().starts_with("tok:1: the token is shorter"));
        let e = Tokens::parse(Path::new("tok"), "a aaaaaaaaaaaaaaaa\nb aaaaaaaaaaaaaaaa\n")
            .unwrap_err();
        assert_eq!(e.to_string(), "tok:2: the token is already given to a");
    }
}
