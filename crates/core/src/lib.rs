//! The memory engine of ai-smartness, pure: the data model (threads, messages, bridges), decay,
//! the in-RAM graph, the thread decision and gossip, consolidation, and retrieval (what is
//! relevant to a prompt, packed into a token budget). No tokio, no socket, no clock of its own
//! (times are passed in): the daemon owns the memory and persists it.

pub mod memory;
pub mod retrieve;

// What the engine builds on, under the names its modules use.
pub use ai_smartness_capture as capture;
pub use ai_smartness_embed as embed;
pub use ai_smartness_proto::paths;
