//! The memory itself: the data model, decay, the in-RAM graph and the engine that places
//! captures into threads and links them by gossip, and the edits people and the assistant make.

pub mod consolidate;
pub mod decay;
pub mod edit;
pub mod engine;
pub mod graph;
pub mod ids;
pub mod refine;
pub mod rules;
pub mod similarity;
pub mod subject;
pub mod synthesis;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod types;
