//! Bridges and the index files derived from the memory: written when their content changes, repaired at load.

use super::*;

/// `bridges/_index.json`: bridge ids by the thread at each end, for lookups without a scan.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct BridgeIndex {
    by_source: BTreeMap<String, Vec<String>>,
    by_target: BTreeMap<String, Vec<String>>,
}

impl BridgeIndex {
    /// Sorts every list so two indexes compare by content, whatever order a writer used.
    fn normalised(mut self) -> Self {
        for list in self
            .by_source
            .values_mut()
            .chain(self.by_target.values_mut())
        {
            list.sort_unstable();
        }
        self
    }
}

/// The index files' expected contents, taken from the memory (see [`Store::index_snapshot`]).
pub struct IndexSnapshot([(PathBuf, IndexContent); 4]);

/// What one index file should contain.
pub(super) enum IndexContent {
    Ids(Vec<String>),
    Bridges(BridgeIndex),
}

impl IndexContent {
    /// The bytes the store writes for this content (pretty JSON, final newline).
    fn to_bytes(&self, path: &Path) -> Result<Vec<u8>, StoreError> {
        let json = match self {
            IndexContent::Ids(ids) => serde_json::to_vec_pretty(ids),
            IndexContent::Bridges(index) => serde_json::to_vec_pretty(index),
        };
        let mut bytes = json.map_err(|source| StoreError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    /// Whether `bytes` (an index file as found on disk) says the same thing, order aside.
    fn matches(&self, bytes: &[u8]) -> bool {
        match self {
            IndexContent::Ids(expected) => serde_json::from_slice::<Vec<String>>(bytes)
                .map(|mut found| {
                    found.sort_unstable();
                    &found == expected
                })
                .unwrap_or(false),
            IndexContent::Bridges(expected) => serde_json::from_slice::<BridgeIndex>(bytes)
                .map(|found| &found.normalised() == expected)
                .unwrap_or(false),
        }
    }
}

impl Store {
    /// Writes `bridges/ID.json`.
    pub fn save_bridge(&self, bridge: &ThinkBridge) -> Result<(), StoreError> {
        let path = self.entity_path(&self.bridges_dir, BRIDGE_PREFIX, &bridge.id)?;
        write_pretty(&path, bridge)
    }

    /// Writes many bridges with one folder fsync (see [`Store::save_threads`]).
    pub fn save_bridges<'a>(
        &self,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> Result<(), StoreError> {
        let bridges: Vec<&ThinkBridge> = bridges.into_iter().collect();
        let paths = bridges
            .iter()
            .map(|b| self.entity_path(&self.bridges_dir, BRIDGE_PREFIX, &b.id))
            .collect::<Result<Vec<_>, _>>()?;
        save_many(&self.bridges_dir, paths.iter().zip(bridges))
    }

    /// Removes `bridges/ID.json` (no error if it is already gone).
    pub fn delete_bridge(&self, id: &str) -> Result<(), StoreError> {
        let path = self.entity_path(&self.bridges_dir, BRIDGE_PREFIX, id)?;
        atomic::remove_durable(&path).map_err(io_at(&path))
    }

    /// The file a loaded bridge came from (its id was checked against the file name).
    pub(super) fn bridge_path_unchecked(&self, id: &str) -> PathBuf {
        self.bridges_dir.join(format!("{id}.json"))
    }

    /// Rewrites the index files that differ from what the given threads/bridges imply (no write
    /// when equal), so callers can call it after every change without wearing the disk.
    pub fn write_indexes<'a>(
        &self,
        threads: impl IntoIterator<Item = &'a Thread>,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> Result<(), StoreError> {
        self.write_index_snapshot(self.index_snapshot(threads, bridges))
    }

    /// What the index files must hold for these threads and bridges: cheap (ids only), so it
    /// can be taken under the memory's lock and written after it is released.
    pub fn index_snapshot<'a>(
        &self,
        threads: impl IntoIterator<Item = &'a Thread>,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> IndexSnapshot {
        IndexSnapshot(self.expected_indexes(threads, bridges))
    }

    /// [`Store::write_indexes`] from a snapshot.
    pub fn write_index_snapshot(&self, snapshot: IndexSnapshot) -> Result<(), StoreError> {
        let mut cache = self
            .index_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (path, content) in snapshot.0 {
            let bytes = content.to_bytes(&path)?;
            let same = match cache.get(&path) {
                Some(known) => *known == bytes,
                None => match fs::read(&path) {
                    Ok(on_disk) => on_disk == bytes,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => false,
                    Err(e) => return Err(io_at(&path)(e)),
                },
            };
            if !same {
                write_atomic(&path, &bytes).map_err(io_at(&path))?;
            }
            cache.insert(path, bytes);
        }
        Ok(())
    }

    /// Compares each index file with the loaded data and rewrites the wrong ones.
    pub(super) fn repair_indexes(
        &self,
        threads: &[Thread],
        bridges: &[ThinkBridge],
    ) -> Result<bool, StoreError> {
        let mut cache = self
            .index_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut rebuilt = false;
        // A new store has no index yet: writing the first ones is not a repair.
        let new_store = threads.is_empty() && bridges.is_empty();
        for (path, content) in self.expected_indexes(threads, bridges) {
            let (problem, missing) = match fs::read(&path) {
                Ok(bytes) if content.matches(&bytes) => {
                    cache.insert(path, bytes);
                    continue;
                }
                Ok(_) => ("unparsable or inconsistent with the data files", false),
                Err(e) if e.kind() == io::ErrorKind::NotFound => ("missing", true),
                Err(_) => ("unreadable", false),
            };
            let bytes = content.to_bytes(&path)?;
            write_atomic(&path, &bytes).map_err(io_at(&path))?;
            if new_store && missing {
                tracing::debug!(file = %path.display(), "wrote the index of a new store");
            } else {
                tracing::warn!(file = %path.display(), problem, "rebuilt an index file");
                rebuilt = true;
            }
            cache.insert(path, bytes);
        }
        Ok(rebuilt)
    }

    /// The four index files and what they should contain, lists sorted and without duplicates.
    pub(super) fn expected_indexes<'a>(
        &self,
        threads: impl IntoIterator<Item = &'a Thread>,
        bridges: impl IntoIterator<Item = &'a ThinkBridge>,
    ) -> [(PathBuf, IndexContent); 4] {
        let mut active = BTreeSet::new();
        let mut suspended = BTreeSet::new();
        let mut archived = BTreeSet::new();
        for t in threads {
            let set = match t.status {
                ThreadStatus::Active => &mut active,
                ThreadStatus::Suspended => &mut suspended,
                ThreadStatus::Archived => &mut archived,
            };
            set.insert(t.id.clone());
        }
        let mut by_source: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut by_target: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for b in bridges {
            by_source
                .entry(b.source_id.clone())
                .or_default()
                .insert(b.id.clone());
            by_target
                .entry(b.target_id.clone())
                .or_default()
                .insert(b.id.clone());
        }
        let to_vecs = |m: BTreeMap<String, BTreeSet<String>>| {
            m.into_iter()
                .map(|(k, v)| (k, v.into_iter().collect()))
                .collect()
        };
        let ids = |s: BTreeSet<String>| IndexContent::Ids(s.into_iter().collect());
        [
            (self.threads_dir.join(ACTIVE_INDEX), ids(active)),
            (self.threads_dir.join(SUSPENDED_INDEX), ids(suspended)),
            (self.threads_dir.join(ARCHIVED_INDEX), ids(archived)),
            (
                self.bridges_dir.join(BRIDGE_INDEX),
                IndexContent::Bridges(BridgeIndex {
                    by_source: to_vecs(by_source),
                    by_target: to_vecs(by_target),
                }),
            ),
        ]
    }
}
