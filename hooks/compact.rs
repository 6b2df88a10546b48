//! `ai-compact` (being written).

fn main() {}
