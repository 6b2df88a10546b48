//! The autonomous loop's decisions as pure functions.
//!
//! The daemon calls the model, then asks [`decide`] what the reply means, with these
//! priorities: 0 `completed` (automations), 1 format errors, 2 communication module (chats),
//! 3 data commands, 4 action commands, else the round ends. Once actions have run it asks
//! [`after_actions`]; once a person answered a module, [`after_answer`]; when they refused
//! validation, [`after_refusal`]. Each returns the step to take and the counters after it.
//!
//! Counters follow the seed: consecutive data queries, action retries and format errors, and
//! the round's total of automatic re-sends (never reset within a round). One departure, to
//! save a wasted call: the roundtrip limit is checked before a re-send rather than after the
//! model answered it, so the last reply within the limit is still acted on.

use ai_smartness_records::assistant::message::{AIMessage, AiMessageError};
use ai_smartness_records::assistant::types::{
    AILimitsConfig, KindLimits, LoopCounters, RoundReason, SessionEndReason, SessionKind,
};

/// Why a loop cannot be run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LoopError {
    /// SEED sessions are templates (seed: "jamais exécuté").
    #[error("a SEED session is a template and never runs")]
    SeedNotRunnable,
}

/// The settings one round is run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopContext {
    /// CHAT or AUTOMATION.
    kind: SessionKind,
    /// That kind's limits.
    limits: KindLimits,
    /// The configuration (app, tool, session) requires a person's approval of actions, whatever
    /// the model asked.
    config_requires_validation: bool,
}

impl LoopContext {
    /// The context for a session kind; SEED sessions never run.
    pub fn new(
        kind: SessionKind,
        limits: &AILimitsConfig,
        config_requires_validation: bool,
    ) -> Result<Self, LoopError> {
        let limits = limits.for_kind(kind).ok_or(LoopError::SeedNotRunnable)?;
        Ok(LoopContext {
            kind,
            limits,
            config_requires_validation,
        })
    }

    /// The session kind.
    pub fn kind(&self) -> SessionKind {
        self.kind
    }

    /// The limits in force.
    pub fn limits(&self) -> KindLimits {
        self.limits
    }

    fn is_automation(&self) -> bool {
        self.kind == SessionKind::Automation
    }
}

/// Which limit stopped the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Too many data query replies in a row.
    DataQueries,
    /// Too many failed action series in a row.
    ActionRetries,
    /// Too many malformed replies in a row.
    FormatErrors,
    /// Too many automatic re-sends in the round.
    Roundtrips,
}

impl Limit {
    /// The summary of the LIMIT_REACHED system message.
    pub fn summary(self, limits: &KindLimits) -> String {
        match self {
            Limit::DataQueries => format!(
                "Limit reached: {} data queries in a row. Answer with what you have.",
                limits.max_data_query_iterations
            ),
            Limit::ActionRetries => format!(
                "Limit reached: actions failed {} times in a row.",
                limits.max_action_retries
            ),
            Limit::FormatErrors => format!(
                "Limit reached: {} malformed replies in a row.",
                limits.max_format_error_retries
            ),
            Limit::Roundtrips => format!(
                "Limit reached: {} automatic exchanges in this round.",
                limits.max_autonomous_roundtrips
            ),
        }
    }
}

/// What the assistant does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// AUTOMATION sent `completed: true`: end the session with COMPLETED and free the slot.
    Complete,
    /// Store the fallback AI message (if any) and a FORMAT_ERROR with `feedback`, then re-send.
    RetryFormat {
        /// The `ai_response_invalid_format` message to store when the reply did not parse;
        /// none when it parsed (the parsed message is stored) but could not be used.
        fallback: Option<AIMessage>,
        /// The FORMAT_ERROR text for the model.
        feedback: String,
    },
    /// Too many malformed replies: store the fallback (if any) and LIMIT_REACHED, stop.
    GiveUp {
        /// As in `RetryFormat`.
        fallback: Option<AIMessage>,
    },
    /// Store LIMIT_REACHED with this limit's summary and stop the round.
    LimitReached(Limit),
    /// CHAT: store the COMMUNICATION_CANCELLED fallback, wait for the person's answer, then
    /// call [`after_answer`].
    AwaitAnswer,
    /// Run the data commands, store DATA_ADDED, re-send.
    RunData,
    /// Run the actions, first asking the person when `needs_validation` (store the
    /// VALIDATION_CANCELLED fallback before waiting), then call [`after_actions`] (or
    /// [`after_refusal`]).
    RunActions {
        /// A person must approve first.
        needs_validation: bool,
    },
    /// Send the stored results back to the model.
    Resend(RoundReason),
    /// The round is over: the person speaks next (the session stays active).
    AwaitUser,
}

/// A step, the counters to keep, and whether the session ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// What to do.
    pub step: Step,
    /// The counters after this step (already incremented for a re-send).
    pub counters: LoopCounters,
    /// Set when the session ends: COMPLETED, or TIMEOUT for a limit in an automation
    /// (seed: "Limites boucles ... → TIMEOUT").
    pub end_reason: Option<SessionEndReason>,
    /// Set by [`after_actions`] on success: the postText to store as a separate AI text
    /// excluded from the prompt.
    pub post_text: Option<String>,
}

impl Decision {
    fn new(ctx: &LoopContext, step: Step, counters: LoopCounters) -> Self {
        let end_reason = match step {
            Step::Complete => Some(SessionEndReason::Completed),
            Step::GiveUp { .. } | Step::LimitReached(_) if ctx.is_automation() => {
                Some(SessionEndReason::Timeout)
            }
            _ => None,
        };
        Decision {
            step,
            counters,
            end_reason,
            post_text: None,
        }
    }
}

/// A model reply, parsed or not.
#[derive(Debug, Clone, Copy)]
pub enum Reply<'a> {
    /// A valid AIMessage.
    Parsed(&'a AIMessage),
    /// A reply that did not parse: the raw text and why.
    Invalid {
        /// The reply as received.
        raw: &'a str,
        /// What was wrong.
        error: &'a AiMessageError,
    },
}

/// Feedback sent when an automation reply neither runs commands nor completes: nobody will
/// answer it.
pub const AUTOMATION_IDLE_FEEDBACK: &str = "Your last reply could not be used:\n- nobody answers during an automation: send dataCommands or actionCommands, or {\"preText\": ..., \"completed\": true} when the work is done.";

/// Whether one more automatic re-send stays within the round's limit.
fn can_resend(ctx: &LoopContext, c: &LoopCounters) -> bool {
    c.total_roundtrips < ctx.limits.max_autonomous_roundtrips
}

/// A format problem: retry within the limits, else give up.
fn format_error(
    ctx: &LoopContext,
    mut c: LoopCounters,
    fallback: Option<AIMessage>,
    feedback: String,
) -> Decision {
    if c.consecutive_format_errors >= ctx.limits.max_format_error_retries {
        return Decision::new(ctx, Step::GiveUp { fallback }, c);
    }
    if !can_resend(ctx, &c) {
        return Decision::new(ctx, Step::LimitReached(Limit::Roundtrips), c);
    }
    c.consecutive_format_errors += 1;
    c.total_roundtrips += 1;
    Decision::new(ctx, Step::RetryFormat { fallback, feedback }, c)
}

/// What a reply means, by these priorities.
pub fn decide(ctx: &LoopContext, reply: Reply<'_>, counters: LoopCounters) -> Decision {
    let msg = match reply {
        Reply::Invalid { raw, error } => {
            return format_error(
                ctx,
                counters,
                Some(AIMessage::invalid_format(raw)),
                error.feedback(),
            )
        }
        Reply::Parsed(m) => m,
    };
    let mut c = counters;
    // Priority 0: completed (automations only; chats ignore the flag).
    if ctx.is_automation() && msg.is_completed() {
        return Decision::new(ctx, Step::Complete, c);
    }
    // Priority 1 passed: a well-formed reply resets the format error streak.
    let format_streak = c.consecutive_format_errors;
    c.consecutive_format_errors = 0;
    // Priority 2: communication module (ignored in automations).
    if !ctx.is_automation() && msg.communication_module.is_some() {
        return Decision::new(ctx, Step::AwaitAnswer, c);
    }
    // Priority 3: data commands.
    if !msg.data().is_empty() {
        if c.consecutive_data_queries >= ctx.limits.max_data_query_iterations {
            return Decision::new(ctx, Step::LimitReached(Limit::DataQueries), c);
        }
        if !can_resend(ctx, &c) {
            return Decision::new(ctx, Step::LimitReached(Limit::Roundtrips), c);
        }
        c.consecutive_data_queries += 1;
        c.consecutive_action_retries = 0;
        c.total_roundtrips += 1;
        return Decision::new(ctx, Step::RunData, c);
    }
    // Priority 4: action commands. The model's validationRequest counts only in chats.
    if !msg.actions().is_empty() {
        let asked = !ctx.is_automation() && msg.validation_request == Some(true);
        let needs_validation = ctx.config_requires_validation || asked;
        return Decision::new(ctx, Step::RunActions { needs_validation }, c);
    }
    if ctx.is_automation() {
        // Nothing to do and not completed: nobody will answer, so it is a format error.
        c.consecutive_format_errors = format_streak;
        return format_error(ctx, c, None, AUTOMATION_IDLE_FEEDBACK.to_string());
    }
    Decision::new(ctx, Step::AwaitUser, c)
}

/// After the actions ran: on success, store the postText, then go on (keepControl, or always
/// in automations) or hand over; on failure, send the errors back for a retry.
pub fn after_actions(
    ctx: &LoopContext,
    msg: &AIMessage,
    all_success: bool,
    counters: LoopCounters,
) -> Decision {
    let mut c = counters;
    if all_success {
        let go_on = msg.keep_control == Some(true) || ctx.is_automation();
        let mut d = if !go_on {
            Decision::new(ctx, Step::AwaitUser, c)
        } else if !can_resend(ctx, &c) {
            Decision::new(ctx, Step::LimitReached(Limit::Roundtrips), c)
        } else {
            c.consecutive_data_queries = 0;
            c.consecutive_action_retries = 0;
            c.consecutive_format_errors = 0;
            c.total_roundtrips += 1;
            Decision::new(ctx, Step::Resend(RoundReason::DataResponse), c)
        };
        d.post_text = msg.post_text.clone();
        return d;
    }
    if c.consecutive_action_retries >= ctx.limits.max_action_retries {
        return Decision::new(ctx, Step::LimitReached(Limit::ActionRetries), c);
    }
    if !can_resend(ctx, &c) {
        return Decision::new(ctx, Step::LimitReached(Limit::Roundtrips), c);
    }
    c.consecutive_action_retries += 1;
    c.consecutive_data_queries = 0;
    c.total_roundtrips += 1;
    Decision::new(ctx, Step::Resend(RoundReason::DataResponse), c)
}

/// After the person answered a communication module: store the answer, re-send.
pub fn after_answer(ctx: &LoopContext, counters: LoopCounters) -> Decision {
    let mut c = counters;
    if !can_resend(ctx, &c) {
        return Decision::new(ctx, Step::LimitReached(Limit::Roundtrips), c);
    }
    c.total_roundtrips += 1;
    Decision::new(ctx, Step::Resend(RoundReason::UserMessage), c)
}

/// After the person refused validation (the VALIDATION_CANCELLED message stays). A chat hands
/// over to the person; an automation, having nobody to wait for, tells the model and goes on.
pub fn after_refusal(ctx: &LoopContext, counters: LoopCounters) -> Decision {
    let mut c = counters;
    if !ctx.is_automation() {
        return Decision::new(ctx, Step::AwaitUser, c);
    }
    if !can_resend(ctx, &c) {
        return Decision::new(ctx, Step::LimitReached(Limit::Roundtrips), c);
    }
    c.total_roundtrips += 1;
    Decision::new(ctx, Step::Resend(RoundReason::DataResponse), c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ai_smartness_records::assistant::message::CommunicationModule;
    use ai_smartness_records::assistant::vocabulary::{ActionCommand, DataCommand};

    fn chat() -> LoopContext {
        LoopContext::new(SessionKind::Chat, &AILimitsConfig::default(), false).unwrap()
    }

    fn auto() -> LoopContext {
        LoopContext::new(SessionKind::Automation, &AILimitsConfig::default(), false).unwrap()
    }

    fn text(t: &str) -> AIMessage {
        AIMessage {
            pre_text: t.into(),
            ..Default::default()
        }
    }

    fn query() -> AIMessage {
        AIMessage {
            data_commands: Some(vec![DataCommand::ListRules]),
            ..text("q")
        }
    }

    fn act() -> AIMessage {
        AIMessage {
            action_commands: Some(vec![ActionCommand::ArchiveThread {
                thread_id: "t".into(),
            }]),
            ..text("a")
        }
    }

    fn module() -> AIMessage {
        AIMessage {
            communication_module: Some(CommunicationModule::Validation {
                message: "ok?".into(),
            }),
            ..text("m")
        }
    }

    fn done() -> AIMessage {
        AIMessage {
            completed: Some(true),
            ..text("done")
        }
    }

    fn counters(total: u32, data: u32, action: u32, format: u32) -> LoopCounters {
        LoopCounters {
            total_roundtrips: total,
            consecutive_data_queries: data,
            consecutive_action_retries: action,
            consecutive_format_errors: format,
        }
    }

    fn parsed(ctx: &LoopContext, m: &AIMessage, c: LoopCounters) -> Decision {
        decide(ctx, Reply::Parsed(m), c)
    }

    #[test]
    fn seed_sessions_do_not_run() {
        assert_eq!(
            LoopContext::new(SessionKind::Seed, &AILimitsConfig::default(), false),
            Err(LoopError::SeedNotRunnable)
        );
    }

    #[test]
    fn completed_ends_an_automation_first() {
        let d = parsed(&auto(), &done(), counters(3, 1, 0, 2));
        assert_eq!(d.step, Step::Complete);
        assert_eq!(d.end_reason, Some(SessionEndReason::Completed));
        assert_eq!(d.counters, counters(3, 1, 0, 2));
    }

    #[test]
    fn completed_is_ignored_in_a_chat() {
        let d = parsed(&chat(), &done(), LoopCounters::default());
        assert_eq!(d.step, Step::AwaitUser);
        assert_eq!(d.end_reason, None);
    }

    #[test]
    fn format_error_retries_with_the_fallback() {
        let err = AiMessageError::NoJson;
        let d = decide(
            &chat(),
            Reply::Invalid {
                raw: "hello",
                error: &err,
            },
            counters(1, 1, 0, 0),
        );
        match &d.step {
            Step::RetryFormat { fallback, feedback } => {
                assert_eq!(
                    fallback.as_ref().unwrap().pre_text,
                    "ai_response_invalid_format: hello"
                );
                assert!(feedback.contains("no JSON object found"));
            }
            other => panic!("{other:?}"),
        }
        // Format errors count, and do not reset the other streaks.
        assert_eq!(d.counters, counters(2, 1, 0, 1));
    }

    #[test]
    fn format_errors_give_up_at_the_limit() {
        let err = AiMessageError::NoJson;
        let r = Reply::Invalid {
            raw: "x",
            error: &err,
        };
        // Chat: 3 retries, the 4th bad reply gives up.
        let mut c = LoopCounters::default();
        for _ in 0..3 {
            let d = decide(&chat(), r, c);
            assert!(matches!(d.step, Step::RetryFormat { .. }));
            c = d.counters;
        }
        let d = decide(&chat(), r, c);
        assert!(matches!(&d.step, Step::GiveUp { fallback: Some(f) } if f.is_invalid_format()));
        assert_eq!(d.end_reason, None);
        // Automation: 5, and giving up ends the run with TIMEOUT.
        let d = decide(&auto(), r, counters(5, 0, 0, 5));
        assert!(matches!(d.step, Step::GiveUp { .. }));
        assert_eq!(d.end_reason, Some(SessionEndReason::Timeout));
        assert!(matches!(
            decide(&auto(), r, counters(4, 0, 0, 4)).step,
            Step::RetryFormat { .. }
        ));
    }

    #[test]
    fn a_good_reply_resets_the_format_streak() {
        let d = parsed(&chat(), &query(), counters(2, 0, 0, 2));
        assert_eq!(d.step, Step::RunData);
        assert_eq!(d.counters.consecutive_format_errors, 0);
    }

    #[test]
    fn communication_module_waits_in_a_chat_only() {
        let d = parsed(&chat(), &module(), counters(1, 2, 0, 1));
        assert_eq!(d.step, Step::AwaitAnswer);
        assert_eq!(d.counters, counters(1, 2, 0, 0));
        // In an automation the module is ignored: nothing else to do is a format error.
        let d = parsed(&auto(), &module(), LoopCounters::default());
        assert_eq!(
            d.step,
            Step::RetryFormat {
                fallback: None,
                feedback: AUTOMATION_IDLE_FEEDBACK.into()
            }
        );
        assert_eq!(d.counters, counters(1, 0, 0, 1));
    }

    #[test]
    fn after_answer_resends_and_counts_one_roundtrip() {
        let d = after_answer(&chat(), counters(2, 1, 1, 0));
        assert_eq!(d.step, Step::Resend(RoundReason::UserMessage));
        assert_eq!(d.counters, counters(3, 1, 1, 0));
        let d = after_answer(&chat(), counters(10, 0, 0, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::Roundtrips));
    }

    #[test]
    fn data_commands_count_and_reset_action_retries() {
        let d = parsed(&chat(), &query(), counters(0, 0, 2, 0));
        assert_eq!(d.step, Step::RunData);
        assert_eq!(d.counters, counters(1, 1, 0, 0));
    }

    #[test]
    fn data_query_limit_is_consecutive() {
        let mut c = LoopCounters::default();
        for _ in 0..3 {
            let d = parsed(&chat(), &query(), c);
            assert_eq!(d.step, Step::RunData);
            c = d.counters;
        }
        let d = parsed(&chat(), &query(), c);
        assert_eq!(d.step, Step::LimitReached(Limit::DataQueries));
        assert_eq!(d.end_reason, None);
        // In an automation the limit is 5, and ends the run.
        let d = parsed(&auto(), &query(), counters(5, 5, 0, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::DataQueries));
        assert_eq!(d.end_reason, Some(SessionEndReason::Timeout));
        assert_eq!(
            parsed(&auto(), &query(), counters(4, 4, 0, 0)).step,
            Step::RunData
        );
    }

    #[test]
    fn roundtrip_limit_stops_before_a_wasted_call() {
        let d = parsed(&chat(), &query(), counters(10, 0, 0, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::Roundtrips));
        assert_eq!(
            parsed(&chat(), &query(), counters(9, 0, 0, 0)).step,
            Step::RunData
        );
        let d = parsed(&auto(), &query(), counters(20, 0, 0, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::Roundtrips));
        assert_eq!(d.end_reason, Some(SessionEndReason::Timeout));
        // The reply within the limit is still acted on: completion at 20 completes.
        assert_eq!(
            parsed(&auto(), &done(), counters(20, 0, 0, 0)).step,
            Step::Complete
        );
        let err = AiMessageError::Empty;
        let d = decide(
            &chat(),
            Reply::Invalid {
                raw: "",
                error: &err,
            },
            counters(10, 0, 0, 0),
        );
        assert_eq!(d.step, Step::LimitReached(Limit::Roundtrips));
    }

    #[test]
    fn actions_need_validation_when_asked_in_a_chat_or_required() {
        let mut m = act();
        assert_eq!(
            parsed(&chat(), &m, LoopCounters::default()).step,
            Step::RunActions {
                needs_validation: false
            }
        );
        m.validation_request = Some(true);
        assert_eq!(
            parsed(&chat(), &m, LoopCounters::default()).step,
            Step::RunActions {
                needs_validation: true
            }
        );
        // Automations ignore the model's request...
        assert_eq!(
            parsed(&auto(), &m, LoopCounters::default()).step,
            Step::RunActions {
                needs_validation: false
            }
        );
        // ...but not the configuration's.
        let strict =
            LoopContext::new(SessionKind::Automation, &AILimitsConfig::default(), true).unwrap();
        assert_eq!(
            parsed(&strict, &act(), LoopCounters::default()).step,
            Step::RunActions {
                needs_validation: true
            }
        );
        // Deciding to run actions changes no counter yet.
        assert_eq!(
            parsed(&chat(), &act(), counters(1, 1, 1, 1)).counters,
            counters(1, 1, 1, 0)
        );
    }

    #[test]
    fn successful_actions_hand_over_in_a_chat() {
        let mut m = act();
        m.post_text = Some("Archived.".into());
        let d = after_actions(&chat(), &m, true, counters(2, 1, 1, 0));
        assert_eq!(d.step, Step::AwaitUser);
        assert_eq!(d.post_text.as_deref(), Some("Archived."));
        assert_eq!(d.counters, counters(2, 1, 1, 0));
    }

    #[test]
    fn keep_control_goes_on_and_resets_the_streaks() {
        let mut m = act();
        m.keep_control = Some(true);
        let d = after_actions(&chat(), &m, true, counters(2, 1, 1, 0));
        assert_eq!(d.step, Step::Resend(RoundReason::DataResponse));
        assert_eq!(d.counters, counters(3, 0, 0, 0));
        assert_eq!(d.post_text, None);
    }

    #[test]
    fn automations_always_go_on_after_success() {
        let d = after_actions(&auto(), &act(), true, counters(4, 2, 1, 0));
        assert_eq!(d.step, Step::Resend(RoundReason::DataResponse));
        assert_eq!(d.counters, counters(5, 0, 0, 0));
        let d = after_actions(&auto(), &act(), true, counters(20, 0, 0, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::Roundtrips));
        assert_eq!(d.end_reason, Some(SessionEndReason::Timeout));
    }

    #[test]
    fn failed_actions_retry_until_the_limit() {
        let d = after_actions(&chat(), &act(), false, counters(1, 2, 0, 0));
        assert_eq!(d.step, Step::Resend(RoundReason::DataResponse));
        assert_eq!(d.counters, counters(2, 0, 1, 0));
        let d = after_actions(&chat(), &act(), false, counters(4, 0, 3, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::ActionRetries));
        assert_eq!(d.post_text, None);
        let d = after_actions(&auto(), &act(), false, counters(4, 0, 5, 0));
        assert_eq!(d.step, Step::LimitReached(Limit::ActionRetries));
        assert_eq!(d.end_reason, Some(SessionEndReason::Timeout));
    }

    #[test]
    fn refusal_hands_over_in_a_chat_and_goes_on_in_an_automation() {
        assert_eq!(
            after_refusal(&chat(), counters(1, 0, 0, 0)).step,
            Step::AwaitUser
        );
        let d = after_refusal(&auto(), counters(1, 0, 0, 0));
        assert_eq!(d.step, Step::Resend(RoundReason::DataResponse));
        assert_eq!(d.counters.total_roundtrips, 2);
    }

    #[test]
    fn plain_text_ends_a_chat_round() {
        let d = parsed(
            &chat(),
            &text("Here is what I found."),
            counters(3, 2, 0, 1),
        );
        assert_eq!(d.step, Step::AwaitUser);
        assert_eq!(d.counters, counters(3, 2, 0, 0));
    }

    #[test]
    fn idle_automation_replies_count_as_format_errors() {
        let d = parsed(&auto(), &text("thinking"), counters(0, 0, 0, 4));
        assert!(matches!(d.step, Step::RetryFormat { fallback: None, .. }));
        assert_eq!(d.counters.consecutive_format_errors, 5);
        let d = parsed(&auto(), &text("thinking"), counters(5, 0, 0, 5));
        assert_eq!(d.step, Step::GiveUp { fallback: None });
        assert_eq!(d.end_reason, Some(SessionEndReason::Timeout));
    }

    #[test]
    fn a_whole_chat_round() {
        // query, query, actions with keepControl, then a text answer.
        let ctx = chat();
        let c = LoopCounters::default();
        let d1 = parsed(&ctx, &query(), c);
        let d2 = parsed(&ctx, &query(), d1.counters);
        assert_eq!(d2.counters, counters(2, 2, 0, 0));
        let mut m = act();
        m.keep_control = Some(true);
        let d3 = parsed(&ctx, &m, d2.counters);
        assert_eq!(
            d3.step,
            Step::RunActions {
                needs_validation: false
            }
        );
        let d4 = after_actions(&ctx, &m, true, d3.counters);
        assert_eq!(d4.counters, counters(3, 0, 0, 0));
        let d5 = parsed(&ctx, &text("done"), d4.counters);
        assert_eq!(d5.step, Step::AwaitUser);
    }

    #[test]
    fn limit_summaries_name_the_number() {
        let l = chat().limits();
        assert_eq!(
            Limit::DataQueries.summary(&l),
            "Limit reached: 3 data queries in a row. Answer with what you have."
        );
        assert_eq!(
            Limit::Roundtrips.summary(&l),
            "Limit reached: 10 automatic exchanges in this round."
        );
        assert!(Limit::FormatErrors.summary(&l).contains('3'));
        assert!(Limit::ActionRetries.summary(&auto().limits()).contains('5'));
    }
}
