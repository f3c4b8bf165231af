//! `--prometheus URL`: the server's base URL, checked when the flag is read (a malformed one
//! is exit 2 naming the flag), and the API endpoint the collector asks under it.

/// A Prometheus server's base URL, `http://HOST:PORT` or `https://HOST:PORT`, with a path
/// prefix when it is served under one (`--web.route-prefix`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrometheusUrl(String);

/// Why a `--prometheus` URL is refused.
#[derive(Debug, thiserror::Error)]
pub enum UrlError {
    /// Not a URL at all.
    #[error("`{text}` is not a URL: {source}")]
    NotUrl {
        /// What was given.
        text: String,
        /// Why.
        source: ureq::http::uri::InvalidUri,
    },
    /// Not http or https.
    #[error("`{text}`: give an http:// or https:// URL")]
    Scheme {
        /// What was given.
        text: String,
    },
    /// No host.
    #[error("`{text}` names no host")]
    NoHost {
        /// What was given.
        text: String,
    },
    /// A query string, which the API's own would clash with.
    #[error("`{text}`: give the server's base URL, without a query")]
    Query {
        /// What was given.
        text: String,
    },
}

impl PrometheusUrl {
    /// Checks `text` (the CLI's value parser): scheme, host, no query.
    pub fn parse(text: &str) -> Result<PrometheusUrl, UrlError> {
        let owned = || text.to_owned();
        let uri: ureq::http::Uri = text.parse().map_err(|source| UrlError::NotUrl {
            text: owned(),
            source,
        })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err(UrlError::Scheme { text: owned() });
        }
        if uri.host().unwrap_or_default().is_empty() {
            return Err(UrlError::NoHost { text: owned() });
        }
        if uri.query().is_some() {
            return Err(UrlError::Query { text: owned() });
        }
        Ok(PrometheusUrl(text.trim_end_matches('/').to_owned()))
    }

    /// The instant-query endpoint.
    pub(super) fn query_endpoint(&self) -> String {
        format!("{}/api/v1/query", self.0)
    }
}

impl std::fmt::Display for PrometheusUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked() {
        let ok = PrometheusUrl::parse("http://prom:9090/").unwrap();
        assert_eq!(ok.query_endpoint(), "http://prom:9090/api/v1/query");
        let prefixed = PrometheusUrl::parse("https://monitor.example/prometheus").unwrap();
        assert_eq!(
            prefixed.query_endpoint(),
            "https://monitor.example/prometheus/api/v1/query"
        );
        assert!(matches!(
            PrometheusUrl::parse("prom:9090"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            PrometheusUrl::parse("ftp://prom"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            PrometheusUrl::parse("http://prom:9090/?x=1"),
            Err(UrlError::Query { .. })
        ));
        assert!(matches!(
            PrometheusUrl::parse("http://prom :9090"),
            Err(UrlError::NotUrl { .. })
        ));
    }
}
