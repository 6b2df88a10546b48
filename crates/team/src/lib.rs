//! Team memory on PostgreSQL with pgvector: what identifies a project across machines, how to
//! reach the server without ever writing its password down, and the schema (versioned
//! migrations run on join).
//!
//! Local memory stays the default and works alone; this crate only speaks to the team store.

mod address;
pub mod identity;
pub mod migrate;
pub mod outbox;
pub mod search;
pub mod secret;
pub mod tls;

use std::time::Duration;

pub use identity::{normalize_remote, project_id};
pub use migrate::{migrate, SCHEMA_VERSION};
pub use secret::{password_for, split_password};
/// The client library: its connection is what this crate's calls take.
pub use tokio_postgres;

#[derive(Debug, thiserror::Error)]
pub enum TeamError {
    #[error("not a PostgreSQL address: {0}")]
    Url(String),
    #[error("{0}")]
    NoRemote(String),
    #[error("cannot reach the team store: {0}")]
    Connect(String),
    #[error("TLS to the team store: {0}")]
    Tls(String),
    #[error("the team store did not answer within {0:?}")]
    Timeout(Duration),
    #[error("the team store's schema: {0}")]
    Migrate(String),
    #[error("the team store: {0}")]
    Query(#[from] tokio_postgres::Error),
}

/// How long a connection attempt may take before the caller gets on without it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to `url` (without its password) with `password`. The connection's task runs on
/// the caller's runtime and ends with the client.
pub async fn connect(
    url: &str,
    password: Option<&str>,
) -> Result<tokio_postgres::Client, TeamError> {
    let (url, tls) = tls::split_tls(url)?;
    let mut config: tokio_postgres::Config =
        url.parse().map_err(|e| TeamError::Url(format!("{e}")))?;
    config.ssl_mode(tls.ssl_mode());
    if let Some(p) = password {
        config.password(p);
    }
    config.connect_timeout(CONNECT_TIMEOUT);
    config.application_name("ai-smartness");
    let connector = tls::Connector::new(tls.client_config()?);
    // The session's settings are inside the bound too: a server that takes the handshake and
    // then stalls must not hold the caller (and the connection's lock) forever.
    tokio::time::timeout(CONNECT_TIMEOUT, async {
        let (client, connection) = config
            .connect(connector)
            .await
            .map_err(|e| TeamError::Connect(with_causes(&e, password.is_none())))?;
        tokio::spawn(async move {
            // Ends when the client is dropped or the server goes away; the client's calls say
            // so.
            let _ = connection.await;
        });
        client.batch_execute(&search::session_settings()).await?;
        Ok(client)
    })
    .await
    .map_err(|_| TeamError::Timeout(CONNECT_TIMEOUT))?
}

/// An error with what caused it (the client's own message is often only its kind), and what
/// to do when no password was found.
fn with_causes(e: &tokio_postgres::Error, no_password: bool) -> String {
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    if no_password && text.contains("password") {
        text.push_str(
            " (no password found: set PGPASSWORD, the variable team.password_env names, or add it to ~/.pgpass)",
        );
    }
    text
}

/// What `ai team status` reports of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreStatus {
    /// The server's version string.
    pub server: String,
    /// The schema version the store is at.
    pub schema: i32,
    /// Shared messages of this team, all projects.
    pub team_messages: i64,
    /// Shared messages of this project in this team.
    pub project_messages: i64,
    /// Threads of this project shared in this team.
    pub project_threads: i64,
}

/// Counts what the team shares, for this project and in all.
pub async fn status(
    client: &tokio_postgres::Client,
    team: &str,
    project: &str,
) -> Result<StoreStatus, TeamError> {
    let server: String = client.query_one("SHOW server_version", &[]).await?.get(0);
    let schema = migrate::current_version(client).await?;
    let row = client
        .query_one(
            "SELECT
                (SELECT count(*) FROM team_messages WHERE team = $1),
                (SELECT count(*) FROM team_messages WHERE team = $1 AND project = $2),
                (SELECT count(*) FROM team_threads WHERE team = $1 AND project = $2)",
            &[&team, &project],
        )
        .await?;
    Ok(StoreStatus {
        server,
        schema,
        team_messages: row.get(0),
        project_messages: row.get(1),
        project_threads: row.get(2),
    })
}
