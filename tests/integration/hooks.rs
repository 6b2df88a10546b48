//! The hook binaries as Claude Code runs them (being written).
