//! Search in the store: the dense order (pgvector's HNSW index) and the lexical order (the
//! full-text index) of the team's messages for this project, fused by reciprocal rank, all in
//! SQL, so a team's memory can grow past what one machine holds.
//!
//! The lexical order asks for the query's distinctive terms, any of them (each also finding
//! the longer words it starts: a stem finds its forms), not for every word of the query: a
//! message rarely holds every word of a prompt, and the index's lists for common words are
//! long, so asking for all of them costs the most and finds the least.

use crate::outbox::vector_text;
use crate::TeamError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, Statement};

/// Set on each connection. The HNSW search looks as far as a prompt's search does (see
/// [`Depth`]), and goes on through the index until it has enough rows of this team and project
/// (pgvector 0.8's iterative scan; an older pgvector warns and ignores it): without it, a store
/// holding many projects could answer with fewer rows than asked, or none.
pub fn session_settings() -> String {
    format!(
        "{}; SET hnsw.iterative_scan = relaxed_order",
        Depth::Prompt.setting()
    )
}

/// How far a search looks: how many messages of each order the fusion weighs, and how many
/// candidates HNSW keeps on its way through the vector index (`hnsw.ef_search`). The index's
/// work grows with both, about linearly: at a million messages, each vector met on the way is
/// a page of the index to read and a distance to compute, a few milliseconds per prompt for
/// forty, more when the pages are not in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Beside a prompt's local memory, within a budget of milliseconds: a prompt's context
    /// quotes five team messages at most, and ten of each order give the fusion twice that to
    /// choose from. HNSW keeps twenty on its way: with ten, it misses a fifth of a question's
    /// eight nearest at 100,000 messages; with twenty, a twelfth, for about a millisecond more
    /// at a million (where the whole search takes about 2.5 ms, p50).
    Prompt,
    /// A search a person or a tool asked for: further, where a few milliseconds do not matter.
    Asked,
}

impl Depth {
    /// Messages of each order (dense, lexical) the fusion weighs.
    pub fn candidates(self) -> i64 {
        match self {
            Depth::Prompt => 10,
            Depth::Asked => 40,
        }
    }

    /// Its `hnsw.ef_search`: never below [`Depth::candidates`] (with fewer, the index scan
    /// goes on for the rest, at the same cost).
    pub fn ef_search(self) -> u32 {
        match self {
            Depth::Prompt => 20,
            Depth::Asked => 100,
        }
    }

    /// The statement that sets it on a connection.
    pub fn setting(self) -> String {
        format!("SET hnsw.ef_search = {}", self.ef_search())
    }
}
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

/// A connection ready to search: the queries are parsed and planned once, not at every prompt.
pub struct Searcher {
    client: Client,
    /// The lexical order alone ([`LEXICAL`]): it needs only the query's words, so a prompt's
    /// search can send it while the prompt is still being embedded.
    lexical: Statement,
    /// The dense order and the fusion of both ([`FUSED`]).
    fused: Statement,
    /// The words common in the store, sorted, and when they were read: the lexical order
    /// leaves them out (see [`COMMON_SHARE`]).
    common: std::sync::Mutex<(Instant, Arc<Vec<String>>)>,
}

/// A word in at least this share of the store's messages (by the server's own statistics)
/// is left out of the lexical order: it points at nothing in particular, and its list in the
/// full-text index is long, so asking for it would cost the most of the whole search.
pub const COMMON_SHARE: f32 = 0.01;
/// How long the common words are trusted before they are read again.
const COMMON_REFRESH: Duration = Duration::from_secs(600);

impl Searcher {
    pub async fn new(client: Client) -> Result<Searcher, TeamError> {
        let lexical = client.prepare(LEXICAL).await?;
        let fused = client.prepare(FUSED).await?;
        let common = common_words(&client).await?;
        Ok(Searcher {
            client,
            lexical,
            fused,
            common: std::sync::Mutex::new((Instant::now(), Arc::new(common))),
        })
    }

    /// The store's common words, read again when they are old.
    async fn common(&self) -> Result<Arc<Vec<String>>, TeamError> {
        let (read, words) = self
            .common
            .lock()
            .map(|c| c.clone())
            .unwrap_or_else(|p| p.into_inner().clone());
        if read.elapsed() < COMMON_REFRESH {
            return Ok(words);
        }
        let fresh = Arc::new(common_words(&self.client).await?);
        *self.common.lock().unwrap_or_else(|p| p.into_inner()) = (Instant::now(), fresh.clone());
        Ok(fresh)
    }

    /// The team's best messages for a query (its text and its 384-dimension vector), looking
    /// as far as `depth` says. The connection stays at [`Depth::Prompt`] between searches: a
    /// deeper one sets its depth and puts it back after, whatever its outcome (a prompt's
    /// search sent meanwhile on the same connection would only look further).
    pub async fn search(
        &self,
        team: &str,
        project: &str,
        terms: &[String],
        vector: &[f32],
        limit: i64,
        depth: Depth,
    ) -> Result<Vec<TeamHit>, TeamError> {
        let lexical = self.lexical(team, project, terms, depth).await?;
        self.fused(team, project, vector, &lexical, limit, depth)
            .await
    }

    /// The lexical order: the ids of the messages holding the query's distinctive `terms`
    /// (see [`lexical_query`]), best first, as many as `depth` weighs. No distinctive term: none,
    /// and nothing is asked of the server.
    pub async fn lexical(
        &self,
        team: &str,
        project: &str,
        terms: &[String],
        depth: Depth,
    ) -> Result<LexicalOrder, TeamError> {
        let words = lexical_query(terms, &self.common().await?);
        if words.is_empty() {
            return Ok(LexicalOrder(Vec::new()));
        }
        let rows = self
            .client
            .query(
                &self.lexical,
                &[&team, &project, &words, &depth.candidates()],
            )
            .await?;
        Ok(LexicalOrder(rows.iter().map(|r| r.get(0)).collect()))
    }

    /// The dense order for `vector`, fused with `lexical` (see [`Searcher::lexical`]) by
    /// reciprocal rank in the server: the best `limit` messages.
    pub async fn fused(
        &self,
        team: &str,
        project: &str,
        vector: &[f32],
        lexical: &LexicalOrder,
        limit: i64,
        depth: Depth,
    ) -> Result<Vec<TeamHit>, TeamError> {
        let v = vector_text(vector);
        let deeper = depth != Depth::Prompt;
        if deeper {
            self.set_depth(depth).await?;
        }
        let rows = self
            .client
            .query(
                &self.fused,
                &[
                    &team,
                    &project,
                    &v,
                    &lexical.0,
                    &depth.candidates(),
                    &RRF_K,
                    &limit,
                ],
            )
            .await;
        if deeper {
            self.set_depth(Depth::Prompt).await?;
        }
        Ok(rows?.iter().map(hit).collect())
    }

    async fn set_depth(&self, depth: Depth) -> Result<(), TeamError> {
        self.client.batch_execute(&depth.setting()).await?;
        Ok(())
    }
}

/// The lexical order of a query: message ids, best first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LexicalOrder(Vec<String>);

/// Terms of the lexical query at most.
const MAX_TERMS: usize = 8;

/// The full-text query for `terms` (the query's distinctive words or their stems): any of
/// them, each as a prefix, but those that would find a word of `common` (sorted); only
/// letters, digits and underscores are kept, so no input can break the query. Empty: no
/// lexical order.
pub fn lexical_query(terms: &[String], common: &[String]) -> String {
    let mut seen = std::collections::HashSet::new();
    let finds_common = |t: &str| {
        let from = common.partition_point(|c| c.as_str() < t);
        common.get(from).is_some_and(|c| c.starts_with(t))
    };
    terms
        .iter()
        .map(|t| {
            t.chars()
                .filter(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|t| !t.is_empty() && !finds_common(t) && seen.insert(t.clone()))
        .take(MAX_TERMS)
        .map(|t| format!("{t}:*"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The words in at least [`COMMON_SHARE`] of the store's messages, sorted, from the server's
/// statistics of the full-text column (none before the table was first analyzed).
pub async fn common_words(client: &Client) -> Result<Vec<String>, TeamError> {
    let row = client
        .query_opt(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs
               FROM pg_stats
              WHERE tablename = 'team_messages' AND attname = 'tsv'
                AND most_common_elems IS NOT NULL
              LIMIT 1",
            &[],
        )
        .await?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let words: Vec<String> = row.get(0);
    let shares: Vec<f32> = row.get(1);
    let mut common: Vec<String> = words
        .into_iter()
        .zip(shares)
        .filter(|(_, share)| *share >= COMMON_SHARE)
        .map(|(w, _)| w)
        .collect();
    common.sort();
    Ok(common)
}

fn hit(r: &tokio_postgres::Row) -> TeamHit {
    TeamHit {
        id: r.get(0),
        thread_id: r.get(1),
        thread_title: r.get(2),
        content: r.get(3),
        author: r.get(4),
        machine: r.get(5),
        created_at: r.get(6),
        score: r.get(7),
        dense: r.get(8),
    }
}

/// The lexical order. $1 team, $2 project, $3 the full-text query (not empty), $4 how many.
const LEXICAL: &str = "WITH matching AS MATERIALIZED (
                -- Planned apart from the limit on it: under a limit, the planner bets that a
                -- scan of the whole table meets enough matches early, and a query whose words
                -- the store does not hold then reads every row (at a million messages, most of
                -- a second). Alone, it asks the full-text index; rows are still read only as
                -- the ranking below pulls them.
                SELECT m.id, m.tsv FROM team_messages m
                 WHERE m.team = $1 AND m.project = $2
                   AND m.tsv @@ to_tsquery('simple', $3))
             -- At most this many matches are ranked: a query of common words matches much of
             -- the store, and ranking it all would cost more than the order is worth.
             SELECT id FROM (SELECT id, tsv FROM matching LIMIT 300) matches
              ORDER BY ts_rank(tsv, to_tsquery('simple', $3)) DESC, id
              LIMIT $4";

/// The dense order, fused with the lexical one. $1 team, $2 project, $3 the vector (text),
/// $4 the lexical order (ids, best first), $5 candidates of the dense order, $6 the fusion's
/// constant, $7 how many to return.
const FUSED: &str = "WITH dense AS (
                SELECT id, dist, row_number() OVER (ORDER BY dist) AS r FROM (
                    -- The vector is a parameter, not a joined value: the planner then orders
                    -- by the HNSW index instead of scanning every row.
                    SELECT m.id, m.embedding <=> $3::text::vector AS dist
                      FROM team_messages m
                     WHERE m.team = $1 AND m.project = $2 AND m.embedding IS NOT NULL
                     ORDER BY m.embedding::halfvec(384) <=> $3::text::halfvec(384)
                     LIMIT $5) d),
             lex AS (SELECT id, r FROM unnest($4::text[]) WITH ORDINALITY AS l(id, r))
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
              LIMIT $7";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_looks_less_far_than_a_search_asked_for_and_never_below_its_candidates() {
        for depth in [Depth::Prompt, Depth::Asked] {
            assert!(
                i64::from(depth.ef_search()) >= depth.candidates(),
                "{depth:?}"
            );
        }
        assert!(Depth::Prompt.candidates() < Depth::Asked.candidates());
        assert!(Depth::Prompt.ef_search() < Depth::Asked.ef_search());
        assert_eq!(Depth::Prompt.setting(), "SET hnsw.ef_search = 20");
        assert!(session_settings().starts_with(&Depth::Prompt.setting()));
    }

    #[test]
    fn the_lexical_query_asks_for_any_term_and_no_input_breaks_it() {
        let terms = ["pool", "Timeout", "pool", "it's", "a|b", "&!:*", "naïve"].map(String::from);
        assert_eq!(
            lexical_query(&terms, &[]),
            "pool:* | timeout:* | its:* | ab:* | naïve:*"
        );
        assert_eq!(lexical_query(&[], &[]), "");
        // A term that would find a word common in the store is left out.
        let common = ["deploy", "timeouts", "zebra"].map(String::from);
        assert_eq!(
            lexical_query(&terms, &common),
            "pool:* | its:* | ab:* | naïve:*"
        );
    }
}
