//! The relevance gate: how a query's matches stand against the whole memory ([`QueryStats`]),
//! and whether the memory speaks at all ([`gate`]).

use super::rank::{Scored, TopK};
use super::Why;
use serde::{Deserialize, Serialize};

/// How a query's matches stand against the whole memory: what the relevance gate decides on
/// (see [`gate`]), and what `ai context --explain` shows.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct QueryStats {
    /// Messages scored.
    pub messages: usize,
    /// The best dense part (cosine with the query) of any message.
    pub dense_max: f32,
    /// The best lexical part (BM25 share of the query) of any message.
    pub lexical_max: f32,
    /// The best final score.
    pub score_max: f32,
    /// The best rank a message holds in both orders at once (by dense and by lexical), from 1;
    /// [`AGREE_DEPTH`] + 1 when no message is in both tops.
    pub agree_rank: usize,
    /// The dense and lexical parts of that message.
    pub agree_dense: f32,
    pub agree_lexical: f32,
    /// The closest to the query (dense) of the messages said by someone the question names.
    pub label_dense: f32,
    /// The mean and standard deviation of the dense part over every unit scored: how close
    /// the memory as a whole is to the query, and how far apart its units are.
    #[serde(default)]
    pub dense_mean: f32,
    #[serde(default)]
    pub dense_sd: f32,
    /// The same for the lexical part.
    #[serde(default)]
    pub lexical_mean: f32,
    #[serde(default)]
    pub lexical_sd: f32,
    /// The mean dense part of the 3 and the 10 closest units.
    #[serde(default)]
    pub dense_top3: f32,
    #[serde(default)]
    pub dense_top10: f32,
    /// The share of the query's weight carried by words this memory holds
    /// ([`index::SearchIndex::known_share`]).
    #[serde(default)]
    pub known: f32,
    /// The question names this conversation's people in something they did ("did the
    /// assistant", "I said"): it is about this memory by its own words ([`super::past`]).
    #[serde(default)]
    pub about_this_work: bool,
    /// The question is in the past and mostly in words this memory holds ("how much did the
    /// first build download?"): its words already point at the memory ([`super::past`]).
    #[serde(default)]
    pub recalls_this_work: bool,
}

/// What the statistics need from the scan of every message, gathered as it goes: the maxima and
/// the top of each order. A large memory has tens of thousands of messages, and another pass
/// over them costs as much as the gate's whole decision.
#[derive(Debug)]
pub(super) struct StatsScan {
    pub(super) dense_max: f32,
    pub(super) lexical_max: f32,
    pub(super) label_dense: f32,
    /// Sums for the means and deviations: count, Σx and Σx² of each part.
    pub(super) n: f64,
    pub(super) dense_sum: f64,
    pub(super) dense_sq: f64,
    pub(super) lexical_sum: f64,
    pub(super) lexical_sq: f64,
    pub(super) by_dense: TopK,
    pub(super) by_lexical: TopK,
}

impl StatsScan {
    pub(super) fn new() -> StatsScan {
        StatsScan {
            dense_max: 0.0,
            lexical_max: 0.0,
            label_dense: 0.0,
            n: 0.0,
            dense_sum: 0.0,
            dense_sq: 0.0,
            lexical_sum: 0.0,
            lexical_sq: 0.0,
            by_dense: TopK::new(AGREE_DEPTH),
            by_lexical: TopK::new(AGREE_DEPTH),
        }
    }

    /// Notes the own relevance of message `i` (indices must come in increasing order), `named`
    /// when it was said by someone the question names.
    pub(super) fn note(&mut self, i: u32, why: &Why, named: bool) {
        self.dense_max = self.dense_max.max(why.dense);
        self.lexical_max = self.lexical_max.max(why.lexical);
        let (d, l) = (f64::from(why.dense), f64::from(why.lexical));
        self.n += 1.0;
        self.dense_sum += d;
        self.dense_sq += d * d;
        self.lexical_sum += l;
        self.lexical_sq += l * l;
        if named {
            self.label_dense = self.label_dense.max(why.dense);
        }
        if why.dense > 0.0 {
            self.by_dense.push(why.dense, i);
        }
        if why.lexical > 0.0 {
            self.by_lexical.push(why.lexical, i);
        }
    }

    /// The statistics of `messages` (those noted, with their final scores), whose best final
    /// score is `score_max`.
    pub(super) fn finish(
        self,
        messages: &[Scored],
        score_max: f32,
        known: f32,
        about_this_work: bool,
        recalls_this_work: bool,
    ) -> QueryStats {
        let by_dense = self.by_dense.into_indices();
        let top = |k: usize| {
            let n = by_dense.len().min(k);
            if n == 0 {
                return 0.0;
            }
            by_dense[..n]
                .iter()
                .map(|&i| messages[i as usize].why.dense)
                .sum::<f32>()
                / k as f32
        };
        let (dense_top3, dense_top10) = (top(3), top(10));
        let (agree_rank, agreed) = agreement(messages, &by_dense, &self.by_lexical.into_indices());
        QueryStats {
            messages: messages.len(),
            dense_max: self.dense_max,
            lexical_max: self.lexical_max,
            score_max,
            agree_rank,
            agree_dense: agreed.map_or(0.0, |m| m.why.dense),
            agree_lexical: agreed.map_or(0.0, |m| m.why.lexical),
            label_dense: self.label_dense,
            dense_mean: mean(self.dense_sum, self.n),
            dense_sd: sd(self.dense_sum, self.dense_sq, self.n),
            lexical_mean: mean(self.lexical_sum, self.n),
            lexical_sd: sd(self.lexical_sum, self.lexical_sq, self.n),
            dense_top3,
            dense_top10,
            known,
            about_this_work,
            recalls_this_work,
        }
    }
}

pub(super) fn mean(sum: f64, n: f64) -> f32 {
    if n > 0.0 {
        (sum / n) as f32
    } else {
        0.0
    }
}

pub(super) fn sd(sum: f64, sq: f64, n: f64) -> f32 {
    if n < 2.0 {
        return 0.0;
    }
    let m = sum / n;
    ((sq / n - m * m).max(0.0)).sqrt() as f32
}

/// The relevance gate's decision for a query (see [`gate`]).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Gate {
    /// Nothing in memory is about the query: nothing is injected.
    pub abstained: bool,
    /// The evidence: how close to the query the three closest units are, on average
    /// (`dense_top3`), or the closest said by someone the question names (`label_dense`).
    pub evidence: f32,
    /// The bar it had to clear, for a memory of this many messages.
    pub bar: f32,
    /// A message's score must reach this (a share of the best's) to be included on its own.
    pub message_bar: f32,
}

/// Closeness (this model's cosine, the mean of the three closest units) from which a question
/// is about what a memory of [`GATE_REFERENCE_MESSAGES`] units holds. Set on the recall bench's
/// tuning memories (three Claude Code sessions, two BEAM conversations, two LoCoMo ones) as
/// the lowest that gives memory to at most 3% of their unrelated prompts.
pub const GATE_BASE: f32 = 0.34;
/// How widely this model's cosine between unrelated texts spreads: chance's best match among
/// N messages rises like this × sqrt(2 ln N), the expected maximum of N draws.
pub const GATE_SPREAD: f32 = 0.075;
/// The memory size [`GATE_BASE`] is stated for.
pub const GATE_REFERENCE_MESSAGES: f32 = 500.0;
/// A message is included on its own when its score reaches this share of the best message's
/// (or as the neighbour of one that does): what scores far below the best answer is filler.
pub const MESSAGE_SHARE_OF_BEST: f32 = 0.3;

/// The bar the evidence must clear in a memory of `messages` messages: [`GATE_BASE`], raised
/// (or lowered) by how much further chance reaches among more (or fewer) messages.
pub fn gate_bar(messages: usize) -> f32 {
    let reach = |n: f32| (2.0 * n.max(2.0).ln()).sqrt();
    GATE_BASE + GATE_SPREAD * (reach(messages as f32) - reach(GATE_REFERENCE_MESSAGES))
}

/// Whether anything in memory is about the query: the three units closest to it (in what they
/// mean, the dense cosine), or a message said by someone the question names, must be close
/// enough to the query that chance alone would not bring them there in a memory this size.
/// Three, not one: a question about the project finds its subject said more than once, while
/// chance lifts a lone unit; and no word agreement is asked, since a question a developer asks
/// days later rarely uses the words of the record that answers it. A question about what this
/// conversation's people did ("which port did the assistant use?") is about the memory by its
/// own words, however generic its subject sounds: no bar. One asked in the past mostly in the
/// memory's words has a bar one [`GATE_SPREAD`] lower (the spread of chance's cosines): its
/// words already point at the memory, and its closest units need to clear chance by less.
pub fn gate(stats: &QueryStats) -> Gate {
    let mut bar = gate_bar(stats.messages);
    if stats.recalls_this_work {
        bar -= GATE_SPREAD;
    }
    let evidence = stats.dense_top3.max(stats.label_dense);
    Gate {
        abstained: stats.messages == 0 || (evidence < bar && !stats.about_this_work),
        evidence,
        bar,
        message_bar: MESSAGE_SHARE_OF_BEST * stats.score_max,
    }
}

/// How deep the dense and lexical orders are compared for agreement.
pub const AGREE_DEPTH: usize = 64;

/// The best rank (from 1) a message holds in both the dense and the lexical order, and that
/// message: two signals that agree on a message point at something the question is about.
/// `by_dense` and `by_lexical` are the indices in `messages` of the [`AGREE_DEPTH`] best of each
/// order (above 0), best first.
pub(super) fn agreement<'a>(
    messages: &'a [Scored],
    by_dense: &[u32],
    by_lexical: &[u32],
) -> (usize, Option<&'a Scored>) {
    let mut best = (AGREE_DEPTH + 1, None);
    for (rd, &i) in by_dense.iter().enumerate() {
        if let Some(rl) = by_lexical.iter().position(|&j| j == i) {
            let r = rd.max(rl) + 1;
            if r < best.0 {
                best = (r, Some(&messages[i as usize]));
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_recalling_this_work_is_held_to_a_bar_one_spread_lower() {
        let bar = gate_bar(500);
        let stats = |evidence: f32, recalls_this_work: bool| QueryStats {
            messages: 500,
            dense_top3: evidence,
            recalls_this_work,
            ..QueryStats::default()
        };
        // Just under the bar: silent, unless the question recalls this work in its words.
        assert!(gate(&stats(bar - 0.02, false)).abstained);
        assert!(!gate(&stats(bar - 0.02, true)).abstained);
        // Far under it, chance's reach: silent either way.
        assert!(gate(&stats(bar - GATE_SPREAD - 0.01, true)).abstained);
    }
}
