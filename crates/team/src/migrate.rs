//! The team store's schema, in numbered steps. `migrate` brings a store up to
//! [`SCHEMA_VERSION`], each step once, in one transaction, one machine at a time (an advisory
//! lock): two machines joining at once do not both create the tables.

use crate::TeamError;
use tokio_postgres::Client;

/// The schema this build writes and reads.
pub const SCHEMA_VERSION: i32 = 2;

/// Lock id of the migration step (any fixed number: it only has to be ours).
const MIGRATION_LOCK: i64 = 0x6169_736d;

/// Each step's version and SQL, in order. A step is never edited once released: a change is a
/// new step.
const STEPS: &[(i32, &str)] = &[
    (
        1,
        "CREATE EXTENSION IF NOT EXISTS vector;
     CREATE TABLE team_threads (
        team text NOT NULL,
        project text NOT NULL,
        id text NOT NULL,
        title text NOT NULL,
        status text NOT NULL,
        -- Metadata edits: the highest version wins; messages are never lost to one.
        version bigint NOT NULL DEFAULT 1,
        author text NOT NULL,
        machine text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (team, project, id)
     );
     CREATE TABLE team_messages (
        team text NOT NULL,
        project text NOT NULL,
        id text NOT NULL,
        thread_id text NOT NULL,
        content text NOT NULL,
        embedding vector(384),
        author text NOT NULL,
        machine text NOT NULL,
        created_at timestamptz NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED,
        PRIMARY KEY (team, project, id)
     );
     CREATE INDEX team_messages_embedding ON team_messages USING hnsw (embedding vector_cosine_ops);
     CREATE INDEX team_messages_words ON team_messages USING gin (tsv);
     CREATE INDEX team_messages_thread ON team_messages (team, project, thread_id);",
    ),
    (
        2,
        // The vector index in half precision (pgvector 0.7 or newer): half the pages to read
        // per search and to write per message, for the same neighbours; distances are still
        // computed in full precision on what it finds.
        "CREATE INDEX team_messages_embedding_half ON team_messages
            USING hnsw ((embedding::halfvec(384)) halfvec_cosine_ops);
         DROP INDEX team_messages_embedding;",
    ),
];

/// Brings the store to [`SCHEMA_VERSION`]; returns the version it is at. A store newer than
/// this build is left alone and said so.
pub async fn migrate(client: &mut Client) -> Result<i32, TeamError> {
    migrate_to(client, SCHEMA_VERSION).await
}

/// Brings the store to `target` (no further than [`SCHEMA_VERSION`]): [`migrate`], or an older
/// schema for the tests of an upgrade.
pub async fn migrate_to(client: &mut Client, target: i32) -> Result<i32, TeamError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS ai_schema (
                version integer PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
             )",
        )
        .await
        .map_err(|e| TeamError::Migrate(e.to_string()))?;
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let current: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM ai_schema", &[])
        .await?
        .get(0);
    if current > SCHEMA_VERSION {
        return Err(TeamError::Migrate(format!(
            "the store is at version {current}, newer than this build's {SCHEMA_VERSION}: update ai-smartness"
        )));
    }
    for (version, sql) in STEPS.iter().filter(|(v, _)| *v > current && *v <= target) {
        tx.batch_execute(sql).await.map_err(|e| {
            let hint = if e.to_string().contains("vector") {
                " (the pgvector extension must be installed on the server; CREATE EXTENSION vector needs a role allowed to create it)"
            } else {
                ""
            };
            TeamError::Migrate(format!("step {version}: {e}{hint}"))
        })?;
        tx.execute("INSERT INTO ai_schema (version) VALUES ($1)", &[version])
            .await?;
    }
    tx.commit().await?;
    Ok(target.min(SCHEMA_VERSION).max(current))
}

/// The version the store is at (0: never migrated).
pub async fn current_version(client: &Client) -> Result<i32, TeamError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('ai_schema') IS NOT NULL", &[])
        .await?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_one("SELECT coalesce(max(version), 0) FROM ai_schema", &[])
        .await?
        .get(0))
}
