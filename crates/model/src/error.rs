//! An error and its sources in one line, for the places that print or send one: the binary's
//! last line, an HTTP answer, a message that quotes another crate's error.

use std::error::Error;

/// An error and its sources, joined with `: `, each message once: a typed error whose own
/// words quote its source (`--token-file `t`: No such file or directory`), at their end or
/// anywhere in them (`device 3:rxe0 is gone (Operation not supported (os error 95))`), is
/// not followed by that source again.
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
        if !out.contains(&words) {
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

    #[derive(Debug, thiserror::Error)]
    #[error("{request}: device {device} is gone ({source})")]
    struct Quoting {
        request: String,
        device: String,
        source: std::io::Error,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("reading the counters")]
    struct Context(#[source] Quoting);

    /// An io error quoted inside its wrapper's words, then chained as its source: once.
    #[test]
    fn a_source_quoted_inside_the_message_is_not_repeated() {
        let e = Context(Quoting {
            request: "RDMA_NLDEV_CMD_STAT_GET".to_string(),
            device: "3:rxe0".to_string(),
            source: std::io::Error::from_raw_os_error(95),
        });
        let line = chain(&e);
        assert_eq!(line.matches("(os error 95)").count(), 1, "{line}");
        assert!(line
            .starts_with("reading the counters: RDMA_NLDEV_CMD_STAT_GET: device 3:rxe0 is gone ("));
    }
}
