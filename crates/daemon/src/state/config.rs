//! The config in force: read by every service, replaced by `ai mode` and by a hand edit of
//! `config.json`.

use ai_smartness_config::Config;
use std::sync::{Arc, RwLock};

/// Cheap to clone: every clone sees the same config.
#[derive(Clone)]
pub struct ConfigHandle {
    /// Replaced whole, never edited in place: a reader gets one consistent copy.
    config: Arc<RwLock<Config>>,
}

impl ConfigHandle {
    pub fn new(config: Config) -> ConfigHandle {
        ConfigHandle {
            config: Arc::new(RwLock::new(config)),
        }
    }

    /// A copy of the config in force.
    pub fn get(&self) -> Config {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How much of a capture is kept whole, in characters.
    pub fn capture_max_chars(&self) -> usize {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .capture
            .max_chars()
    }

    /// Puts `config` in force.
    pub fn set(&self, config: Config) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }
}
