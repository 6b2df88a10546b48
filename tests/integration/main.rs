//! One integration-test binary: every test starts a real daemon (`ai daemon run`) on a temporary
//! project and socket, and talks to it through the real socket and the real CLI.

mod harness;

mod cli;
mod daemon;
mod dashboard;
mod durability;
mod e2e_claude;
mod fake_anthropic;
mod hooks;
mod layout;
mod llm;
mod mcp;
mod orchestrator;
mod postgres;
mod protocol;
mod recall;
mod runs;
mod scripts;
mod security;
mod team;
mod threads;
