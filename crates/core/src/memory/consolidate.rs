//! Consolidation: the memory tidied while the daemon is idle (and on `ai consolidate`).
//!
//! A pass plans, then applies, three kinds of change, each bounded:
//!
//! - **merges**: two active threads scoring above [`MERGE_BAR`] against each other are one
//!   subject. The smaller goes into the larger (into the one a person named, if any); what is
//!   left of it is an archived stub with `merged_into` set and a REPLACES bridge from the thread
//!   that took its messages, so its id still resolves. At most one merge per thread per pass.
//! - **splits**: a thread's messages are replayed through the same decision the capture path
//!   uses (with the memory's current idf and mean); when they form at least two groups of a
//!   fifth of the thread each, and those groups score under the bar to join each other, the
//!   groups other than the largest become threads of their own (SIBLING bridges). Messages of
//!   smaller groups go to the nearest large group: no message is lost or left alone.
//! - **chapters**: a thread holding more than a quarter of the memory ([`CHAPTER_SHARE`]) is
//!   cut, in time order, at its deepest changes of subject until no part is that large, even
//!   when its parts are one subject: a table of contents whose one entry is most of the book
//!   says nothing. The parts are linked as siblings; merges never make such a thread again.
//! - **retitles**: a thread whose title the local titler wrote gets the title its profile gives
//!   now (a person's or an LLM's title is never touched); the change goes in its drift history.
//!
//! Merged and split threads get their vector, profile and topics recomputed from their
//! messages. Nothing here reads the clock or the disk.

use super::engine::{push_drift, Memory, MAX_SUMMARY_CHARS, MAX_THREAD_TOPICS};
use super::ids::new_id;
use super::subject::{self, thread_affinity, Probe, ProfileTerm, Target, CONTINUE_BAR, MERGE_BAR};
use super::types::{BridgeType, Message, Thread, ThreadStatus, TitleSource};
use ai_smartness_capture::source::OriginType;
use ai_smartness_vectors::quant::QVec;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Threads compared for merges in one pass (the most recently active).
const MAX_COMPARED: usize = 400;
/// Threads examined for a split in one pass (the largest).
const MAX_SPLIT_CHECKS: usize = 40;
/// A thread needs this many messages before it may be split.
const MIN_SPLIT_MESSAGES: usize = 8;
/// A replay that finds more groups than this is not separate subjects: no split.
const MAX_SPLIT_GROUPS: usize = 24;
/// Each part of a split holds at least this share of the thread...
const MIN_SPLIT_SHARE: f64 = 0.2;
/// ...and at least this many messages.
const MIN_SPLIT_PART: usize = 3;
/// Messages read on each side of a point of a long thread to see whether its subject changes
/// there; also the fewest a segment cut out of it holds.
const SEGMENT_WINDOW: usize = 5;
/// Pairs of threads needed before their median affinity says how far apart this memory's
/// subjects usually are (three threads make three pairs).
const MIN_PAIRS_FOR_TYPICAL: usize = 3;
/// Times a segment is read again for changes of its own (bounds a pass's time).
const MAX_SEGMENT_LEVELS: usize = 3;
/// A thread holding more than this share of the memory's active messages is most of the
/// memory, not one entry of its table of contents: it is cut into chapters at its deepest
/// changes of subject, and no merge makes one.
const CHAPTER_SHARE: f64 = 0.25;
/// A memory of fewer active messages is not cut into chapters: a few dozen messages hold one
/// or two subjects, whatever their shares.
const MIN_CHAPTER_MEMORY: usize = 40;

/// Bounds of one pass.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Planning stops (with what it found) after this long.
    pub time: Duration,
}

/// Two threads found to be one subject.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlannedMerge {
    pub from: String,
    pub from_title: String,
    pub into: String,
    pub into_title: String,
    pub score: f64,
}

/// A thread whose messages form separate subjects.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlannedSplit {
    pub thread: String,
    pub title: String,
    /// Message ids of each part; the first stays in the thread.
    pub parts: Vec<Vec<String>>,
}

/// A local title that no longer says what the thread is about.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlannedRetitle {
    pub thread: String,
    pub from: String,
    pub to: String,
}

/// Every point of `from..to` at least [`SEGMENT_WINDOW`] messages from either end (the point
/// `i` lies between messages `i - 1` and `i`), with the depth of the dip there: how far the
/// agreement of the windows on its two sides is below where it climbs back to on either side.
/// A change of subject is a deep dip.
fn dips(
    from: usize,
    to: usize,
    block: &dyn Fn(usize, usize) -> Group,
    affinity: &dyn Fn(&Group, &Group) -> f64,
) -> (Vec<usize>, Vec<f64>) {
    let w = SEGMENT_WINDOW;
    if to < from + 2 * w {
        return (Vec::new(), Vec::new());
    }
    let gaps: Vec<usize> = (from + w..=to - w).collect();
    let sim: Vec<f64> = gaps
        .iter()
        .map(|&i| affinity(&block(i - w, i), &block(i, i + w)))
        .collect();
    let depth: Vec<f64> = (0..sim.len())
        .map(|k| {
            let (mut left, mut right) = (sim[k], sim[k]);
            for j in (0..k).rev() {
                if sim[j] < left {
                    break;
                }
                left = sim[j];
            }
            for &x in &sim[k + 1..] {
                if x < right {
                    break;
                }
                right = x;
            }
            (left - sim[k]) + (right - sim[k])
        })
        .collect();
    (gaps, depth)
}

/// Where to cut `n` messages into the fewest chapters of at most `cap` messages each, as
/// even as that takes: each cut at the deepest dip ([`dips`]: `gaps` and their `depth`) within
/// the slack the cap leaves around its even place, so that no chapter outgrows the cap.
fn chapter_cuts(n: usize, cap: usize, gaps: &[usize], depth: &[f64]) -> Vec<usize> {
    if cap == 0 || n <= cap {
        return Vec::new();
    }
    let k = n.div_ceil(cap);
    // Each cut may move this far from its even place: a chapter grows by at most twice that.
    let reach = (k * cap - n) / (2 * k);
    let mut cuts: Vec<usize> = (1..k)
        .map(|j| {
            let even = (j * n + k / 2) / k;
            gaps.iter()
                .zip(depth)
                .filter(|(&g, _)| g.abs_diff(even) <= reach)
                // Of equal dips, the one nearest the even place.
                .max_by(|a, b| {
                    a.1.total_cmp(b.1)
                        .then(b.0.abs_diff(even).cmp(&a.0.abs_diff(even)))
                })
                .map_or(even, |(&g, _)| g)
        })
        .collect();
    cuts.dedup();
    cuts
}

/// The cuts of `from..to` (see [`Memory::segment_parts`]), then of each segment still long
/// enough to hold two subjects, each read against its own dips: a thread of five subjects has
/// one deepest change, and the others show only once it is cut.
fn segment_cuts(
    from: usize,
    to: usize,
    depth_level: usize,
    block: &dyn Fn(usize, usize) -> Group,
    affinity: &dyn Fn(&Group, &Group) -> f64,
    cuts: &mut Vec<usize>,
) {
    let w = SEGMENT_WINDOW;
    if to - from < 4 * w || depth_level >= MAX_SEGMENT_LEVELS {
        return;
    }
    let (gaps, depth) = dips(from, to, block, affinity);
    let count = depth.len() as f64;
    let avg = depth.iter().sum::<f64>() / count;
    let sd = (depth.iter().map(|d| (d - avg).powi(2)).sum::<f64>() / count).sqrt();
    let mut order: Vec<usize> = (0..depth.len()).collect();
    order.sort_by(|&a, &b| depth[b].total_cmp(&depth[a]).then(a.cmp(&b)));
    let mut found: Vec<usize> = Vec::new();
    for k in order {
        if depth[k] <= avg + sd {
            continue;
        }
        let at = gaps[k];
        if found.iter().all(|&c| c.abs_diff(at) >= w) {
            found.push(at);
        }
    }
    if found.is_empty() {
        return;
    }
    found.sort_unstable();
    let mut bounds = vec![from];
    bounds.extend(&found);
    bounds.push(to);
    cuts.extend(&found);
    for pair in bounds.windows(2) {
        segment_cuts(pair[0], pair[1], depth_level + 1, block, affinity, cuts);
    }
}

/// The median affinity of the memory's pairs of active threads, when there are enough of
/// them to say what is usual ([`MIN_PAIRS_FOR_TYPICAL`]).
fn typical_affinity(affinities: &[f64]) -> Option<f64> {
    if affinities.len() < MIN_PAIRS_FOR_TYPICAL {
        return None;
    }
    let mut sorted = affinities.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted[sorted.len() / 2])
}

/// What a pass would do (or did).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Consolidation {
    pub merges: Vec<PlannedMerge>,
    pub splits: Vec<PlannedSplit>,
    pub retitles: Vec<PlannedRetitle>,
    /// Planning stopped at the time budget before looking at everything.
    pub partial: bool,
}

impl Consolidation {
    pub fn is_empty(&self) -> bool {
        self.merges.is_empty() && self.splits.is_empty() && self.retitles.is_empty()
    }
}

/// What a thread made of `messages` is about, as consolidation computes it: its focus (their
/// vectors folded in order) and its profile (their terms).
fn signature<'a>(
    messages: impl IntoIterator<Item = &'a Message, IntoIter: Clone>,
) -> (Option<QVec>, Vec<ProfileTerm>) {
    let messages = messages.into_iter();
    let mut profile = Vec::new();
    for m in messages.clone() {
        subject::fold_profile(&mut profile, &m.terms);
    }
    (super::edit::focus_of(messages), profile)
}

/// A group of messages while a thread is replayed.
struct Group {
    focus: Option<Vec<f32>>,
    count: usize,
    profile: Vec<ProfileTerm>,
    last: DateTime<Utc>,
    members: Vec<usize>,
}

impl Group {
    fn new(i: usize, m: &Message) -> Group {
        let mut g = Group {
            focus: None,
            count: 0,
            profile: Vec::new(),
            last: m.timestamp,
            members: Vec::new(),
        };
        g.add(i, m);
        g
    }

    fn add(&mut self, i: usize, m: &Message) {
        if let Some(e) = &m.embedding {
            let next = super::engine::fold_focus(self.focus.as_deref(), self.count, &e.to_f32());
            self.focus = Some(next);
            self.count += 1;
        }
        subject::fold_profile(&mut self.profile, &m.terms);
        self.last = self.last.max(m.timestamp);
        self.members.push(i);
    }
}

impl Memory {
    /// Plans a pass without changing anything (`ai consolidate --dry-run` shows this).
    pub fn plan_consolidation(&self, budget: Budget) -> Consolidation {
        let started = Instant::now();
        let mut plan = Consolidation::default();
        let mean = self.background_mean();
        let idf = self.graph.idf();

        // Merges: the most recently active threads, pairwise.
        let mut active: Vec<&Thread> = self
            .graph
            .threads()
            .filter(|t| t.status == ThreadStatus::Active)
            .collect();
        // The most messages a thread may hold before it is cut into chapters, if any.
        let held: usize = active.iter().map(|t| t.messages.len()).sum();
        let chapter_cap = if held >= MIN_CHAPTER_MEMORY {
            ((held as f64) * CHAPTER_SHARE).floor() as usize
        } else {
            usize::MAX
        };
        active.sort_by(|a, b| b.last_active.cmp(&a.last_active).then(a.id.cmp(&b.id)));
        active.truncate(MAX_COMPARED);
        let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
        // Every pair's affinity: how close two of this memory's threads usually are.
        let mut affinities: Vec<f64> = Vec::new();
        'outer: for i in 0..active.len() {
            if started.elapsed() > budget.time {
                plan.partial = true;
                break 'outer;
            }
            for j in i + 1..active.len() {
                let (a, b) = (active[i], active[j]);
                let s = thread_affinity(
                    (a.embedding.as_ref(), &a.profile),
                    (b.embedding.as_ref(), &b.profile),
                    &mean,
                    idf,
                );
                affinities.push(s);
                if s > MERGE_BAR {
                    pairs.push((s, i, j));
                }
            }
        }
        let apart_bar = typical_affinity(&affinities).map_or(CONTINUE_BAR, |t| t.min(CONTINUE_BAR));
        pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
        let mut used: HashSet<usize> = HashSet::new();
        for (score, i, j) in pairs {
            if used.contains(&i) || used.contains(&j) {
                continue;
            }
            if started.elapsed() > budget.time {
                plan.partial = true;
                break;
            }
            let (into, from) = merge_direction(active[i], active[j]);
            // A merge that makes a thread to cut into chapters is undone by the next pass.
            if into.messages.len() + from.messages.len() > chapter_cap {
                continue;
            }
            // A merge that would hold separate subjects is no merge: a large thread's broad
            // profile would draw small ones in, one pass after another.
            if self.would_mix_subjects(into, from, &mean) {
                continue;
            }
            used.insert(i);
            used.insert(j);
            plan.merges.push(PlannedMerge {
                from: from.id.clone(),
                from_title: from.title.clone(),
                into: into.id.clone(),
                into_title: into.title.clone(),
                score,
            });
        }
        let merging: HashSet<&str> = plan
            .merges
            .iter()
            .flat_map(|m| [m.from.as_str(), m.into.as_str()])
            .collect();

        // Splits: the largest threads not already merging, cut only where their work moved
        // on (contiguous segments), and only into parts as far apart as this memory's threads
        // usually are. Grouping a thread's messages by resemblance alone cut one request into
        // its facets (its logs apart from its code), which no person would list as subjects.
        let mut big: Vec<&Thread> = self
            .graph
            .threads()
            .filter(|t| {
                t.status == ThreadStatus::Active
                    && t.messages.len() >= MIN_SPLIT_MESSAGES
                    && !merging.contains(t.id.as_str())
            })
            .collect();
        big.sort_by(|a, b| larger_first(a, b));
        for t in big.into_iter().take(MAX_SPLIT_CHECKS) {
            if started.elapsed() > budget.time {
                plan.partial = true;
                break;
            }
            let parts = self
                .segment_parts(t, &mean)
                .and_then(|parts| self.parts_that_stay_apart(t, parts, &mean))
                .filter(|parts| self.parts_clearly_apart(t, parts, &mean, apart_bar));
            // A person's name or pin says the thread is one piece as it stands.
            let theirs = t.title_by == TitleSource::Person || t.pinned;
            let parts = match parts {
                Some(parts) if !theirs => Some(self.in_chapters(t, parts, &mean, chapter_cap)),
                Some(parts) => Some(parts),
                None if !theirs => {
                    let whole = vec![(0..t.messages.len()).collect()];
                    Some(self.in_chapters(t, whole, &mean, chapter_cap)).filter(|p| p.len() > 1)
                }
                None => None,
            };
            if let Some(parts) = parts {
                plan.splits.push(PlannedSplit {
                    thread: t.id.clone(),
                    title: t.title.clone(),
                    parts: parts
                        .iter()
                        .map(|p| p.iter().map(|&i| t.messages[i].id.clone()).collect())
                        .collect(),
                });
            }
        }

        // Retitles: local titles of threads left as they are (merged and split threads are
        // retitled when the change is applied).
        let changing: HashSet<&str> = merging
            .iter()
            .copied()
            .chain(plan.splits.iter().map(|s| s.thread.as_str()))
            .collect();
        // Active threads by title (its stems: see `subject::title_key`), as the plan leaves them.
        let mut by_title: HashMap<String, Vec<&str>> = HashMap::new();
        for t in self.graph.threads() {
            if t.status == ThreadStatus::Active {
                by_title
                    .entry(subject::title_key(&t.title))
                    .or_default()
                    .push(t.id.as_str());
            }
        }
        // Threads contesting one phrase get it in a fixed order, larger first (the phrase is
        // more likely about the larger's work), so the same memory gets the same titles.
        let mut retitled: Vec<&Thread> = self
            .graph
            .threads()
            .filter(|t| {
                t.status == ThreadStatus::Active
                    && t.title_by == TitleSource::Local
                    && !changing.contains(t.id.as_str())
            })
            .collect();
        retitled.sort_by(|a, b| larger_first(a, b));
        for t in retitled {
            if started.elapsed() > budget.time {
                plan.partial = true;
                break;
            }
            let taken = |text: &str| {
                by_title
                    .get(&subject::title_key(text))
                    .is_some_and(|ids| ids.iter().any(|id| *id != t.id))
            };
            let said = said_texts(&t.messages);
            let texts = recent_texts(&t.messages);
            if let Some(new) = subject::said_or_title(&t.profile, idf, &said, &texts, taken) {
                if new != t.title {
                    if let Some(ids) = by_title.get_mut(&subject::title_key(&t.title)) {
                        ids.retain(|id| *id != t.id);
                    }
                    by_title
                        .entry(subject::title_key(&new))
                        .or_default()
                        .push(t.id.as_str());
                    plan.retitles.push(PlannedRetitle {
                        thread: t.id.clone(),
                        from: t.title.clone(),
                        to: new,
                    });
                }
            }
        }
        plan.retitles.sort_by(|a, b| a.thread.cmp(&b.thread));
        plan
    }

    /// Applies a plan made by [`Memory::plan_consolidation`] on this memory (steps whose threads
    /// changed meanwhile are skipped). Returns what was done.
    pub fn apply_consolidation(
        &mut self,
        plan: &Consolidation,
        now: DateTime<Utc>,
    ) -> Consolidation {
        let mut done = Consolidation {
            partial: plan.partial,
            ..Consolidation::default()
        };
        for m in &plan.merges {
            let ok = [&m.from, &m.into].iter().all(|id| {
                self.graph
                    .thread(id)
                    .is_some_and(|t| t.status == ThreadStatus::Active)
            });
            if ok && self.merge_as_one_subject(&m.from, &m.into, now).is_ok() {
                done.merges.push(m.clone());
            }
        }
        for s in &plan.splits {
            if let Some(new_ids) = self.split_thread(s, now) {
                let mut applied = s.clone();
                applied.parts.truncate(new_ids.len() + 1);
                done.splits.push(applied);
            }
        }
        for r in &plan.retitles {
            let Some(t) = self.graph.thread(&r.thread) else {
                continue;
            };
            if t.title != r.from || t.title_by != TitleSource::Local {
                continue;
            }
            self.set_local_title(&r.thread, &r.to, now);
            done.retitles.push(r.clone());
        }
        self.compact_index_if_stale();
        done
    }

    /// Plans and applies one pass.
    pub fn consolidate(&mut self, now: DateTime<Utc>, budget: Budget) -> Consolidation {
        let started = Instant::now();
        let plan = self.plan_consolidation(budget);
        let mut done = self.apply_consolidation(&plan, now);
        // A thread that took another's messages was not read for splits: a second look, in
        // what is left of the budget, so one pass leaves no thread holding two subjects.
        let left = budget.time.saturating_sub(started.elapsed());
        if !done.merges.is_empty() && !left.is_zero() {
            let again = self.plan_consolidation(Budget { time: left });
            let more = self.apply_consolidation(&again, now);
            done.merges.extend(more.merges);
            done.splits.extend(more.splits);
            done.retitles.extend(more.retitles);
            done.partial |= more.partial;
        }
        done
    }

    /// The parts a thread's messages form, replayed by resemblance, when they form separate
    /// subjects (message positions; the largest part first). Only a merge is refused on it:
    /// resemblance alone also parts one piece of work's facets.
    fn split_parts(&self, t: &Thread, mean: &[f32]) -> Option<Vec<Vec<usize>>> {
        let idf = self.graph.idf();
        let n = t.messages.len();
        let groups = self.replay(&t.messages, mean, MAX_SPLIT_GROUPS)?;
        let min_part = MIN_SPLIT_PART.max((MIN_SPLIT_SHARE * n as f64).ceil() as usize);
        let (mut large, small): (Vec<Group>, Vec<Group>) = groups
            .into_iter()
            .partition(|g| g.members.len() >= min_part);
        if large.len() < 2 {
            return None;
        }
        // Separate subjects only: every two large parts score under the bar to join.
        for i in 0..large.len() {
            for j in i + 1..large.len() {
                let fi = large[i].focus.as_deref().map(QVec::from_unit);
                let fj = large[j].focus.as_deref().map(QVec::from_unit);
                let s = thread_affinity(
                    (fi.as_ref(), &large[i].profile),
                    (fj.as_ref(), &large[j].profile),
                    mean,
                    idf,
                );
                if s > CONTINUE_BAR {
                    return None;
                }
            }
        }
        // The messages of small groups go to the nearest large part.
        for g in small {
            for i in g.members {
                let m = &t.messages[i];
                let best = self.best_group(&large, m, None, mean).map_or(0, |(g, _)| g);
                large[best].members.push(i);
            }
        }
        let mut parts: Vec<Vec<usize>> = large
            .into_iter()
            .map(|mut g| {
                g.members.sort_unstable();
                g.members
            })
            .collect();
        parts.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
        Some(parts)
    }

    /// Where a long thread's subject changes as its work went on (read as a text is read for
    /// its topic shifts): at each point between two messages, the messages just before are
    /// compared with those just after; a point where that agreement dips deeper than is usual
    /// for this thread (more than one standard deviation above its mean dip), and under the bar
    /// a capture needs to join a thread, cuts it. The segments then group again by subject
    /// (work that came back to an earlier subject joins it, by the same bar): `None` unless
    /// that leaves two groups or more.
    fn segment_parts(&self, t: &Thread, mean: &[f32]) -> Option<Vec<Vec<usize>>> {
        let n = t.messages.len();
        let w = SEGMENT_WINDOW;
        if n < 4 * w {
            return None;
        }
        let messages: Vec<&Message> = t.messages.iter().collect();
        let (block, affinity) = self.windows(&messages, mean);
        let mut cuts = Vec::new();
        segment_cuts(0, n, 0, &block, &affinity, &mut cuts);
        if cuts.is_empty() {
            return None;
        }
        cuts.sort_unstable();
        // The segments, grouped again by subject.
        let mut bounds = vec![0];
        bounds.extend(&cuts);
        bounds.push(n);
        let mut groups: Vec<Group> = Vec::new();
        for pair in bounds.windows(2) {
            let seg = block(pair[0], pair[1]);
            let best = groups
                .iter()
                .enumerate()
                .map(|(k, g)| (k, affinity(g, &seg)))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match best {
                Some((k, s)) if s > MERGE_BAR => {
                    for i in pair[0]..pair[1] {
                        groups[k].add(i, &t.messages[i]);
                    }
                }
                _ => groups.push(seg),
            }
        }
        if groups.len() < 2 || groups.len() > MAX_SPLIT_GROUPS {
            return None;
        }
        let mut parts: Vec<Vec<usize>> = groups.into_iter().map(|g| g.members).collect();
        parts.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
        Some(parts)
    }

    /// How a run of messages (a thread's, in time order) is read for changes of subject:
    /// `block(from, to)` gathers `messages[from..to]` as a group, `affinity` scores two groups
    /// as merges score two threads.
    #[allow(clippy::type_complexity)]
    fn windows<'a>(
        &'a self,
        messages: &'a [&'a Message],
        mean: &'a [f32],
    ) -> (
        impl Fn(usize, usize) -> Group + 'a,
        impl Fn(&Group, &Group) -> f64 + 'a,
    ) {
        let idf = self.graph.idf();
        let block = move |from: usize, to: usize| -> Group {
            let mut g = Group::new(from, messages[from]);
            for (i, m) in messages.iter().enumerate().take(to).skip(from + 1) {
                g.add(i, m);
            }
            g
        };
        let affinity = move |a: &Group, b: &Group| {
            let fa = a.focus.as_deref().map(QVec::from_unit);
            let fb = b.focus.as_deref().map(QVec::from_unit);
            thread_affinity(
                (fa.as_ref(), &a.profile),
                (fb.as_ref(), &b.profile),
                mean,
                idf,
            )
        };
        (block, affinity)
    }

    /// The parts of `t` (indices of its messages, the first staying in the thread) with each
    /// part of more than `cap` messages cut into chapters ([`Memory::chapter_parts`]).
    fn in_chapters(
        &self,
        t: &Thread,
        parts: Vec<Vec<usize>>,
        mean: &[f32],
        cap: usize,
    ) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        for part in parts {
            if part.len() <= cap {
                out.push(part);
                continue;
            }
            // The part read as a thread of its own.
            let alone: Vec<&Message> = part.iter().map(|&i| &t.messages[i]).collect();
            match self.chapter_parts(&alone, mean, cap) {
                Some(chapters) => out.extend(
                    chapters
                        .into_iter()
                        .map(|c| c.into_iter().map(|k| part[k]).collect()),
                ),
                None => out.push(part),
            }
        }
        out
    }

    /// A run of more than `cap` messages (indices into `messages`, in time order) cut into
    /// chapters ([`chapter_cuts`]), the latest first (it stays in the thread, where the work
    /// goes on); `None` when it is not that long or has no point to cut at.
    fn chapter_parts(
        &self,
        messages: &[&Message],
        mean: &[f32],
        cap: usize,
    ) -> Option<Vec<Vec<usize>>> {
        let n = messages.len();
        if n <= cap {
            return None;
        }
        let (block, affinity) = self.windows(messages, mean);
        let (gaps, depth) = dips(0, n, &block, &affinity);
        let cuts = chapter_cuts(n, cap, &gaps, &depth);
        if cuts.is_empty() {
            return None;
        }
        let mut bounds = vec![0];
        bounds.extend(&cuts);
        bounds.push(n);
        let mut parts: Vec<Vec<usize>> =
            bounds.windows(2).map(|p| (p[0]..p[1]).collect()).collect();
        parts.reverse();
        Some(parts)
    }

    /// `messages` replayed in order through the decision the capture path uses: each joins the
    /// group it scores best with above [`CONTINUE_BAR`] (the current one first), else opens one.
    /// `None` past `max_groups` groups.
    fn replay(&self, messages: &[Message], mean: &[f32], max_groups: usize) -> Option<Vec<Group>> {
        let mut groups: Vec<Group> = Vec::new();
        let mut current: Option<usize> = None;
        for (i, m) in messages.iter().enumerate() {
            match self.best_group(&groups, m, current, mean) {
                Some((g, score)) if score > CONTINUE_BAR => {
                    groups[g].add(i, m);
                    current = Some(g);
                }
                _ => {
                    if groups.len() >= max_groups {
                        return None;
                    }
                    groups.push(Group::new(i, m));
                    current = Some(groups.len() - 1);
                }
            }
        }
        Some(groups)
    }

    /// Whether the thread `into` and `from` would make, merged, holds separate subjects: its
    /// messages, replayed in time order through the capture path's decision, form separate
    /// groups ([`Memory::split_parts`]) or its work moves on between them
    /// ([`Memory::segment_parts`]); or `from` would stay a subject of its own, most of its
    /// messages gathering in groups of their own. A part needs a fifth of the thread, so
    /// without this second test a large thread would absorb small subjects one by one.
    fn would_mix_subjects(&self, into: &Thread, from: &Thread, mean: &[f32]) -> bool {
        let mut merged = into.clone();
        merged.messages.extend(from.messages.iter().cloned());
        merged.messages.sort_by_key(|m| m.timestamp);
        if merged.messages.len() >= MIN_SPLIT_MESSAGES
            && self
                .split_parts(&merged, mean)
                .or_else(|| self.segment_parts(&merged, mean))
                .and_then(|parts| self.parts_that_stay_apart(&merged, parts, mean))
                .is_some()
        {
            return true;
        }
        let from_ids: HashSet<&str> = from.messages.iter().map(|m| m.id.as_str()).collect();
        let Some(groups) = self.replay(&merged.messages, mean, usize::MAX) else {
            return false;
        };
        let is_from = |i: &usize| from_ids.contains(merged.messages[*i].id.as_str());
        let apart: usize = groups
            .iter()
            .map(|g| g.members.iter().filter(|i| is_from(i)).count())
            .zip(groups.iter().map(|g| g.members.len()))
            .filter(|&(of_from, all)| 2 * of_from > all)
            .map(|(of_from, _)| of_from)
            .sum();
        2 * apart > from.messages.len()
    }

    /// The planned parts of a split, with those that the next pass would merge back joined
    /// now: each part is scored as the thread it will become (its messages' focus and profile,
    /// as [`Memory::refresh_from_messages`] computes them) against the others, by the very
    /// test merges use. A pass's output is then stable under the next pass, which the daemon
    /// runs every few minutes. `None` when fewer than two parts are left.
    fn parts_that_stay_apart(
        &self,
        t: &Thread,
        parts: Vec<Vec<usize>>,
        mean: &[f32],
    ) -> Option<Vec<Vec<usize>>> {
        let mut parts = parts;
        loop {
            if parts.len() < 2 {
                return None;
            }
            // The closest pair above the bar (the first of equals).
            let closest = self
                .part_affinities(t, &parts, mean)
                .into_iter()
                .filter(|(s, _, _)| *s > MERGE_BAR)
                .reduce(|best, pair| if pair.0 > best.0 { pair } else { best });
            let Some((_, i, j)) = closest else {
                break;
            };
            let joined = parts.remove(j);
            parts[i].extend(joined);
            parts[i].sort_unstable();
        }
        parts.sort_by(|a, b| b.len().cmp(&a.len()).then(a[0].cmp(&b[0])));
        Some(parts)
    }

    /// Whether every two parts of a planned split are no closer to each other than `bar`:
    /// two sides of one piece of work (its logs and its code, its build and its fix) are
    /// closer than two of the memory's separate threads usually are, and stay together.
    fn parts_clearly_apart(
        &self,
        t: &Thread,
        parts: &[Vec<usize>],
        mean: &[f32],
        bar: f64,
    ) -> bool {
        self.part_affinities(t, parts, mean)
            .iter()
            .all(|(s, _, _)| *s <= bar)
    }

    /// The affinity of every two parts of `t` (`(score, i, j)` with `i < j`), each part scored
    /// as the thread it would become (its messages' focus and profile).
    fn part_affinities(
        &self,
        t: &Thread,
        parts: &[Vec<usize>],
        mean: &[f32],
    ) -> Vec<(f64, usize, usize)> {
        let idf = self.graph.idf();
        let signatures: Vec<_> = parts
            .iter()
            .map(|p| signature(p.iter().map(|&i| &t.messages[i])))
            .collect();
        let mut out = Vec::new();
        for i in 0..signatures.len() {
            for j in i + 1..signatures.len() {
                let s = thread_affinity(
                    (signatures[i].0.as_ref(), &signatures[i].1),
                    (signatures[j].0.as_ref(), &signatures[j].1),
                    mean,
                    idf,
                );
                out.push((s, i, j));
            }
        }
        out
    }

    fn best_group(
        &self,
        groups: &[Group],
        m: &Message,
        current: Option<usize>,
        mean: &[f32],
    ) -> Option<(usize, f64)> {
        let idf = self.graph.idf();
        let vector = m.embedding.as_ref().map(QVec::to_f32);
        let probe = Probe {
            vector: vector.as_deref(),
            terms: &m.terms,
            at: m.timestamp,
        };
        let scorer = subject::Scorer::new(&probe, mean, idf);
        let mut best: Option<(usize, f64)> = None;
        for (k, g) in groups.iter().enumerate() {
            let focus = g.focus.as_deref().map(QVec::from_unit);
            let target = Target {
                focus: focus.as_ref(),
                profile: &g.profile,
                last_active: g.last,
                current: current == Some(k),
            };
            let s = scorer.score(&target).score;
            if best.is_none_or(|(_, b)| s > b) {
                best = Some((k, s));
            }
        }
        best
    }

    /// Merges `from` into `into` as one subject: the messages move, and `from` stays as an
    /// archived stub that points to `into` (its id resolves), linked by a REPLACES bridge.
    fn merge_as_one_subject(
        &mut self,
        from: &str,
        into: &str,
        now: DateTime<Utc>,
    ) -> Result<(), super::engine::EditError> {
        let source = self
            .graph
            .thread(from)
            .map(Thread::header_clone)
            .ok_or_else(|| super::engine::EditError::NoThread(from.into()))?;
        let moved = self.graph.thread(from).map_or(0, |t| t.messages.len());
        self.merge_threads(from, into, now)?;
        let stub = Thread {
            status: ThreadStatus::Archived,
            messages: Vec::new(),
            summary: format!(
                "Merged into {into} on {} ({moved} messages): the same subject.",
                now.format("%Y-%m-%d %H:%M")
            ),
            parent_id: None,
            child_ids: Vec::new(),
            profile: Vec::new(),
            merged_into: Some(into.to_string()),
            pinned: false,
            ..source
        };
        self.graph.insert_thread(stub);
        self.link(
            into,
            from,
            BridgeType::Replaces,
            1.0,
            "merged by consolidation: the same subject",
            now,
        );
        self.refresh_from_messages(into, now);
        Ok(())
    }

    /// Splits a thread into the planned parts (the first stays); returns the new threads' ids,
    /// or `None` when the thread changed since the plan.
    fn split_thread(&mut self, plan: &PlannedSplit, now: DateTime<Utc>) -> Option<Vec<String>> {
        let t = self.graph.thread(&plan.thread)?;
        let planned: usize = plan.parts.iter().map(Vec::len).sum();
        if t.status != ThreadStatus::Active || planned != t.messages.len() {
            return None;
        }
        let mut new_ids = Vec::new();
        for part in plan.parts.iter().skip(1) {
            let ids: HashSet<&str> = part.iter().map(String::as_str).collect();
            let Some(t) = self.graph.thread_mut(&plan.thread) else {
                break;
            };
            let (moving, staying): (Vec<Message>, Vec<Message>) = std::mem::take(&mut t.messages)
                .into_iter()
                .partition(|m| ids.contains(m.id.as_str()));
            t.messages = staying;
            if moving.is_empty() {
                continue;
            }
            let first_at = moving[0].timestamp;
            let last_at = moving.iter().map(|m| m.timestamp).max().unwrap_or(first_at);
            let id = new_id("thread", first_at);
            let part_thread = Thread {
                id: id.clone(),
                title: String::new(),
                status: ThreadStatus::Active,
                messages: moving,
                summary: String::new(),
                topics: Vec::new(),
                origin_type: OriginType::Split,
                drift_history: vec![format!(
                    "{}: split from {} {:?}",
                    now.format("%Y-%m-%d %H:%M"),
                    plan.thread,
                    plan.title
                )],
                parent_id: None,
                child_ids: Vec::new(),
                decisions: Vec::new(),
                questions: Vec::new(),
                weight: t.weight,
                weight_at: t.weight_at,
                created_at: first_at,
                last_active: last_at,
                activation_count: 1,
                embedding: None,
                pinned: false,
                never_recall: t.never_recall,
                sharing: t.sharing,
                profile: Vec::new(),
                title_by: TitleSource::Local,
                merged_into: None,
            };
            self.graph.insert_thread(part_thread);
            self.link(
                &id,
                &plan.thread,
                BridgeType::Sibling,
                0.6,
                "split by consolidation: a separate subject",
                now,
            );
            new_ids.push(id);
        }
        if new_ids.is_empty() {
            return None;
        }
        self.graph.messages_rewritten(&plan.thread);
        if let Some(t) = self.graph.thread_mut(&plan.thread) {
            push_drift(
                &mut t.drift_history,
                format!(
                    "{}: split into {} threads ({})",
                    now.format("%Y-%m-%d %H:%M"),
                    new_ids.len() + 1,
                    new_ids.join(", ")
                ),
            );
        }
        self.refresh_from_messages(&plan.thread, now);
        for id in &new_ids {
            self.refresh_from_messages(id, now);
        }
        Some(new_ids)
    }

    /// Recomputes what a thread's messages say: vector, profile, topics, summary (for new
    /// parts) and, for a local title, the title; and reindexes its messages.
    fn refresh_from_messages(&mut self, id: &str, now: DateTime<Utc>) {
        let Some(t) = self.graph.thread(id) else {
            return;
        };
        let (focus, profile) = signature(&t.messages);
        let topics: Vec<String> = profile
            .iter()
            .filter(|p| !p.term.starts_with(subject::PLACE_PREFIX))
            .map(|p| p.term.clone())
            .take(MAX_THREAD_TOPICS)
            .collect();
        let summary = if t.summary.trim().is_empty() {
            summary_of(&t.messages)
        } else {
            t.summary.clone()
        };
        let messages = t.messages.clone();
        if let Some(t) = self.graph.thread_mut(id) {
            if focus.is_some() {
                t.embedding = focus;
            }
            t.summary = summary;
            t.last_active = t
                .messages
                .iter()
                .map(|m| m.timestamp)
                .max()
                .unwrap_or(t.last_active);
        }
        self.index.reindex_thread(id, &messages);
        if !topics.is_empty() {
            self.graph.set_topics(id, topics);
        }
        self.graph.set_profile(id, profile.clone());
        let local = self
            .graph
            .thread(id)
            .is_some_and(|t| t.title_by == TitleSource::Local);
        if local {
            let fallback = || {
                messages
                    .iter()
                    .find_map(|m| subject::words_title(&m.content))
                    .unwrap_or_else(|| format!("Thread of {} messages", messages.len()))
            };
            let title = self
                .local_title(
                    &profile,
                    &said_texts(&messages),
                    &recent_texts(&messages),
                    Some(id),
                )
                .unwrap_or_else(fallback);
            self.set_local_title(id, &title, now);
        }
    }

    /// Sets a local title, with a drift line when it changes.
    fn set_local_title(&mut self, id: &str, title: &str, now: DateTime<Utc>) {
        if let Some(t) = self.graph.thread_mut(id) {
            if t.title == title {
                return;
            }
            if !t.title.is_empty() {
                push_drift(
                    &mut t.drift_history,
                    format!(
                        "{}: focus moved, title {:?} → {:?}",
                        now.format("%Y-%m-%d %H:%M"),
                        t.title,
                        title
                    ),
                );
            }
            t.title = title.to_string();
        }
    }
}

/// Threads in a fixed order, larger first, then older, then by id: the same memory is
/// consolidated the same way whatever the order its threads are stored in.
fn larger_first(a: &Thread, b: &Thread) -> std::cmp::Ordering {
    b.messages
        .len()
        .cmp(&a.messages.len())
        .then(a.created_at.cmp(&b.created_at))
        .then(a.id.cmp(&b.id))
}

/// Which of two threads takes the other's messages: the one a person named, else the larger,
/// else the older.
fn merge_direction<'a>(a: &'a Thread, b: &'a Thread) -> (&'a Thread, &'a Thread) {
    let key = |t: &Thread| {
        (
            t.title_by == TitleSource::Person,
            t.pinned,
            t.messages.len(),
            std::cmp::Reverse(t.created_at),
        )
    };
    if key(a) >= key(b) {
        (a, b)
    } else {
        (b, a)
    }
}

/// The texts a title's spelling is looked up in: the thread's latest messages.
fn recent_texts(messages: &[Message]) -> Vec<&str> {
    let from = messages.len().saturating_sub(TITLE_TEXTS);
    messages[from..]
        .iter()
        .map(|m| m.content.as_str())
        .collect()
}

/// Texts a title is looked up in, at most.
const TITLE_TEXTS: usize = 20;
/// Latest messages searched for what was said about the work.
const TITLE_SAID_WINDOW: usize = 60;

/// What the person asked and the assistant said among the thread's latest messages: they
/// name the work in their own words, where a file's content or a command's log is full of
/// phrases that are there by chance ("Test record", "Real API"). Empty when nothing was said.
fn said_texts(messages: &[Message]) -> Vec<&str> {
    let from = messages.len().saturating_sub(TITLE_SAID_WINDOW);
    let mut said: Vec<&str> = messages[from..]
        .iter()
        .rev()
        .filter(|m| m.is_said())
        .take(TITLE_TEXTS)
        .map(|m| m.content.as_str())
        .collect();
    said.reverse();
    said
}

/// A thread's header made again from its messages alone, when its own file is lost (corrupt,
/// truncated): the messages stay visible, under a title, topics, vector and times taken from
/// them. It is active, at full weight from its last message; the local titler may rename it
/// as it would any of its own titles.
pub fn rebuilt_header(id: &str, messages: Vec<Message>, now: DateTime<Utc>) -> Thread {
    let mut profile = Vec::new();
    for m in &messages {
        subject::fold_profile(&mut profile, &m.terms);
    }
    let topics = profile
        .iter()
        .filter(|p| !p.term.starts_with(subject::PLACE_PREFIX))
        .map(|p| p.term.clone())
        .take(MAX_THREAD_TOPICS)
        .collect();
    let first = messages.iter().map(|m| m.timestamp).min();
    let last = messages.iter().map(|m| m.timestamp).max();
    let origin = messages
        .iter()
        .find_map(|m| m.metadata.get("source_type").cloned())
        .and_then(|v| serde_json::from_value(v).ok())
        .map(ai_smartness_capture::source::origin_for_source)
        .unwrap_or(OriginType::Prompt);
    let title = messages
        .iter()
        .find_map(|m| subject::words_title(&m.content))
        .unwrap_or_else(|| format!("Recovered thread of {} messages", messages.len()));
    Thread {
        id: id.to_string(),
        title,
        status: ThreadStatus::Active,
        summary: summary_of(&messages),
        topics,
        origin_type: origin,
        drift_history: vec![format!(
            "{}: header rebuilt from its {} messages (its file was unreadable)",
            now.format("%Y-%m-%d %H:%M"),
            messages.len()
        )],
        parent_id: None,
        child_ids: Vec::new(),
        decisions: Vec::new(),
        questions: Vec::new(),
        weight: super::decay::MAX_WEIGHT,
        weight_at: last.unwrap_or(now),
        created_at: first.unwrap_or(now),
        last_active: last.unwrap_or(now),
        activation_count: messages.len().min(u32::MAX as usize) as u32,
        embedding: super::edit::focus_of(&messages),
        pinned: false,
        never_recall: false,
        sharing: Default::default(),
        profile,
        title_by: TitleSource::Local,
        merged_into: None,
        messages,
    }
}

/// A summary for a new part: the first line of its first messages.
fn summary_of(messages: &[Message]) -> String {
    let lines: Vec<&str> = messages
        .iter()
        .filter_map(|m| m.content.lines().map(str::trim).find(|l| !l.is_empty()))
        .take(3)
        .collect();
    super::engine::truncate_chars(&lines.join(" "), MAX_SUMMARY_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::engine::{Capture, Decision};
    use crate::memory::graph::Graph;
    use crate::memory::test_support::{emb, t0};
    use crate::memory::types::Author;
    use chrono::Duration as Span;
    use serde_json::Map;

    const PASS: Budget = Budget {
        time: Duration::from_secs(5),
    };

    fn message(i: usize, axes: &[usize], terms: &[&str], at: DateTime<Utc>) -> Message {
        Message {
            id: format!("msg_{i:04}"),
            content: format!("message {i} about {}", terms.join(" ")),
            source: Author::Assistant,
            timestamp: at,
            metadata: Map::new(),
            embedding: Some(QVec::from_unit(&emb(axes))),
            terms: terms.iter().map(|t| t.to_string()).collect(),
            units: Vec::new(),
        }
    }

    fn thread(id: &str, title: &str, messages: Vec<Message>) -> Thread {
        let at = messages[0].timestamp;
        let last = messages.last().unwrap().timestamp;
        let messages_focus = messages[0].embedding.clone();
        let mut profile = Vec::new();
        for m in &messages {
            subject::fold_profile(&mut profile, &m.terms);
        }
        Thread {
            id: id.into(),
            title: title.into(),
            status: ThreadStatus::Active,
            messages,
            summary: String::new(),
            topics: Vec::new(),
            origin_type: OriginType::Prompt,
            drift_history: Vec::new(),
            parent_id: None,
            child_ids: Vec::new(),
            decisions: Vec::new(),
            questions: Vec::new(),
            weight: 1.0,
            weight_at: last,
            created_at: at,
            last_active: last,
            activation_count: 1,
            embedding: messages_focus,
            pinned: false,
            never_recall: false,
            sharing: Default::default(),
            profile,
            title_by: TitleSource::Local,
            merged_into: None,
        }
    }

    /// `n` messages a minute apart about a pool's timeouts, its logs from `logs_from` on.
    fn pool_then_logs(n: usize, logs_from: usize) -> Vec<Message> {
        (0..n)
            .map(|i| {
                let at = t0() + Span::minutes(i as i64);
                if i < logs_from {
                    message(i, &[1, 2], &["pool", "timeouts", "postgres"], at)
                } else {
                    message(i, &[1, 2, 3], &["pool", "logs", "postgres"], at)
                }
            })
            .collect()
    }

    /// Other subjects, so that what is common and what is distinctive can be told apart.
    fn others(g: &mut Graph) {
        for k in 0..4 {
            let ms = (0..3)
                .map(|i| {
                    message(
                        900 + k * 10 + i,
                        &[10 + k],
                        &[&format!("other{k}"), "misc"],
                        t0(),
                    )
                })
                .collect();
            g.insert_thread(thread(
                &format!("thread_other{k}"),
                &format!("Other {k}"),
                ms,
            ));
        }
    }

    #[test]
    fn a_thread_holding_two_subjects_is_split_and_keeps_every_message() {
        let mut g = Graph::default();
        others(&mut g);
        let mut ms = Vec::new();
        for i in 0..24 {
            let at = t0() + Span::minutes(i as i64);
            // Two subjects, one after the other, then the first again.
            if !(8..16).contains(&i) {
                ms.push(message(i, &[1, 2], &["pool", "timeouts", "postgres"], at));
            } else {
                ms.push(message(i, &[5, 6], &["css", "grid", "layout"], at));
            }
        }
        g.insert_thread(thread("thread_mixed", "Mixed", ms));
        let mut m = Memory::new(g);
        let plan = m.plan_consolidation(PASS);
        assert_eq!(plan.splits.len(), 1, "{plan:?}");
        let done = m.apply_consolidation(&plan, t0() + Span::hours(1));
        assert_eq!(done.splits.len(), 1);
        let kept = m.graph.thread("thread_mixed").unwrap();
        let new_id = m
            .graph
            .threads()
            .find(|t| {
                t.drift_history
                    .iter()
                    .any(|d| d.contains("split from thread_mixed"))
            })
            .map(|t| t.id.clone())
            .unwrap();
        let part = m.graph.thread(&new_id).unwrap();
        assert_eq!(
            kept.messages.len() + part.messages.len(),
            24,
            "no message lost"
        );
        let pure = |t: &Thread| {
            let pool = t.messages.iter().filter(|m| m.terms[0] == "pool").count();
            pool == 0 || pool == t.messages.len()
        };
        assert!(pure(kept) && pure(part));
        assert!(m.graph.bridge_between("thread_mixed", &new_id).is_some());
        assert_ne!(kept.title, part.title);
        // The index follows the messages, and was built again once the thread's old docs
        // outnumbered a fifth of the live ones.
        assert_eq!(m.index.thread_docs(&new_id).len(), part.messages.len());
        assert_eq!(m.index.dead_docs(), 0);
        // A second pass finds nothing more to split, nor parts to merge back.
        let again = m.plan_consolidation(PASS);
        assert!(
            again.splits.is_empty() && again.merges.is_empty(),
            "{again:?}"
        );
    }

    #[test]
    fn two_sides_of_one_piece_of_work_stay_one_thread() {
        let mut g = Graph::default();
        others(&mut g);
        // The pool's code, then its logs: the work moves on, but both halves are about the
        // pool far more than two of this memory's threads are about one thing.
        g.insert_thread(thread("thread_pool", "Pool", pool_then_logs(24, 12)));
        let m = Memory::new(g);
        let t = m.graph.thread("thread_pool").unwrap();
        let mean = m.background_mean();
        assert!(
            m.segment_parts(t, &mean).is_some(),
            "the work moves on halfway"
        );
        let plan = m.plan_consolidation(PASS);
        assert!(plan.splits.is_empty(), "{plan:?}");
    }

    #[test]
    fn a_thread_holding_most_of_the_memory_is_cut_into_chapters() {
        let mut g = Graph::default();
        others(&mut g);
        // 48 of the memory's 60 messages on one subject, whose work moves on two thirds in.
        g.insert_thread(thread("thread_pool", "Pool", pool_then_logs(48, 32)));
        let mut m = Memory::new(g);
        let done = m.consolidate(t0() + Span::hours(2), PASS);
        assert_eq!(done.splits.len(), 1, "{done:?}");
        let parts = &done.splits[0].parts;
        // A quarter of 60 at most in each, cut where the work moved on and then evenly.
        assert!(parts.iter().all(|p| p.len() <= 15), "{parts:?}");
        assert!(parts.iter().any(|p| p[0] == "msg_0032"), "{parts:?}");
        let mut ids: Vec<&String> = parts.iter().flatten().collect();
        ids.sort();
        assert_eq!(ids.len(), 48, "no message lost");
        ids.dedup();
        assert_eq!(ids.len(), 48);
        // Each chapter is a run of consecutive messages, as few as the cap allows: 32 in
        // three, 16 in two.
        for p in parts {
            let n: Vec<usize> = p.iter().map(|id| id[4..].parse().unwrap()).collect();
            assert!(n.windows(2).all(|w| w[1] == w[0] + 1), "{n:?}");
        }
        assert_eq!(parts.len(), 5, "{parts:?}");
        // The next pass neither merges the chapters back nor cuts them again.
        let again = m.plan_consolidation(PASS);
        assert!(
            again.splits.is_empty() && again.merges.is_empty(),
            "{again:?}"
        );
        // One subject throughout is cut evenly; unless a person named it.
        let one = pool_then_logs(48, 48);
        let mut g = Graph::default();
        others(&mut g);
        g.insert_thread(thread("thread_pool", "Pool", one.clone()));
        let m = Memory::new(g);
        let plan = m.plan_consolidation(PASS);
        let sizes: Vec<usize> = plan.splits[0].parts.iter().map(Vec::len).collect();
        assert_eq!(sizes, [12, 12, 12, 12]);
        assert_eq!(plan.splits[0].parts[0][11], "msg_0047", "the latest stays");
        let mut named = Graph::default();
        others(&mut named);
        let mut t = thread("thread_pool", "Pool", one);
        t.title_by = TitleSource::Person;
        named.insert_thread(t);
        let m = Memory::new(named);
        assert!(m.plan_consolidation(PASS).splits.is_empty());
    }

    #[test]
    fn two_threads_about_one_subject_merge_and_the_old_id_resolves() {
        let mut g = Graph::default();
        others(&mut g);
        let a: Vec<Message> = (0..5)
            .map(|i| message(i, &[1, 2], &["pool", "timeouts"], t0()))
            .collect();
        let b: Vec<Message> = (5..8)
            .map(|i| message(i, &[1, 2], &["pool", "timeouts"], t0() + Span::days(3)))
            .collect();
        let mut ta = thread("thread_a", "Pool", a);
        ta.embedding = Some(QVec::from_unit(&emb(&[1, 2])));
        let mut tb = thread("thread_b", "Pool again", b);
        tb.embedding = Some(QVec::from_unit(&emb(&[1, 2])));
        g.insert_thread(ta);
        g.insert_thread(tb);
        let mut m = Memory::new(g);
        let dry = m.plan_consolidation(PASS);
        assert_eq!(dry.merges.len(), 1, "{dry:?}");
        assert_eq!(dry.merges[0].into, "thread_a", "into the larger");
        // Planning changed nothing.
        assert_eq!(m.graph.thread("thread_b").unwrap().messages.len(), 3);
        m.apply_consolidation(&dry, t0() + Span::days(4));
        let merged = m.graph.thread("thread_a").unwrap();
        assert_eq!(merged.messages.len(), 8);
        let stub = m.graph.thread("thread_b").unwrap();
        assert_eq!(stub.status, ThreadStatus::Archived);
        assert!(stub.messages.is_empty());
        assert_eq!(m.graph.resolve("thread_b").unwrap().id, "thread_a");
        let bridge = m.graph.bridge_between("thread_a", "thread_b").unwrap();
        assert_eq!(bridge.relation_type, BridgeType::Replaces);
        assert!(merged
            .drift_history
            .iter()
            .any(|d| d.contains("merged in thread_b")));
    }

    /// A Read capture of `text` about `topics`, its vector along `axes`.
    fn read_capture(text: &str, topics: &[&str], axes: &[usize], at: DateTime<Utc>) -> Capture {
        Capture {
            tool: "Read".into(),
            source_type: ai_smartness_capture::source::source_for_tool("Read"),
            author: Author::Assistant,
            content: text.into(),
            extraction: ai_smartness_capture::extract::Extraction {
                subjects: topics.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            },
            embedding: emb(axes),
            at,
            metadata: Map::new(),
            units: Vec::new(),
        }
    }

    #[test]
    fn one_request_that_moved_between_two_subjects_is_cut_where_it_moved() {
        let mut m = Memory::default();
        let read = |text: String, topics: &[&str], axes: &[usize], at| {
            read_capture(&text, topics, axes, at)
        };
        // Other work, so the memory has a mean to take off.
        for k in 0..3 {
            let topic = format!("other{k}");
            m.ingest(read(
                topic.clone(),
                &[&topic],
                &[10 + k],
                t0() - Span::days(3 + k as i64),
            ));
        }
        // One long request, a minute between captures: the parser, then the css grid.
        let mut prompt = read(
            "parser tokens: work through them, please".into(),
            &["parser"],
            &[0, 1],
            t0(),
        );
        prompt.tool = "UserPrompt".into();
        prompt.source_type = ai_smartness_capture::source::source_for_tool("UserPrompt");
        let mut ids = vec![m.ingest(prompt).thread_id];
        for i in 0..30 {
            let (text, topics, axes): (String, &[&str], &[usize]) = if i < 15 {
                (format!("parser tokens {i}"), &["parser", "tokens"], &[0, 1])
            } else {
                (format!("css grid layout {i}"), &["css", "grid"], &[5, 6])
            };
            let o = m.ingest(read(text, topics, axes, t0() + Span::minutes(i + 1)));
            ids.push(o.thread_id);
        }
        assert!(
            ids.iter().all(|id| *id == ids[0]),
            "one request, one thread"
        );
        let done = m.consolidate(t0() + Span::hours(2), PASS);
        assert_eq!(done.splits.len(), 1, "{done:?}");
        let parts = &done.splits[0].parts;
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].len(), 16);
        assert_eq!(parts[1].len(), 15);
        // Each part is one subject: every message of the first is about the parser.
        let t = m.graph.thread(&ids[0]).unwrap();
        assert!(t
            .messages
            .iter()
            .all(|msg| msg.content.starts_with("parser")));
    }

    #[test]
    fn local_titles_follow_the_focus_and_a_persons_title_stays() {
        let mut m = Memory::default();
        let cap = read_capture;
        for k in 0..4 {
            let topic = format!("other{k}");
            m.ingest(cap(
                &topic,
                &[topic.as_str(), "shared"],
                &[10 + k],
                t0() + Span::days(k as i64),
            ));
        }
        let a = m.ingest(cap(
            "The connection pool holds 10",
            &["connection pool", "shared"],
            &[1, 2],
            t0() + Span::days(9),
        ));
        let mut last = a.clone();
        for i in 0..12 {
            let at = t0() + Span::days(9) + Span::minutes(i + 1);
            last = m.ingest(cap(
                &format!("pgbouncer runs in transaction mode, check {i}"),
                &["pgbouncer", "transaction mode"],
                &[1, 2, 3],
                at,
            ));
        }
        assert_eq!(last.thread_id, a.thread_id);
        assert!(matches!(last.decision, Decision::Continue));
        let before = m.graph.thread(&a.thread_id).unwrap().title.clone();
        m.consolidate(t0() + Span::days(10), PASS);
        let t = m.graph.thread(&a.thread_id).unwrap();
        assert_ne!(t.title, before, "the focus moved to pgbouncer");
        let lower = t.title.to_lowercase();
        assert!(
            lower.contains("pgbouncer") || lower.contains("transaction mode"),
            "{}",
            t.title
        );
        assert!(t.drift_history.iter().any(|d| d.contains("title")));
        let words = t.title.split_whitespace().count();
        assert!((1..=8).contains(&words));

        m.rename_thread(&a.thread_id, "Database pooling").unwrap();
        for i in 0..12 {
            let at = t0() + Span::days(11) + Span::minutes(i);
            m.ingest(cap(
                &format!("read replicas behind the connection pool, check {i}"),
                &["read replicas", "connection pool"],
                &[1, 2, 4],
                at,
            ));
        }
        m.consolidate(t0() + Span::days(12), PASS);
        assert_eq!(
            m.graph.thread(&a.thread_id).unwrap().title,
            "Database pooling"
        );
    }

    /// Two threads whose work one phrase names both: the larger gets it, whatever their ids
    /// (hash-map order used to decide, so the same memory could get other titles next run).
    #[test]
    fn a_contested_phrase_goes_to_the_larger_thread_whatever_the_ids() {
        let pool = |i: usize, axes: &[usize], also: &str| {
            let terms = if i.is_multiple_of(3) {
                vec!["connection pool", also]
            } else {
                vec!["connection pool"]
            };
            message(i, axes, &terms, t0() + Span::minutes(i as i64))
        };
        let small = |id: &str| {
            thread(
                id,
                "Small",
                (0..3).map(|i| pool(i, &[1, 2], "idle timeout")).collect(),
            )
        };
        let large = |id: &str| {
            thread(
                id,
                "Large",
                (3..9).map(|i| pool(i, &[5, 6], "pool size")).collect(),
            )
        };
        // Alone, the small thread is named by the phrase: with both, it is contested.
        let mut g = Graph::default();
        others(&mut g);
        g.insert_thread(small("thread_a"));
        let mut m = Memory::new(g);
        m.consolidate(t0() + Span::hours(1), PASS);
        let alone = m.graph.thread("thread_a").unwrap().title.to_lowercase();
        assert!(alone.contains("connection pool"), "{alone}");

        for (small_id, large_id) in [("thread_a", "thread_z"), ("thread_z", "thread_a")] {
            let mut g = Graph::default();
            others(&mut g);
            g.insert_thread(small(small_id));
            g.insert_thread(large(large_id));
            let mut m = Memory::new(g);
            m.consolidate(t0() + Span::hours(1), PASS);
            let small = m.graph.thread(small_id).unwrap().title.clone();
            let large = m.graph.thread(large_id).unwrap().title.clone();
            assert!(large.to_lowercase().contains("connection pool"), "{large}");
            assert_ne!(subject::title_key(&small), subject::title_key(&large));
        }
    }
}
