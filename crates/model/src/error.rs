//! An error and its sources in one line, for the places that print or send one: the binary's
//! last line, an HTTP answer, a message that quotes another crate's error.

use std::error::Error;

/// An error and its sources, joined with `: `, each message once: a typed error whose own
/// words quote its source (`--token-file `t`: No such file or directory`) is not followed by
/// that source again.
///
/// ```
/// #[derive(Debug, thiserror::Error)]
/// #[error("reading `t`: {source}")]
/// struct Read { source: std::io::Error }
/// let e = Read { source: std::io::Error::other("gone") };
/// assert_eq!(model::error::chain(&e), "reading `t`: gone");
/// ```
pub fn chain(e: &(dyn Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let words = cause.to_string();
        if !out.ends_with(&words) {
            out.push_str(": ");
            out.push_str(&words);
        }
        next = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_source_the_message_does_not_quote_is_added() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(chain(&e), "outer: inner");
    }
}
