//! The fleet collector (`hostping collector`): the fleet's store (issue 14, DESIGN 4.5). Agents push every finished
//! run over HTTP; the collector checks the token and the contract and stores the run, its
//! paths, links and diagnoses in PostgreSQL in one transaction, answering 2xx only after the
//! commit, so a run an agent was told is stored survives a `kill -9` of the collector.
//!
//! PostgreSQL client: `tokio-postgres` with the `deadpool-postgres` pool. It runs on the tokio
//! runtime axum already uses, needs no database at build time (unlike sqlx's checked
//! macros), and is the maintained driver under most of the Rust PostgreSQL ecosystem.

#![deny(missing_docs)]

pub mod actions;
pub mod agents;
pub mod api;
pub mod batch;
pub mod bench;
pub mod collectives;
mod database;
pub mod database_url;
pub mod fabric;
pub mod fleet;
pub mod job;
pub mod job_series;
pub mod mesh;
pub mod metrics;
pub mod pair_baselines;
pub mod prometheus;
pub mod reads;
pub mod refresh;
pub mod retention;
pub mod schema;
pub mod slow_jobs;
pub mod timeline;
pub mod verdicts;
pub mod writer;

use database_url::DatabaseUrl;
use fleet_api::tls::{self, TlsError, TlsFiles};
use fleet_api::tokens::{TokenError, Tokens};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The most a pushed run may weigh (a report of a large host is tens of kB).
pub const DEFAULT_MAX_BODY: usize = 4 << 20;

/// Batches stored at once (collector/writer.rs): while one waits for its commit, the next
/// is written. On the 2-core bench (16 senders, 100 hosts) 2 writers gave 703-811 runs/s,
/// 4 gave 767-1011 and 8 gave 734-759: fewer make PostgreSQL wait on commits, more make
/// smaller batches (BENCHMARKS.md).
const WRITERS: usize = 4;

/// What the collector is told on the command line.
#[derive(Debug, Clone)]
pub struct CollectorConfig {
    /// `postgres://USER@HOST:PORT/DB` (libpq's URL form) or libpq's `key=value` pairs; shown
    /// redacted.
    pub database: DatabaseUrl,
    /// Where the API listens.
    pub listen: SocketAddr,
    /// The agents' tokens; without a file every run is refused.
    pub tokens: Option<PathBuf>,
    /// Who may ask for a mesh (`POST /api/mesh`), the agents' probe-tokens format; without a
    /// file mesh is off.
    pub probe_tokens: Option<PathBuf>,
    /// The fabric the mesh chooses its pairs on and reads its routes from (`--fabric`,
    /// `--routes`, read and checked before the collector starts); without one, per rail.
    pub fabric: Option<mesh::MeshFabric>,
    /// The most a pushed run may weigh, bytes.
    pub max_body: usize,
    /// Serve HTTPS with this certificate and key; plain HTTP without.
    pub tls: Option<TlsFiles>,
    /// How long switch-port sweeps are kept (`--keep-sweeps`, a day by default: a job's
    /// verdict asks about hours, and a day of a 3,888-port fabric swept at 1 Hz is about
    /// 336 million delta rows, some 150 GB with their indexes (BENCHMARKS.md);
    /// crate::fabric::store).
    pub keep_sweeps: std::time::Duration,
    /// How old a run may get before it is deleted (`--keep-runs`, 30 days by default;
    /// `None`: every run is kept), crate::retention.
    pub keep_runs: Option<std::time::Duration>,
    /// A token of the probe-tokens file the collector probes with when it judges a slow
    /// job by itself (crate::slow_jobs); `None`: its own verdicts run without probes.
    pub judge_probe_token: Option<String>,
    /// The action policy (`--actions`, read and checked before the collector starts),
    /// crate::actions; `None`: nothing acts.
    pub actions: Option<verdict::actions::Policy>,
    /// Who may undo an action (`--action-tokens`, the probe-tokens format).
    pub action_tokens: Option<PathBuf>,
    /// A Prometheus server to read jobs' NCCL Inspector series from (`--prometheus`,
    /// crate::prometheus); `None`: only agents' posts.
    pub prometheus: Option<prometheus::PrometheusSource>,
}

/// Why the collector could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CollectorError {
    /// The tokens file.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// The TLS certificate or key.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The database URL does not parse.
    #[error("--database {url}: {reason}")]
    Url {
        /// The URL given, redacted.
        url: String,
        /// Why, with its causes, scrubbed of the password.
        reason: String,
    },
    /// The pool could not be built.
    #[error("--database: {0}")]
    Pool(#[from] deadpool_postgres::BuildError),
    /// No connection to the database.
    #[error("database {url}: {reason}")]
    Connect {
        /// The URL given, redacted.
        url: String,
        /// Why, with its causes (`connection refused`, `password authentication failed`),
        /// scrubbed of the password.
        reason: String,
    },
    /// The probe token for the collector's own verdicts is not one of the probe-tokens
    /// file's.
    #[error("--judge-probe-token-file: {0}")]
    JudgeToken(String),
    /// The database refused a migration.
    #[error("database {url}: {reason}")]
    Migrate {
        /// The URL given, redacted.
        url: String,
        /// Why, in the server's words when it answered.
        reason: String,
    },
    /// The listening socket or the runtime.
    #[error("listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A tokio-postgres error in the server's own words when the server answered (`ERROR:
/// invalid byte sequence for encoding "UTF8": 0x00`), else in tokio-postgres's with its
/// cause (`error communicating with the server: Connection reset by peer`): its `Display`
/// alone says only `db error` and leaves the rest to `source()`, which a one-line message
/// (an HTTP answer, a log line) would lose.
pub(crate) fn server_words(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.to_string();
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// Connects, migrates, listens and serves until the process is stopped. `ready` is called
/// with the bound address (the real port when port 0 was asked for).
pub fn run(config: &CollectorConfig, ready: impl FnOnce(SocketAddr)) -> Result<(), CollectorError> {
    let tokens = match &config.tokens {
        Some(file) => Tokens::load(file)?,
        None => Tokens::default(),
    };
    let probe_tokens = config
        .probe_tokens
        .as_deref()
        .map(Tokens::load)
        .transpose()?;
    if let Some(token) = &config.judge_probe_token {
        match &probe_tokens {
            None => {
                return Err(CollectorError::JudgeToken(
                    "probes need --probe-tokens FILE, the file the token is one of".into(),
                ))
            }
            Some(tokens) if tokens.host_of(token).is_none() => {
                return Err(CollectorError::JudgeToken(
                    "the token is not one of --probe-tokens' (the agents would refuse it)".into(),
                ))
            }
            Some(_) => {}
        }
    }
    let action_tokens = config
        .action_tokens
        .as_deref()
        .map(Tokens::load)
        .transpose()?
        .map(std::sync::Arc::new);
    let tls = config.tls.as_ref().map(tls::server_config).transpose()?;
    let db = &config.database;
    let pg: tokio_postgres::Config =
        db.expose()
            .parse()
            .map_err(|e: tokio_postgres::Error| CollectorError::Url {
                url: db.redacted(),
                reason: db.explain(&e),
            })?;
    let listen_error = |source| CollectorError::Listen {
        addr: config.listen,
        source,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(listen_error)?;
    runtime.block_on(async {
        let manager = deadpool_postgres::Manager::new(pg, tokio_postgres::NoTls);
        // Every wait is bounded: with the database unreachable a request is answered 503
        // within seconds (the agent keeps the run and retries) instead of hanging.
        let bounded = Some(std::time::Duration::from_secs(5));
        let pool = deadpool_postgres::Pool::builder(manager)
            .max_size(16)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(bounded)
            .create_timeout(bounded)
            .recycle_timeout(bounded)
            .build()?;
        let mut client = pool.get().await.map_err(|e| CollectorError::Connect {
            url: db.redacted(),
            reason: db.explain(&e),
        })?;
        schema::migrate(&mut client)
            .await
            .map_err(|e| CollectorError::Migrate {
                url: db.redacted(),
                reason: db.scrub(&server_words(&e)),
            })?;
        drop(client);
        tokio::spawn(refresh::refresh_loop(pool.clone(), |line| {
            eprintln!("hostping collector: {line}")
        }));
        let mut registry = prometheus_client::registry::Registry::default();
        let retention = retention::Settings::keeping(config.keep_runs);
        let retained = retention::Metrics::register(&mut registry, retention.keep);
        tokio::spawn(retention::retention_loop(
            pool.clone(),
            retention,
            retained,
            |line| eprintln!("hostping collector: {line}"),
        ));
        let listener = std::net::TcpListener::bind(config.listen).map_err(listen_error)?;
        listener.set_nonblocking(true).map_err(listen_error)?;
        ready(listener.local_addr().map_err(listen_error)?);
        let writer = writer::Writer::start(pool.clone(), WRITERS);
        let access = mesh::Access::new(pool.clone(), probe_tokens, config.fabric.clone());
        let judged = slow_jobs::Metrics::register(&mut registry);
        let posted = std::sync::Arc::new(collectives::Posted::default());
        let acting = config
            .actions
            .clone()
            .map(|policy| actions::Actions::new(pool.clone(), policy));
        if let Some(acting) = &acting {
            tokio::spawn(
                acting
                    .clone()
                    .tick_loop(|line| eprintln!("hostping collector: {line}")),
            );
        }
        tokio::spawn(slow_jobs::watch_loop(
            access.clone(),
            config.judge_probe_token.clone(),
            acting.clone(),
            posted.clone(),
            judged,
            |line| eprintln!("hostping collector: {line}"),
        ));
        if let Some(source) = config.prometheus.clone() {
            let read = prometheus::Metrics::register(&mut registry);
            tokio::spawn(prometheus::poll_loop(
                pool.clone(),
                source,
                posted.clone(),
                read,
                |line| eprintln!("hostping collector: {line}"),
            ));
        }
        let tokens = std::sync::Arc::new(tokens);
        // The jobs' collectives take the runs' tokens and body limit (`api::authorized_body`).
        let pool_for_verdicts = pool.clone();
        let app = collectives::routes(pool.clone(), tokens.clone(), config.max_body, posted)
            .merge(job_series::routes(pool.clone()))
            .merge(api::router(
                pool,
                writer,
                tokens,
                config.max_body,
                config.keep_sweeps,
            ))
            .merge(mesh::routes(access.clone()))
            .merge(job::routes(access))
            .merge(actions::api::routes(
                pool_for_verdicts.clone(),
                action_tokens,
                acting,
            ))
            .merge(verdicts::routes(pool_for_verdicts))
            .merge(metrics::routes(std::sync::Arc::new(registry)));
        match tls {
            Some(tls) => {
                let tls = axum_server::tls_rustls::RustlsConfig::from_config(tls);
                axum_server::tls_rustls::from_tcp_rustls(listener, tls)
                    .map_err(listen_error)?
                    .serve(app.into_make_service())
                    .await
            }
            None => {
                let listener = tokio::net::TcpListener::from_std(listener).map_err(listen_error)?;
                axum::serve(listener, app).await
            }
        }
        .map_err(listen_error)
    })
}
