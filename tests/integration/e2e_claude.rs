//! End to end with the real Claude Code CLI (being written).
