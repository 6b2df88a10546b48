//! Sending shared memory to the store. Every write is idempotent by id: a batch sent twice (a
//! crash after the store took it and before the sender noted it) is stored once. Thread
//! metadata (title, status) resolves by its edit time, last writer wins: the store keeps the
//! edit made last (ties go to the machine name sorting last) and bumps the thread's version;
//! an older edit arriving late changes nothing. Messages are never touched by a metadata edit.

use crate::TeamError;
use tokio_postgres::Client;

/// A shared thread's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct SharedThread {
    pub id: String,
    pub title: String,
    pub status: String,
    /// When this machine's title and status became what they are (RFC 3339).
    pub edited_at: String,
}

/// A shared message (already cleaned and redacted on this machine when it was captured).
#[derive(Debug, Clone, PartialEq)]
pub struct SharedMessage {
    pub id: String,
    pub thread_id: String,
    pub content: String,
    /// Its 384-dimension embedding, when it has one.
    pub embedding: Option<Vec<f32>>,
    /// RFC 3339.
    pub created_at: String,
}

/// Who and where shared items come from.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    pub team: String,
    pub project: String,
    pub author: String,
    pub machine: String,
}

/// pgvector's text form of a vector: `[0.1,0.2,...]`.
pub fn vector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 10 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("{x:.6}"));
    }
    s.push(']');
    s
}

/// Sends threads and messages in one transaction; returns how many messages were new to the
/// store.
pub async fn send(
    client: &mut Client,
    origin: &Origin,
    threads: &[SharedThread],
    messages: &[SharedMessage],
) -> Result<u64, TeamError> {
    let tx = client.transaction().await?;
    if !threads.is_empty() {
        let ids: Vec<&str> = threads.iter().map(|t| t.id.as_str()).collect();
        let titles: Vec<&str> = threads.iter().map(|t| t.title.as_str()).collect();
        let statuses: Vec<&str> = threads.iter().map(|t| t.status.as_str()).collect();
        let edited: Vec<&str> = threads.iter().map(|t| t.edited_at.as_str()).collect();
        tx.execute(
            "INSERT INTO team_threads (team, project, id, title, status, author, machine,
                                       updated_at)
             SELECT $1, $2, t.id, t.title, t.status, $3, $4, t.at::timestamptz
               FROM unnest($5::text[], $6::text[], $7::text[], $8::text[])
                    AS t(id, title, status, at)
             ON CONFLICT (team, project, id) DO UPDATE
               SET title = EXCLUDED.title, status = EXCLUDED.status,
                   author = EXCLUDED.author, machine = EXCLUDED.machine,
                   updated_at = EXCLUDED.updated_at,
                   version = team_threads.version
                       + CASE WHEN (team_threads.title, team_threads.status)
                                   IS DISTINCT FROM (EXCLUDED.title, EXCLUDED.status)
                              THEN 1 ELSE 0 END
               WHERE (EXCLUDED.updated_at, EXCLUDED.machine)
                     > (team_threads.updated_at, team_threads.machine)",
            &[
                &origin.team,
                &origin.project,
                &origin.author,
                &origin.machine,
                &ids,
                &titles,
                &statuses,
                &edited,
            ],
        )
        .await?;
    }
    let mut new = 0;
    if !messages.is_empty() {
        let ids: Vec<&str> = messages.iter().map(|m| m.id.as_str()).collect();
        let threads: Vec<&str> = messages.iter().map(|m| m.thread_id.as_str()).collect();
        let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
        let vectors: Vec<Option<String>> = messages
            .iter()
            .map(|m| m.embedding.as_deref().map(vector_text))
            .collect();
        let times: Vec<&str> = messages.iter().map(|m| m.created_at.as_str()).collect();
        new = tx
            .execute(
                "INSERT INTO team_messages
                    (team, project, id, thread_id, content, embedding, author, machine, created_at)
                 SELECT $1, $2, m.id, m.thread_id, m.content, m.vector::vector, $3, $4,
                        m.at::timestamptz
                   FROM unnest($5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
                        AS m(id, thread_id, content, vector, at)
                 ON CONFLICT (team, project, id) DO NOTHING",
                &[
                    &origin.team,
                    &origin.project,
                    &origin.author,
                    &origin.machine,
                    &ids,
                    &threads,
                    &contents,
                    &vectors,
                    &times,
                ],
            )
            .await?;
    }
    tx.commit().await?;
    Ok(new)
}
