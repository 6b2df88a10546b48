//! The assistant's pure core: sessions and their messages, the model's answer
//! protocol, the command vocabulary, cron schedules, periods, the autonomous loop's decisions and
//! the single-slot queue. Nothing here does I/O or reads a clock: callers pass `now` in, so every
//! rule is testable with fixed times and the daemon keeps all effects in one place.
//!
//! - Sessions, messages, the answer protocol, the command vocabulary and periods are records
//!   (`ai_smartness_records::assistant`): the daemon's clients read them too.
//! - [`schedule`]: 5-field cron and the pull-based "is a run due?" rule.
//! - [`limits`]: the autonomous loop's next step from a reply, the counters and the limits.
//! - [`queue`]: the single active slot, the memory queue, the scheduler tick, orphans.
//! - [`prompt`]: the prompt in levels and the history merged for a provider.

pub mod exec;
pub mod limits;
pub mod prompt;
pub mod queue;
pub mod schedule;
