//! Search in the store: the dense order (pgvector's HNSW index) and the lexical order (the
//! full-text index) of the team's messages for this project, fused by reciprocal rank, all in
//! SQL, so a team's memory can grow past what one machine holds.

use crate::outbox::vector_text;
use crate::TeamError;
use tokio_postgres::Client;

/// How many of each order the fusion looks at.
const CANDIDATES: i64 = 40;

/// Set on each connection. The HNSW search looks at 100 candidates (pgvector's default, 40,
/// misses more true neighbours as the store grows), and goes on through the index until it has
/// enough rows of this team and project (pgvector 0.8's iterative scan; an older pgvector warns
/// and ignores it): without it, a store holding many projects could answer with fewer rows
/// than asked, or none.
pub const SESSION_SETTINGS: &str =
    "SET hnsw.ef_search = 100; SET hnsw.iterative_scan = relaxed_order";
/// Reciprocal rank fusion's constant: a rank-r item scores 1 / (K + r) in each order.
const RRF_K: f64 = 60.0;

/// A shared message that matched.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamHit {
    pub id: String,
    pub thread_id: String,
    pub thread_title: String,
    pub content: String,
    pub author: String,
    pub machine: String,
    /// RFC 3339.
    pub created_at: String,
    /// The fused score.
    pub score: f64,
    /// The cosine of its vector with the query's (0 when it has none).
    pub dense: f64,
}

/// The team's best messages for a query (its text and its 384-dimension vector).
pub async fn search(
    client: &Client,
    team: &str,
    project: &str,
    text: &str,
    vector: &[f32],
    limit: i64,
) -> Result<Vec<TeamHit>, TeamError> {
    let v = vector_text(vector);
    let rows = client
        .query(
            "WITH dense AS (
                SELECT id, dist, row_number() OVER (ORDER BY dist) AS r FROM (
                    -- The vector is a parameter, not a joined value: the planner then orders
                    -- by the HNSW index instead of scanning every row.
                    SELECT m.id, m.embedding <=> $3::text::vector AS dist
                      FROM team_messages m
                     WHERE m.team = $1 AND m.project = $2 AND m.embedding IS NOT NULL
                     ORDER BY m.embedding <=> $3::text::vector
                     LIMIT $5) d),
             lex AS (
                SELECT id, row_number() OVER (ORDER BY rank DESC) AS r FROM (
                    SELECT m.id, ts_rank(m.tsv, plainto_tsquery('simple', $4)) AS rank
                      FROM team_messages m
                     WHERE m.team = $1 AND m.project = $2
                       AND m.tsv @@ plainto_tsquery('simple', $4)
                     ORDER BY rank DESC
                     LIMIT $5) l)
             SELECT m.id, m.thread_id, coalesce(t.title, ''), m.content, m.author, m.machine,
                    to_char(m.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),
                    coalesce(1.0 / ($6::float8 + d.r), 0) + coalesce(1.0 / ($6::float8 + l.r), 0),
                    coalesce(1 - d.dist, 0)
               FROM (SELECT id FROM dense UNION SELECT id FROM lex) ids
               JOIN team_messages m ON m.team = $1 AND m.project = $2 AND m.id = ids.id
               LEFT JOIN dense d ON d.id = m.id
               LEFT JOIN lex l ON l.id = m.id
               LEFT JOIN team_threads t
                      ON t.team = m.team AND t.project = m.project AND t.id = m.thread_id
              ORDER BY 8 DESC, m.id
              LIMIT $7",
            &[&team, &project, &v, &text, &CANDIDATES, &RRF_K, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| TeamHit {
            id: r.get(0),
            thread_id: r.get(1),
            thread_title: r.get(2),
            content: r.get(3),
            author: r.get(4),
            machine: r.get(5),
            created_at: r.get(6),
            score: r.get(7),
            dense: r.get(8),
        })
        .collect())
}
