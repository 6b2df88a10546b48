//! Verified workflow runs: a task planned, executed with tools in the workspace,
//! checked by the project's own checks and a judge, repaired while it fails.
//!
//! - The run, its events, the verification report and the verdict are records
//!   (`ai_smartness_records::run`), as is a tool's uniform result (`ai_smartness_records::tool`).
//! - [`prompts`]: what each phase asks the models, and the strict reading of their answers.
//! - [`pipeline`]: SPEC, PLAN, EXECUTE, VERIFY, REPAIR, then COMPLETE or FAILED.
//! - [`tools`]: the tools, their error codes and plan B.
//! - [`sandbox`]: a throwaway copy of the workspace.

pub mod pipeline;
pub mod prompts;
pub mod sandbox;
pub mod tools;
