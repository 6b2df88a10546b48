//! Where the embedding assets live on disk.
//!
//! `scripts/fetch-assets.sh` installs them; the paths and the data-dir rule
//! here must stay identical to the script's, or the daemon silently runs
//! degraded on a machine where the assets are in fact installed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use ai_smartness_vectors::EmbedError;

/// Overrides the data dir (same variable as the fetch script).
pub const DATA_DIR_ENV: &str = "AI_SMARTNESS_DATA_DIR";
/// Folder name under the XDG data home.
pub const APP_DIR_NAME: &str = "ai-smartness";
/// Model folder, relative to the data dir.
pub const MODEL_DIR: &str = "models/all-MiniLM-L6-v2";
/// ONNX Runtime version the fetch script installs.
pub const ORT_VERSION: &str = "1.31.1";
/// ONNX Runtime shared library, relative to the data dir: the file the fetch script takes out of
/// the platform's PyPI wheel (`scripts/assets.lock`), named as that wheel names it.
#[cfg(not(target_os = "macos"))]
pub const ORT_LIBRARY: &str = "onnxruntime/libonnxruntime.so.1.31.1";
/// See above: macOS names its shared libraries `.dylib`, the version before the suffix.
#[cfg(target_os = "macos")]
pub const ORT_LIBRARY: &str = "onnxruntime/libonnxruntime.1.31.1.dylib";

/// The data dir holding `models/` and `onnxruntime/`.
///
/// `$AI_SMARTNESS_DATA_DIR` if set, else `$XDG_DATA_HOME/ai-smartness` if
/// that is an absolute path (the XDG spec says to ignore relative ones), else
/// `~/.local/share/ai-smartness`. The same rule is used on every platform
/// (not the macOS/Windows conventions of the `directories` crate) because the
/// fetch script uses it, and both must agree.
pub fn data_dir() -> PathBuf {
    let home = directories::BaseDirs::new().map(|dirs| dirs.home_dir().to_path_buf());
    data_dir_from(|name| std::env::var_os(name), home)
}

/// [`data_dir`] with the environment and home dir passed in, so the rule can
/// be tested without mutating the process environment (racy in tests).
fn data_dir_from(var: impl Fn(&str) -> Option<OsString>, home: Option<PathBuf>) -> PathBuf {
    let non_empty = |name: &str| var(name).filter(|value| !value.is_empty());
    if let Some(dir) = non_empty(DATA_DIR_ENV) {
        return PathBuf::from(dir);
    }
    if let Some(xdg) = non_empty("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
    {
        return xdg.join(APP_DIR_NAME);
    }
    match home {
        Some(home) => home.join(".local").join("share").join(APP_DIR_NAME),
        // No $HOME and no passwd entry: a sandbox. Nothing was installed for
        // this user anyway; the temp dir at least gives a usable absolute path.
        None => std::env::temp_dir().join(APP_DIR_NAME),
    }
}

/// The file name of the model rewritten to multiply in 8 bits (`ai-smartness-int8`).
pub const MODEL_INT8_FILE: &str = "model.int8.onnx";

/// Paths of every file the MiniLM embedder needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssetPaths {
    pub model: PathBuf,
    /// The model rewritten to multiply in 8 bits, derived from `model` when the assets are
    /// installed (optional: without it the products run in f32).
    pub model_int8: PathBuf,
    pub tokenizer: PathBuf,
    pub config: PathBuf,
    pub special_tokens_map: PathBuf,
    pub tokenizer_config: PathBuf,
    pub ort_library: PathBuf,
}

impl AssetPaths {
    /// Where the assets are expected under `data_dir`, whether or not they
    /// exist.
    pub fn expected(data_dir: &Path) -> Self {
        let model_dir = data_dir.join(MODEL_DIR);
        Self {
            model: model_dir.join("model.onnx"),
            model_int8: model_dir.join(MODEL_INT8_FILE),
            tokenizer: model_dir.join("tokenizer.json"),
            config: model_dir.join("config.json"),
            special_tokens_map: model_dir.join("special_tokens_map.json"),
            tokenizer_config: model_dir.join("tokenizer_config.json"),
            ort_library: data_dir.join(ORT_LIBRARY),
        }
    }

    /// Each asset as (file name, path), in the order they are checked.
    pub fn entries(&self) -> [(&'static str, &Path); 6] {
        [
            ("model.onnx", &self.model),
            ("tokenizer.json", &self.tokenizer),
            ("config.json", &self.config),
            ("special_tokens_map.json", &self.special_tokens_map),
            ("tokenizer_config.json", &self.tokenizer_config),
            ("ONNX Runtime library", &self.ort_library),
        ]
    }
}

/// The asset paths under `data_dir`, or [`EmbedError::MissingAsset`] naming
/// the first file that is absent (or not a regular file).
///
/// Only existence is checked: checksums are the fetch script's job
/// (`scripts/fetch-assets.sh --check`), and a corrupt file still fails
/// cleanly at load time.
pub fn locate(data_dir: &Path) -> Result<AssetPaths, EmbedError> {
    let paths = AssetPaths::expected(data_dir);
    if let Some((asset, path)) = paths
        .entries()
        .into_iter()
        .find(|(_, path)| !path.is_file())
    {
        return Err(EmbedError::MissingAsset {
            asset,
            path: path.to_path_buf(),
        });
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn dir_with(vars: &[(&str, &str)], home: Option<&str>) -> PathBuf {
        let vars: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        data_dir_from(|name| vars.get(name).cloned(), home.map(PathBuf::from))
    }

    #[test]
    fn data_dir_rule_matches_fetch_script() {
        let home = Some("/home/u");
        assert_eq!(
            dir_with(&[], home),
            PathBuf::from("/home/u/.local/share/ai-smartness")
        );
        assert_eq!(
            dir_with(&[("XDG_DATA_HOME", "/xdg")], home),
            PathBuf::from("/xdg/ai-smartness")
        );
        // Relative and empty XDG values are ignored, as the script does.
        assert_eq!(
            dir_with(&[("XDG_DATA_HOME", "rel/dir")], home),
            PathBuf::from("/home/u/.local/share/ai-smartness")
        );
        assert_eq!(
            dir_with(&[("XDG_DATA_HOME", "")], home),
            PathBuf::from("/home/u/.local/share/ai-smartness")
        );
        assert_eq!(
            dir_with(&[(DATA_DIR_ENV, "/data"), ("XDG_DATA_HOME", "/xdg")], home),
            PathBuf::from("/data")
        );
        assert_eq!(
            dir_with(&[(DATA_DIR_ENV, "")], home),
            PathBuf::from("/home/u/.local/share/ai-smartness")
        );
        assert!(dir_with(&[], None).is_absolute());
    }

    #[test]
    fn layout_matches_fetch_script() {
        let p = AssetPaths::expected(Path::new("/d"));
        assert_eq!(
            p.model,
            PathBuf::from("/d/models/all-MiniLM-L6-v2/model.onnx")
        );
        assert_eq!(
            p.tokenizer_config,
            PathBuf::from("/d/models/all-MiniLM-L6-v2/tokenizer_config.json")
        );
        assert_eq!(p.ort_library, PathBuf::from("/d").join(ORT_LIBRARY));
        assert!(ORT_LIBRARY.contains(ORT_VERSION));
    }

    /// The library the daemon loads is the one the fetch script installs on this platform.
    #[test]
    fn the_library_loaded_is_the_one_pinned_for_this_platform() {
        let lock = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/assets.lock"),
        )
        .unwrap();
        let pinned: Vec<&str> = lock
            .lines()
            .filter(|l| l.starts_with("file:") || l.starts_with("file "))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        assert!(
            pinned.contains(&ORT_LIBRARY),
            "{ORT_LIBRARY} is not pinned in scripts/assets.lock: {pinned:?}"
        );
    }

    #[test]
    fn locate_names_the_missing_file() {
        let root = std::env::temp_dir().join(format!("ai-smartness-locate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let expected = AssetPaths::expected(&root);

        match locate(&root) {
            Err(EmbedError::MissingAsset { asset, path }) => {
                assert_eq!(asset, "model.onnx");
                assert_eq!(path, expected.model);
            }
            other => panic!("expected MissingAsset, got {other:?}"),
        }

        for (_, path) in expected.entries() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"x").unwrap();
        }
        std::fs::remove_file(&expected.special_tokens_map).unwrap();
        let err = locate(&root).unwrap_err();
        assert!(err.to_string().contains("special_tokens_map.json"), "{err}");

        std::fs::write(&expected.special_tokens_map, b"x").unwrap();
        assert_eq!(locate(&root).unwrap(), expected);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
