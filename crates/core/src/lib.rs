//! The memory engine of ai-smartness, pure: the data model (threads, messages, bridges), decay,
//! the in-RAM graph, the thread decision and gossip, consolidation, and retrieval (what is
//! relevant to a prompt, packed into a token budget). No tokio, no socket: times are passed
//! in, and [`clock`] is the injectable source the daemon and the workflow read them from (tests
//! move it by hand). The daemon owns the memory and persists it.

pub mod clock;
pub mod memory;
pub mod retrieve;
