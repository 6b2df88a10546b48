//! Verified workflow runs: a task planned, executed with tools in the workspace,
//! checked by the project's own checks and a judge, repaired while it fails.
//!
//! - [`model`]: the run, its events, the verification report and the verdict.
//! - [`prompts`]: what each phase asks the models, and the strict reading of their answers.
//! - [`pipeline`]: SPEC, PLAN, EXECUTE, VERIFY, REPAIR, then COMPLETE or FAILED.
//! - [`tools`]: the tools and their uniform `ToolResult`, error codes and plan B.
//! - [`sandbox`]: a throwaway copy of the workspace.

pub mod pipeline;
pub mod prompts;
pub mod run;
pub mod sandbox;
pub mod tools;

// What runs build on, under the names their modules use.
use ai_smartness_capture as capture;
use ai_smartness_core::clock;
use ai_smartness_llm as llm;
use ai_smartness_store as store;
