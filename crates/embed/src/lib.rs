//! Text embeddings for memory search.
//!
//! The real embedder is all-MiniLM-L6-v2 run by ONNX Runtime ([`onnx`]). Its
//! files are installed by `scripts/fetch-assets.sh` ([`assets`]); when they
//! are missing or fail to load, [`load_best`] falls back to a hashed TF-IDF
//! ([`ai_smartness_vectors::tfidf`]) so the daemon still works, degraded, and says why.
//!
//! Inference is CPU-bound and blocking, so [`EmbedService`] runs the embedder
//! on a dedicated OS thread instead of inside the async runtime.

pub mod assets;
#[cfg(test)]
mod int8_runtime;
pub mod onnx;
use std::collections::VecDeque;
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{mpsc, Arc};

use tokio::sync::oneshot;

use ai_smartness_vectors::{EmbedError, Embedder, EmbedderKind, HashedTfIdf};
pub use assets::{data_dir, locate, AssetPaths};
pub use onnx::MiniLmEmbedder;

/// The MiniLM embedder if its assets under `data_dir` load, else the hashed
/// TF-IDF fallback together with the reason (also logged as a warning) so the
/// daemon can report that it runs degraded.
pub fn load_best(data_dir: &Path) -> (Box<dyn Embedder>, Option<String>) {
    // ort panics instead of returning an error in a few corner cases (e.g. an
    // unusable ONNX Runtime API table); a bad install must degrade the daemon,
    // not kill it.
    let loaded = catch_unwind(|| locate(data_dir).and_then(|paths| MiniLmEmbedder::load(&paths)))
        .unwrap_or_else(|panic| Err(EmbedError::Load(panic_message(panic.as_ref()))));
    match loaded {
        Ok(embedder) => {
            tracing::info!(kind = %embedder.kind(), data_dir = %data_dir.display(), "embedder loaded");
            (Box::new(embedder), None)
        }
        Err(err) => {
            let reason = err.to_string();
            tracing::warn!(
                %reason,
                fallback = %EmbedderKind::HashedTfidf,
                "embedding model unavailable, semantic search is degraded"
            );
            (Box::new(HashedTfIdf::new()), Some(reason))
        }
    }
}

/// The nice value of threads that embed what no one waits for.
#[cfg(target_os = "linux")]
const BACKGROUND_NICE: libc::c_int = 10;

/// Lowers the calling thread's CPU priority (on Linux its nice value, to 10), for threads
/// whose work no one waits for: while captures are embedded on every core, a prompt's own
/// model pass then gets the CPU first instead of half of it. Threads the caller starts later
/// inherit it (ONNX Runtime's pool, when the session is made on this thread). Elsewhere it
/// does nothing: macOS and Windows have no per-thread nice value.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid, getpriority and setpriority on the calling thread's own id read and
        // change only its scheduling weight. Never raised: a thread already lower stays so.
        let done = unsafe {
            let tid = libc::gettid() as libc::id_t;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, now.max(BACKGROUND_NICE))
        };
        if done != 0 {
            tracing::debug!("could not lower this thread's priority");
        }
    }
}

/// A second MiniLM session for prompts alone (one thread, about 25 MB), when the model loads:
/// a prompt is then never queued behind a batch of captures being embedded.
pub fn load_query_embedder(data_dir: &Path) -> Option<Box<dyn Embedder>> {
    let loaded = catch_unwind(|| {
        locate(data_dir).and_then(|paths| MiniLmEmbedder::load_for_queries(&paths))
    });
    match loaded {
        Ok(Ok(embedder)) => Some(Box::new(embedder)),
        Ok(Err(err)) => {
            tracing::warn!(%err, "no second session for prompts: they share the capture's");
            None
        }
        Err(_) => None,
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("panicked: {message}")
}

type EmbedResult = Result<Vec<Vec<f32>>, EmbedError>;

enum Reply {
    Async(oneshot::Sender<EmbedResult>),
    // A std channel, not `oneshot::blocking_recv`, which panics when called
    // from inside a tokio runtime.
    Blocking(mpsc::SyncSender<EmbedResult>),
}

/// What the embedder thread is asked for.
enum Work {
    /// [`Embedder::embed`].
    Texts(Vec<String>),
    /// [`Embedder::embed_focused`]: answered with the whole vector, then the focused one if any.
    Focused {
        text: String,
        leave_out: Vec<Range<usize>>,
    },
}

/// Who waits for a request. The embedder thread serves queries first: a prompt must not wait
/// behind the captures queued before it (a batch of long outputs takes the model a second).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lane {
    /// A prompt or a search: someone waits for the answer.
    Query,
    /// Captures, the memory's words, anything no one waits for.
    Background,
    /// Work that may wait for everything else (the vectors of the units of long captures): a
    /// capture's placement never queues behind it.
    Idle,
}

struct Request {
    work: Work,
    lane: Lane,
    reply: Reply,
}

/// Runs the embedder on its own OS thread so CPU-bound inference never blocks
/// async workers. Cheap to clone; the thread exits when the last clone drops.
///
/// Requests are served one at a time, queries first and the rest in order (a long background
/// request in slices, with the queries that arrived served between them); each is batched
/// internally by the embedder.
#[derive(Clone)]
pub struct EmbedService {
    requests: mpsc::Sender<Request>,
    /// The prompts' own embedder thread, when there is one: a prompt then never waits for
    /// the captures' batches (which take the other thread).
    queries: Option<mpsc::Sender<Request>>,
    kind: EmbedderKind,
    degraded: Option<Arc<str>>,
    /// Recently embedded texts: a prompt is embedded for retrieval, then again when its
    /// capture is processed; the second time must not queue behind the model.
    recent: Arc<quick_cache::sync::Cache<String, Vec<f32>>>,
}

/// Texts remembered by [`EmbedService`] at most (then the memory starts over).
const RECENT_TEXTS: usize = 256;

impl EmbedService {
    /// Starts the `embedder` thread. `degraded` is the reason the embedder is
    /// a fallback, as returned by [`load_best`].
    ///
    /// If the thread cannot be spawned (the OS is out of threads) the error is
    /// logged and every request fails with [`EmbedError::ServiceStopped`].
    pub fn start(embedder: Box<dyn Embedder>, degraded: Option<String>) -> Self {
        Self::start_with_queries(embedder, None, degraded)
    }

    /// [`EmbedService::start`], prompts and searches served by `queries` on a thread of their
    /// own when given (an embedder of the same kind).
    pub fn start_with_queries(
        embedder: Box<dyn Embedder>,
        queries: Option<Box<dyn Embedder>>,
        degraded: Option<String>,
    ) -> Self {
        let kind = embedder.kind();
        let spawn = |name: &str, embedder: Box<dyn Embedder>, low_priority: bool| {
            let (requests, inbox) = mpsc::channel::<Request>();
            let spawned = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    if low_priority {
                        lower_thread_priority();
                    }
                    serve(embedder, inbox)
                });
            if let Err(err) = spawned {
                tracing::error!(%err, "cannot start the {name} thread");
            }
            requests
        };
        let queries = queries
            .filter(|q| q.kind() == kind)
            .map(|q| spawn("embedder-queries", q, false));
        // With prompts on a thread of their own, the captures' thread gives way to it.
        let requests = spawn("embedder", embedder, queries.is_some());
        Self {
            requests,
            queries,
            kind,
            degraded: degraded.map(Arc::from),
            recent: Arc::new(quick_cache::sync::Cache::new(RECENT_TEXTS)),
        }
    }

    /// Embeds `texts` on the embedder thread without blocking the caller's
    /// runtime worker.
    pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_remembering(texts, true, Lane::Background).await
    }

    /// [`EmbedService::embed`] for a query someone waits for: served before the background work
    /// already queued.
    pub async fn embed_for_query(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_remembering(texts, true, Lane::Query).await
    }

    /// [`EmbedService::embed`] for work that yields to every other request, queries and
    /// background alike. Send it a batch at a time ([`IDLE_BATCH`] texts): a request already
    /// started runs to its end. Not remembered among the recent texts.
    pub async fn embed_when_idle(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_remembering(texts, false, Lane::Idle).await
    }

    /// [`EmbedService::embed`] for texts whose vectors are kept elsewhere (the memory's words:
    /// its word table): found among the recent texts, but not added to them, so that they do not
    /// push out the prompts.
    pub async fn embed_kept_elsewhere(
        &self,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.embed_remembering(texts, false, Lane::Background).await
    }

    async fn embed_remembering(
        &self,
        texts: Vec<String>,
        remember: bool,
        lane: Lane,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut out: Vec<Option<Vec<f32>>> = texts.iter().map(|t| self.recent.get(t)).collect();
        let missing: Vec<String> = texts
            .iter()
            .zip(&out)
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| t.clone())
            .collect();
        if !missing.is_empty() {
            let mut vectors = self
                .ask(Work::Texts(missing.clone()), lane)
                .await?
                .into_iter();
            let fresh: Vec<(String, Vec<f32>)> = missing
                .into_iter()
                .map(|t| (t, vectors.next().unwrap_or_default()))
                .collect();
            for (slot, (_, v)) in out.iter_mut().filter(|v| v.is_none()).zip(&fresh) {
                *slot = Some(v.clone());
            }
            if remember {
                self.remember(fresh);
            }
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }

    /// Adds freshly embedded texts to the recent ones (the least used go when it is full).
    fn remember(&self, fresh: Vec<(String, Vec<f32>)>) {
        for (text, vector) in fresh {
            self.recent.insert(text, vector);
        }
    }

    /// [`Embedder::embed_focused`] on the embedder thread, as a query. Both vectors are
    /// remembered among the recent texts: the whole one under `text` (the prompt's capture
    /// embeds that same text later), the focused one under `text` and `leave_out`.
    pub async fn embed_focused(
        &self,
        text: String,
        leave_out: Vec<Range<usize>>,
    ) -> Result<(Vec<f32>, Option<Vec<f32>>), EmbedError> {
        let focus_key = (!leave_out.is_empty()).then(|| format!("{text}\u{0}{leave_out:?}"));
        match (self.recent.get(&text), &focus_key) {
            (Some(w), None) => return Ok((w, None)),
            (Some(w), Some(k)) => {
                if let Some(f) = self.recent.get(k) {
                    return Ok((w, Some(f)));
                }
            }
            _ => {}
        }
        let work = Work::Focused {
            text: text.clone(),
            leave_out,
        };
        let mut vectors = self.ask(work, Lane::Query).await?.into_iter();
        let whole = vectors.next().unwrap_or_default();
        let focused = focus_key.as_ref().and(vectors.next());
        let mut fresh = vec![(text, whole.clone())];
        if let (Some(k), Some(f)) = (focus_key, &focused) {
            fresh.push((k, f.clone()));
        }
        self.remember(fresh);
        Ok((whole, focused))
    }

    /// Embeds `texts`, blocking the current thread until done. For sync code
    /// only: from async code use [`EmbedService::embed`].
    pub fn embed_blocking(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, response) = mpsc::sync_channel(1);
        self.send(Work::Texts(texts), Lane::Background, Reply::Blocking(reply))?;
        response.recv().map_err(|_| EmbedError::ServiceStopped)?
    }

    pub fn kind(&self) -> EmbedderKind {
        self.kind
    }

    /// Why the service runs the fallback embedder; `None` when it runs MiniLM.
    pub fn degraded_reason(&self) -> Option<String> {
        self.degraded.as_deref().map(str::to_string)
    }

    /// Sends `work` to the embedder thread and waits for its answer without blocking the
    /// runtime.
    async fn ask(&self, work: Work, lane: Lane) -> EmbedResult {
        let (reply, response) = oneshot::channel();
        self.send(work, lane, Reply::Async(reply))?;
        response.await.map_err(|_| EmbedError::ServiceStopped)?
    }

    fn send(&self, work: Work, lane: Lane, reply: Reply) -> Result<(), EmbedError> {
        let to = match (&self.queries, lane) {
            (Some(q), Lane::Query) => q,
            _ => &self.requests,
        };
        to.send(Request { work, lane, reply })
            .map_err(|_| EmbedError::ServiceStopped)
    }
}

/// A background request is embedded this many texts at a time (one batch of the model), so a
/// query waits for one slice at most, not for a whole batch of captures (up to a hundred long
/// tool outputs: seconds of the model's time).
const BACKGROUND_SLICE: usize = 16;

/// Texts per request of [`EmbedService::embed_when_idle`]: one batch of the model, so work that
/// arrives meanwhile waits for one batch at most.
pub const IDLE_BATCH: usize = BACKGROUND_SLICE;

/// The embedder thread: serves requests until every sender is dropped, queries first, and
/// between the slices of a long background request.
fn serve(mut embedder: Box<dyn Embedder>, inbox: mpsc::Receiver<Request>) {
    let mut lanes = Lanes::default();
    loop {
        lanes.take_new(&inbox);
        let next = match lanes.next() {
            Some(request) => request,
            None => match inbox.recv() {
                Ok(request) => request,
                Err(_) => break,
            },
        };
        let Request { work, lane, reply } = next;
        let result = match work {
            Work::Texts(texts) if lane == Lane::Background && texts.len() > BACKGROUND_SLICE => {
                // Texts of similar length share a slice, as they would share a batch.
                let mut order: Vec<usize> = (0..texts.len()).collect();
                order.sort_by_key(|&i| texts[i].len());
                let mut vectors = vec![Vec::new(); texts.len()];
                let mut failed = None;
                for slice in order.chunks(BACKGROUND_SLICE) {
                    lanes.take_new(&inbox);
                    while let Some(query) = lanes.queries.pop_front() {
                        answer(&mut *embedder, query.work, query.reply);
                        lanes.take_new(&inbox);
                    }
                    let part: Vec<String> = slice.iter().map(|&i| texts[i].clone()).collect();
                    match run(&mut *embedder, &Work::Texts(part)) {
                        Ok(got) if got.len() == slice.len() => {
                            for (&i, v) in slice.iter().zip(got) {
                                vectors[i] = v;
                            }
                        }
                        Ok(got) => {
                            failed = Some(EmbedError::Inference(format!(
                                "{} vectors for {} texts",
                                got.len(),
                                slice.len()
                            )));
                            break;
                        }
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                failed.map_or(Ok(vectors), Err)
            }
            work => run(&mut *embedder, &work),
        };
        send(reply, result);
    }
    tracing::debug!("embedder thread exiting");
}

/// The requests waiting on the embedder thread, one queue per [`Lane`].
#[derive(Default)]
struct Lanes {
    queries: VecDeque<Request>,
    background: VecDeque<Request>,
    idle: VecDeque<Request>,
}

impl Lanes {
    /// Everything sent so far, so that a query overtakes the work queued before it.
    fn take_new(&mut self, inbox: &mpsc::Receiver<Request>) {
        while let Ok(request) = inbox.try_recv() {
            match request.lane {
                Lane::Query => self.queries.push_back(request),
                Lane::Background => self.background.push_back(request),
                Lane::Idle => self.idle.push_back(request),
            }
        }
    }

    /// The request to serve now: queries first, idle work last.
    fn next(&mut self) -> Option<Request> {
        self.queries
            .pop_front()
            .or_else(|| self.background.pop_front())
            .or_else(|| self.idle.pop_front())
    }
}

/// Runs one piece of work on the model and answers it.
fn answer(embedder: &mut dyn Embedder, work: Work, reply: Reply) {
    let result = run(embedder, &work);
    send(reply, result);
}

/// Runs one piece of work on the model. A panic inside the model must fail this request, not
/// every later one. The embedder holds no invariant a panic could half-update that the next
/// call depends on (each call tokenizes and runs afresh).
fn run(embedder: &mut dyn Embedder, work: &Work) -> EmbedResult {
    catch_unwind(AssertUnwindSafe(|| match work {
        Work::Texts(texts) => embedder.embed(texts),
        Work::Focused { text, leave_out } => embedder
            .embed_focused(text, leave_out)
            .map(|(whole, focused)| std::iter::once(whole).chain(focused).collect()),
    }))
    .unwrap_or_else(|panic| {
        let message = panic_message(panic.as_ref());
        tracing::error!(%message, "embedder panicked");
        Err(EmbedError::Inference(message))
    })
}

/// Answers a request; the requester may have given up (dropped future): nothing to do then.
fn send(reply: Reply, result: EmbedResult) {
    let _ = match reply {
        Reply::Async(tx) => tx.send(result).map_err(drop),
        Reply::Blocking(tx) => tx.send(result).map_err(drop),
    };
}

#[cfg(test)]
// Byte ranges of a text: one range is one word, not the numbers of a Vec.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use ai_smartness_vectors::{clip_chars, cosine, without_ranges, DIM};

    /// The thread that lowers itself runs at nice 10, and so does a thread it starts (as ONNX
    /// Runtime's pool is); the thread that asked nothing keeps its own.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_lowered_thread_and_those_it_starts_give_way() {
        fn nice_of_this_thread() -> i32 {
            // SAFETY: getpriority reads the calling thread's own nice value.
            unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) }
        }
        let before = nice_of_this_thread();
        let (own, started) = std::thread::spawn(|| {
            lower_thread_priority();
            let started = std::thread::spawn(nice_of_this_thread).join().unwrap();
            (nice_of_this_thread(), started)
        })
        .join()
        .unwrap();
        let lowered = before.max(BACKGROUND_NICE);
        assert_eq!((own, started), (lowered, lowered));
        assert_eq!(nice_of_this_thread(), before);
    }

    #[test]
    fn cosine_edge_cases() {
        assert_eq!(cosine(&[], &[]), 0.0);
        assert_eq!(cosine(&[1.0, 0.0], &[1.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 2.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[0.0, 0.0]), 0.0);
        assert!((cosine(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 0.0], &[-3.0, 0.0]) + 1.0).abs() < 1e-6);
        assert!(cosine(&[1.0, 0.0], &[0.0, 5.0]).abs() < 1e-6);
        assert!((cosine(&[1.0, 1.0], &[1.0, 0.0]) - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        assert_eq!(cosine(&[f32::NAN, 1.0], &[1.0, 1.0]), 0.0);
        let v = vec![0.1f32; DIM];
        assert!(cosine(&v, &v) <= 1.0);
    }

    #[test]
    fn without_ranges_leaves_out_whole_ranges_only() {
        let text = "when did Caroline go to the café?";
        let at = text.find("Caroline").unwrap();
        assert_eq!(
            without_ranges(text, &[at..at + 8]),
            "when did go to the café?"
        );
        let cafe = text.find("café").unwrap();
        // A range inside a char, or out of order, or past the end, is kept.
        assert_eq!(without_ranges(text, &[cafe + 4..cafe + 5]), text);
        assert_eq!(
            without_ranges(text, &[9..17, 0..4]),
            "when did go to the café?"
        );
        assert_eq!(without_ranges(text, &[30..99]), text);
        assert_eq!(without_ranges(text, &[]), text);
    }

    #[test]
    fn the_default_focus_embeds_the_text_without_the_ranges() {
        let mut e = HashedTfIdf::new();
        let text = "the pool times out in the billing service";
        let (whole, focused) = e.embed_focused(text, &[4..8]).unwrap();
        let plain = e.embed(&[text.to_string()]).unwrap().remove(0);
        let short = e
            .embed(&["the times out in the billing service".to_string()])
            .unwrap()
            .remove(0);
        assert_eq!(whole, plain);
        assert_eq!(focused, Some(short));
        assert_eq!(e.embed_focused(text, &[]).unwrap().1, None);
    }

    #[tokio::test]
    async fn a_focused_query_is_remembered_with_its_ranges() {
        let service = EmbedService::start(Box::new(HashedTfIdf::new()), None);
        let text = "the pool times out in the billing service".to_string();
        let first = service
            .embed_focused(text.clone(), vec![4..8])
            .await
            .unwrap();
        assert_eq!(
            service
                .embed_focused(text.clone(), vec![4..8])
                .await
                .unwrap(),
            first
        );
        // Other ranges: another focus, the same whole vector.
        let other = service
            .embed_focused(text.clone(), vec![9..14])
            .await
            .unwrap();
        assert_eq!(other.0, first.0);
        assert_ne!(other.1, first.1);
        // The capture of the same text finds its vector among the recent texts.
        assert_eq!(service.embed(vec![text]).await.unwrap()[0], first.0);
    }

    #[test]
    fn clip_chars_respects_char_boundaries() {
        assert_eq!(clip_chars("héllo", 2), "hé");
        assert_eq!(clip_chars("héllo", 5), "héllo");
        assert_eq!(clip_chars("héllo", 50), "héllo");
        assert_eq!(clip_chars("", 3), "");
        assert_eq!(clip_chars("日本語", 1), "日");
    }

    #[test]
    fn kind_display_and_serde() {
        assert_eq!(EmbedderKind::MiniLm.to_string(), "all-MiniLM-L6-v2 (onnx)");
        assert_eq!(
            EmbedderKind::HashedTfidf.to_string(),
            "hashed TF-IDF (degraded)"
        );
        assert_eq!(
            serde_json::to_string(&EmbedderKind::MiniLm).unwrap(),
            "\"mini_lm\""
        );
        assert_eq!(
            serde_json::to_string(&EmbedderKind::HashedTfidf).unwrap(),
            "\"hashed_tfidf\""
        );
        let back: EmbedderKind = serde_json::from_str("\"hashed_tfidf\"").unwrap();
        assert_eq!(back, EmbedderKind::HashedTfidf);
        // Its own name, but vectors comparable with the f32 products'.
        assert!(EmbedderKind::MiniLmInt8.comparable_with(EmbedderKind::MiniLm));
        assert!(EmbedderKind::MiniLm.comparable_with(EmbedderKind::MiniLmInt8));
        assert!(!EmbedderKind::MiniLmInt8.comparable_with(EmbedderKind::HashedTfidf));
        assert!(EmbedderKind::HashedTfidf.comparable_with(EmbedderKind::HashedTfidf));
        assert_eq!(
            serde_json::to_string(&EmbedderKind::MiniLmInt8).unwrap(),
            "\"mini_lm_int8\""
        );
        assert_eq!(
            EmbedderKind::MiniLmInt8.to_string(),
            "all-MiniLM-L6-v2 (onnx, 8-bit products)"
        );
    }

    #[test]
    fn load_best_falls_back_and_names_the_missing_file() {
        let empty = std::env::temp_dir().join(format!("ai-smartness-none-{}", std::process::id()));
        let (mut embedder, reason) = load_best(&empty);
        assert_eq!(embedder.kind(), EmbedderKind::HashedTfidf);
        let reason = reason.unwrap();
        assert!(reason.contains("model.onnx"), "{reason}");
        assert!(reason.contains("fetch-assets.sh"), "{reason}");
        assert_eq!(
            embedder.embed(&["hello world".into()]).unwrap()[0].len(),
            DIM
        );
    }

    /// An embedder whose calls can be made to fail, panic or be slow.
    struct Scripted;

    /// Where the "slow" text waits until released.
    static SLOW_RELEASE: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>> =
        std::sync::Mutex::new(None);

    impl Embedder for Scripted {
        fn kind(&self) -> EmbedderKind {
            EmbedderKind::HashedTfidf
        }
        fn embed(&mut self, texts: &[String]) -> EmbedResult {
            match texts[0].as_str() {
                "panic" => panic!("scripted panic"),
                "fail" => Err(EmbedError::Inference("scripted failure".into())),
                "slow" => {
                    // Busy until the test says so.
                    let release = SLOW_RELEASE.lock().unwrap().take();
                    if let Some(release) = release {
                        let _ = release.recv();
                    }
                    Ok(vec![vec![0.0; DIM]])
                }
                _ => HashedTfIdf::new().embed(texts),
            }
        }
    }

    fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}

    #[test]
    fn service_is_shareable_and_its_future_is_send() {
        assert_send_sync_clone::<EmbedService>();
        fn is_send<T: Send>(_: &T) {}
        let service = EmbedService::start(Box::new(HashedTfIdf::new()), None);
        let future = service.embed(vec!["x".into()]);
        is_send(&future);
    }

    #[test]
    fn service_blocking_roundtrip_and_metadata() {
        let service = EmbedService::start(Box::new(HashedTfIdf::new()), Some("no model".into()));
        assert_eq!(service.kind(), EmbedderKind::HashedTfidf);
        assert_eq!(service.degraded_reason().as_deref(), Some("no model"));
        assert!(service.embed_blocking(vec![]).unwrap().is_empty());
        let texts = vec!["alpha beta".to_string(), "gamma delta".to_string()];
        let out = service.clone().embed_blocking(texts.clone()).unwrap();
        assert_eq!(out, HashedTfIdf::new().embed(&texts).unwrap());
    }

    #[test]
    fn service_survives_errors_and_panics() {
        let service = EmbedService::start(Box::new(Scripted), None);
        assert!(matches!(
            service.embed_blocking(vec!["fail".into()]),
            Err(EmbedError::Inference(m)) if m == "scripted failure"
        ));
        assert!(matches!(
            service.embed_blocking(vec!["panic".into()]),
            Err(EmbedError::Inference(m)) if m.contains("scripted panic")
        ));
        assert_eq!(service.embed_blocking(vec!["ok".into()]).unwrap().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_inference_does_not_block_async_workers() {
        let (release, wait) = std::sync::mpsc::channel();
        *SLOW_RELEASE.lock().unwrap() = Some(wait);
        let service = EmbedService::start(Box::new(Scripted), None);
        let slow = tokio::spawn({
            let service = service.clone();
            async move { service.embed(vec!["slow".into()]).await }
        });
        // While the embedder thread is held, the runtime keeps running tasks.
        let ticks = tokio::spawn(async {
            for _ in 0..5 {
                tokio::task::yield_now().await;
            }
        });
        ticks.await.unwrap();
        assert!(!slow.is_finished(), "the embedder is still busy");
        release.send(()).unwrap();
        assert_eq!(slow.await.unwrap().unwrap().len(), 1);
        // embed_blocking from inside the runtime must not panic either.
        let blocking = tokio::task::spawn_blocking({
            let service = service.clone();
            move || service.embed_blocking(vec!["ok".into()])
        });
        assert_eq!(blocking.await.unwrap().unwrap().len(), 1);
        assert!(service.embed(vec![]).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn dropped_request_does_not_break_the_service() {
        // The request is held on the embedder thread until released, so its reply cannot
        // come before the drop.
        let (started, _started_rx) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let service = EmbedService::start(
            Box::new(Gated {
                started,
                release: release_rx,
                served: Arc::default(),
            }),
            None,
        );
        // Send the held request, then drop its future before the reply comes.
        let abandoned = tokio::select! {
            biased;
            _ = service.embed(vec!["gate".into()]) => false,
            _ = std::future::ready(()) => true,
        };
        assert!(abandoned);
        release.send(()).unwrap();
        assert_eq!(service.embed(vec!["ok".into()]).await.unwrap().len(), 1);
    }

    /// Holds the embedder thread on "gate" until released, and records what it serves.
    struct Gated {
        started: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
        served: Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl Embedder for Gated {
        fn kind(&self) -> EmbedderKind {
            EmbedderKind::HashedTfidf
        }
        fn embed(&mut self, texts: &[String]) -> EmbedResult {
            if texts[0] == "gate" {
                self.started.send(()).unwrap();
                self.release.recv().unwrap();
            }
            self.served.lock().unwrap().push(texts[0].clone());
            HashedTfIdf::new().embed(texts)
        }
    }

    /// A service over [`Gated`]: what it served, in order, and the two ends of the gate.
    struct GatedService {
        service: EmbedService,
        started: mpsc::Receiver<()>,
        release: mpsc::Sender<()>,
        served: Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl GatedService {
        fn start() -> GatedService {
            let (started, started_rx) = mpsc::channel();
            let (release, release_rx) = mpsc::channel();
            let served = Arc::new(std::sync::Mutex::new(Vec::new()));
            let service = EmbedService::start(
                Box::new(Gated {
                    started,
                    release: release_rx,
                    served: Arc::clone(&served),
                }),
                None,
            );
            GatedService {
                service,
                started: started_rx,
                release,
                served,
            }
        }

        /// Sends `texts` on `lane` without waiting; the receiver gets the vectors.
        fn ask(&self, texts: Vec<String>, lane: Lane) -> oneshot::Receiver<EmbedResult> {
            let (tx, rx) = oneshot::channel();
            self.service
                .send(Work::Texts(texts), lane, Reply::Async(tx))
                .unwrap();
            rx
        }

        fn served(&self) -> Vec<String> {
            self.served.lock().unwrap().clone()
        }

        /// Sends `first`, then, while the model holds it, each of `then`; releases the model and
        /// returns the order the texts were served in (each request answered with one vector).
        async fn order_served(&self, first: (&str, Lane), then: &[(&str, Lane)]) -> Vec<String> {
            let ask = |(text, lane): (&str, Lane)| self.ask(vec![text.to_string()], lane);
            let mut asked = vec![ask(first)];
            self.started.recv().unwrap();
            asked.extend(then.iter().map(|&a| ask(a)));
            self.release.send(()).unwrap();
            for rx in asked {
                assert_eq!(rx.await.unwrap().unwrap().len(), 1);
            }
            self.served()
        }
    }

    #[tokio::test]
    async fn a_query_overtakes_the_background_work_queued_before_it() {
        let served = GatedService::start()
            .order_served(
                ("gate", Lane::Background),
                &[
                    ("capture 1", Lane::Background),
                    ("capture 2", Lane::Background),
                    ("prompt", Lane::Query),
                ],
            )
            .await;
        assert_eq!(served, ["gate", "prompt", "capture 1", "capture 2"]);
    }

    /// Idle work waits for every query and background request, even those sent after it.
    #[tokio::test]
    async fn idle_work_goes_last() {
        let served = GatedService::start()
            .order_served(
                ("gate", Lane::Idle),
                &[
                    ("unit", Lane::Idle),
                    ("capture", Lane::Background),
                    ("prompt", Lane::Query),
                ],
            )
            .await;
        assert_eq!(served, ["gate", "prompt", "capture", "unit"]);
    }

    /// A query asked while a long background request runs is served between its slices, and
    /// the long request still gets every vector, in its own order.
    #[tokio::test]
    async fn a_query_is_served_between_the_slices_of_a_long_request() {
        let g = GatedService::start();
        // "gate" is the shortest text: the first slice, which waits to be released.
        let mut long: Vec<String> = (0..3 * BACKGROUND_SLICE - 1)
            .map(|i| format!("capture number {i:03} about the pool"))
            .collect();
        long.insert(7, "gate".to_string());
        let batch = g.ask(long.clone(), Lane::Background);
        g.started.recv().unwrap();
        let prompt = g.ask(vec!["prompt".into()], Lane::Query);
        g.release.send(()).unwrap();
        assert_eq!(prompt.await.unwrap().unwrap().len(), 1);
        let vectors = batch.await.unwrap().unwrap();
        assert_eq!(vectors.len(), long.len());
        for (text, v) in long.iter().zip(&vectors) {
            assert_eq!(
                v,
                &HashedTfIdf::new()
                    .embed(std::slice::from_ref(text))
                    .unwrap()[0],
                "{text}"
            );
        }
        let order = g.served();
        assert_eq!(order[0], "gate");
        assert_eq!(
            order[1], "prompt",
            "the prompt waited for more than one slice: {order:?}"
        );
        assert_eq!(
            order.len(),
            3 + 1,
            "three slices of the long request and the prompt"
        );
    }

    /// A prompt is remembered (its capture embeds it again); a word kept in the word table is
    /// not, but is found when the prompt's own request embedded it first.
    #[tokio::test]
    async fn words_kept_elsewhere_do_not_push_out_recent_prompts() {
        let service = EmbedService::start(Box::new(HashedTfIdf::new()), None);
        let remembered = |t: &str| service.recent.get(t).is_some();
        service
            .embed(vec!["why does the pool time out".into(), "pool".into()])
            .await
            .unwrap();
        assert!(remembered("why does the pool time out") && remembered("pool"));
        let v = service
            .embed_kept_elsewhere(vec!["pool".into(), "violin".into()])
            .await
            .unwrap();
        assert_eq!(v.len(), 2);
        assert!(!remembered("violin"), "a table word is not remembered");
    }
}
