//! The daemon's shared state, split into narrow handles, each cheap to clone and each in its own
//! module with its fields private: [`MemoryHandle`] (the memory and what reads or writes it),
//! [`CaptureHandle`] (journal, worker queue, processed seq), [`ConfigHandle`], [`Lifecycle`]
//! (stop signal, tracked tasks), [`StatsHandle`] (counters) and [`PruneHandle`]. The services
//! build on these; [`crate::app::Daemon`], above the services, bundles them all. The memory lock
//! is a std mutex never held across an `.await`.

mod capture;
mod config;
mod lifecycle;
mod memory;
mod prune;
mod stats;

pub use capture::{CaptureError, CaptureHandle, CaptureQueue, Journaled};
pub use config::ConfigHandle;
pub use lifecycle::{Lifecycle, ShutdownSignal};
pub use memory::{MemoryHandle, QueryPlan};
pub use prune::{PruneCommand, PruneHandle};
pub use stats::StatsHandle;
