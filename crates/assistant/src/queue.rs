//! The single active session and the memory queue, the scheduler tick
//! and the watchdog's inactivity test, as a pure state machine.
//!
//! Rules:
//! - One session is active at a time, CHAT or AUTOMATION.
//! - The queue holds only CHAT and MANUAL automations, at most one CHAT, always first.
//! - A CHAT asked for while another CHAT is active takes the slot at once; while an automation
//!   is active it waits first in the queue, replacing any CHAT already waiting.
//! - A MANUAL automation runs at once if the slot is free, else waits behind the queue.
//! - SCHEDULED automations never queue: the tick starts one only when the slot is free and the
//!   queue empty, after orphaned runs have been resumed.
//!
//! The queue lives in memory: after a restart, queued runs show up as orphans
//! (end reason none) and are resumed by the tick.

use crate::schedule::pick_due;
use ai_smartness_records::assistant::types::{
    AILimitsConfig, AISession, Automation, RoundReason, SessionEndReason, SessionKind,
};
use chrono::{DateTime, Utc};
use std::collections::VecDeque;

/// What kind of session holds the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActiveKind {
    /// A conversation.
    Chat,
    /// An automation run (manual, scheduled or resumed).
    Automation,
}

/// What kind of session waits in the queue (the only two that may).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueuedKind {
    /// A conversation: always first, at most one.
    Chat,
    /// A run a person asked for.
    ManualAutomation,
}

/// A session in the slot or the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<K> {
    /// The session's id.
    pub session_id: String,
    /// Its kind.
    pub kind: K,
}

/// The answer to a request for the slot (ACTIVATED / ALREADY_ACTIVE / QUEUED).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// The session now holds the slot.
    Activated {
        /// The CHAT that lost the slot to this one, if any (it is not ended, just inactive).
        displaced: Option<String>,
    },
    /// It already held the slot.
    AlreadyActive,
    /// It waits in the queue.
    Queued {
        /// 1-based place in the queue.
        position: usize,
        /// The CHAT it replaced in the queue, if any (no longer queued).
        replaced: Option<String>,
    },
}

/// Why a slot operation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueueError {
    /// Automations started by the scheduler need a free slot and an empty queue.
    #[error("cannot start automation {0}: the slot is busy or sessions are queued")]
    Busy(String),
    /// The session named is not the active one.
    #[error("session {0} is not the active session")]
    NotActive(String),
}

/// What the tick did or asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickAction {
    /// A session holds the slot: nothing to do.
    Busy,
    /// The head of the queue now holds the slot: run its round (MANUAL automations start with
    /// AUTOMATION_START; a CHAT goes on with its pending message, if any).
    ActivatedQueued(Entry<QueuedKind>),
    /// An orphaned automation run now holds the slot: resume its round with this reason
    /// (logged only; the model is not told).
    Resumed {
        /// The run.
        session_id: String,
        /// AUTOMATION_RESUME_ORPHAN, _NETWORK or _SUSPENDED.
        reason: RoundReason,
    },
    /// An automation is due: create its run for `scheduled_for`, then call
    /// [`SessionSlot::activate_automation`] with the new session's id.
    StartScheduled {
        /// The automation.
        automation_id: String,
        /// The scheduled time the run stands for.
        scheduled_for: DateTime<Utc>,
    },
    /// Nothing to run.
    Idle,
}

/// The slot and the queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSlot {
    /// The session running, if any.
    active: Option<Entry<ActiveKind>>,
    /// Sessions waiting, in order.
    queue: VecDeque<Entry<QueuedKind>>,
}

impl SessionSlot {
    /// An empty slot and queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// The active session.
    pub fn active(&self) -> Option<&Entry<ActiveKind>> {
        self.active.as_ref()
    }

    /// The queue, head first.
    pub fn queued(&self) -> impl Iterator<Item = &Entry<QueuedKind>> {
        self.queue.iter()
    }

    /// Whether nothing runs and nothing waits: the condition for scheduled runs.
    pub fn is_idle(&self) -> bool {
        self.active.is_none() && self.queue.is_empty()
    }

    fn is_active(&self, id: &str) -> bool {
        self.active.as_ref().is_some_and(|a| a.session_id == id)
    }

    fn position(&self, id: &str) -> Option<usize> {
        self.queue.iter().position(|e| e.session_id == id)
    }

    fn activate(&mut self, id: &str, kind: ActiveKind) {
        self.active = Some(Entry {
            session_id: id.to_string(),
            kind,
        });
    }

    /// A person opens or writes in a CHAT.
    pub fn request_chat(&mut self, id: &str) -> Control {
        if self.is_active(id) {
            return Control::AlreadyActive;
        }
        // A queued CHAT asked again keeps its place (first).
        if let Some(p) = self.position(id) {
            return Control::Queued {
                position: p + 1,
                replaced: None,
            };
        }
        let replaced = self.remove_queued_chat();
        match &self.active {
            None => {
                self.activate(id, ActiveKind::Chat);
                Control::Activated { displaced: None }
            }
            Some(a) if a.kind == ActiveKind::Chat => {
                let displaced = Some(a.session_id.clone());
                self.activate(id, ActiveKind::Chat);
                Control::Activated { displaced }
            }
            Some(_) => {
                self.queue.push_front(Entry {
                    session_id: id.to_string(),
                    kind: QueuedKind::Chat,
                });
                Control::Queued {
                    position: 1,
                    replaced,
                }
            }
        }
    }

    fn remove_queued_chat(&mut self) -> Option<String> {
        let p = self.queue.iter().position(|e| e.kind == QueuedKind::Chat)?;
        self.queue.remove(p).map(|e| e.session_id)
    }

    /// A person asks for an automation run (its session already created).
    pub fn request_manual(&mut self, id: &str) -> Control {
        if self.is_active(id) {
            return Control::AlreadyActive;
        }
        if let Some(p) = self.position(id) {
            return Control::Queued {
                position: p + 1,
                replaced: None,
            };
        }
        if self.is_idle() {
            self.activate(id, ActiveKind::Automation);
            return Control::Activated { displaced: None };
        }
        self.queue.push_back(Entry {
            session_id: id.to_string(),
            kind: QueuedKind::ManualAutomation,
        });
        Control::Queued {
            position: self.queue.len(),
            replaced: None,
        }
    }

    /// Starts a scheduled or resumed automation run: only when nothing runs and nothing waits.
    pub fn activate_automation(&mut self, id: &str) -> Result<(), QueueError> {
        if !self.is_idle() {
            return Err(QueueError::Busy(id.to_string()));
        }
        self.activate(id, ActiveKind::Automation);
        Ok(())
    }

    /// The active session ended (completed, stopped, paused, timed out, failed) or a CHAT was
    /// closed: the slot is free. Call [`SessionSlot::tick`] next, as the scheduler's
    /// `closeActiveSession()` does.
    pub fn close_active(&mut self, id: &str) -> Result<(), QueueError> {
        if !self.is_active(id) {
            return Err(QueueError::NotActive(id.to_string()));
        }
        self.active = None;
        Ok(())
    }

    /// Takes a session out of the queue (a person cancelled it); false if it was not queued.
    pub fn remove_queued(&mut self, id: &str) -> bool {
        match self.position(id) {
            Some(p) => self.queue.remove(p).is_some(),
            None => false,
        }
    }

    /// The scheduler tick: when the slot is free, the queue's head first,
    /// then orphaned runs (oldest first), then the most overdue scheduled automation.
    /// Orphans of automations that are missing, disabled or paused stay where they are.
    pub fn tick(
        &mut self,
        sessions: &[AISession],
        automations: &[Automation],
        now: DateTime<Utc>,
    ) -> TickAction {
        if self.active.is_some() {
            return TickAction::Busy;
        }
        if let Some(head) = self.queue.pop_front() {
            let kind = match head.kind {
                QueuedKind::Chat => ActiveKind::Chat,
                QueuedKind::ManualAutomation => ActiveKind::Automation,
            };
            self.activate(&head.session_id, kind);
            return TickAction::ActivatedQueued(head);
        }
        let runnable = |s: &AISession| {
            automations
                .iter()
                .any(|a| Some(&a.id) == s.automation_id.as_ref() && a.enabled && !a.paused)
        };
        let orphan = orphans(sessions)
            .into_iter()
            .filter_map(|id| sessions.iter().find(|s| s.id == id))
            .find(|s| runnable(s));
        if let Some(s) = orphan {
            self.activate(&s.id, ActiveKind::Automation);
            return TickAction::Resumed {
                session_id: s.id.clone(),
                reason: resume_reason(s.end_reason),
            };
        }
        match pick_due(automations, now) {
            Some((automation_id, scheduled_for)) => TickAction::StartScheduled {
                automation_id,
                scheduled_for,
            },
            None => TickAction::Idle,
        }
    }
}

/// Automation runs to resume ("Reprise sessions"): end reason none
/// (crashed), NETWORK_ERROR or SUSPENDED; oldest scheduled time first, then id. Call it when no
/// session is active, since the active run also has no end reason.
pub fn orphans(sessions: &[AISession]) -> Vec<String> {
    let mut found: Vec<&AISession> = sessions
        .iter()
        .filter(|s| s.kind == SessionKind::Automation)
        .filter(|s| s.end_reason.is_none_or(SessionEndReason::is_resumable))
        .collect();
    found.sort_by(|a, b| {
        a.period_reference()
            .cmp(&b.period_reference())
            .then_with(|| a.id.cmp(&b.id))
    });
    found.into_iter().map(|s| s.id.clone()).collect()
}

/// The round reason logged when resuming a run that ended this way.
pub fn resume_reason(end_reason: Option<SessionEndReason>) -> RoundReason {
    match end_reason {
        Some(SessionEndReason::NetworkError) => RoundReason::AutomationResumeNetwork,
        Some(SessionEndReason::Suspended) => RoundReason::AutomationResumeSuspended,
        _ => RoundReason::AutomationResumeOrphan,
    }
}

/// The watchdog's test: an automation run, not ended and not waiting for
/// the network, idle for longer than the limit, is to be stopped with TIMEOUT. Waiting for a
/// person's validation counts as idle: a forgotten approval must not hold the slot forever.
/// CHAT sessions never time out (a person closes them).
pub fn should_stop_inactive(
    session: &AISession,
    now: DateTime<Utc>,
    limits: &AILimitsConfig,
) -> bool {
    if session.kind != SessionKind::Automation
        || session.is_ended()
        || session.is_waiting_for_network
    {
        return false;
    }
    let idle = now.signed_duration_since(session.updated_at);
    idle.num_seconds() > i64::try_from(limits.automation_max_inactivity_secs).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{Duration, TimeZone};

    fn at(h: u32, m: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2025, 3, 10, h, m, 0).unwrap()
    }

    fn ids(slot: &SessionSlot) -> Vec<&str> {
        slot.queued().map(|e| e.session_id.as_str()).collect()
    }

    fn active(slot: &SessionSlot) -> Option<&str> {
        slot.active().map(|e| e.session_id.as_str())
    }

    fn run(id: &str, automation: &str, end: Option<SessionEndReason>, h: u32) -> AISession {
        let mut s = AISession::new(id, id, SessionKind::Automation, at(h, 0));
        s.automation_id = Some(automation.into());
        s.scheduled_execution_time = Some(at(h, 0));
        s.end_reason = end;
        s
    }

    fn automation(id: &str, schedule: Option<&str>) -> Automation {
        Automation {
            id: id.into(),
            name: id.into(),
            prompt: "p".into(),
            seed_session_id: None,
            schedule: schedule.map(str::to_string),
            timezone: None,
            enabled: true,
            paused: false,
            created_at: at(0, 0),
            last_trigger: None,
            last_execution_at: None,
            last_scheduled_time: None,
            require_validation: false,
        }
    }

    #[test]
    fn chat_on_a_free_slot_activates() {
        let mut s = SessionSlot::new();
        assert_eq!(s.request_chat("c1"), Control::Activated { displaced: None });
        assert_eq!(s.request_chat("c1"), Control::AlreadyActive);
        assert_eq!(s.active().unwrap().kind, ActiveKind::Chat);
    }

    #[test]
    fn chat_switches_from_another_chat_at_once() {
        let mut s = SessionSlot::new();
        s.request_chat("c1");
        assert_eq!(
            s.request_chat("c2"),
            Control::Activated {
                displaced: Some("c1".into())
            }
        );
        assert_eq!(active(&s), Some("c2"));
        assert!(ids(&s).is_empty());
    }

    #[test]
    fn chat_waits_first_behind_an_automation_and_replaces_a_queued_chat() {
        let mut s = SessionSlot::new();
        s.request_manual("m1");
        assert_eq!(
            s.request_manual("m2"),
            Control::Queued {
                position: 1,
                replaced: None
            }
        );
        assert_eq!(
            s.request_chat("c1"),
            Control::Queued {
                position: 1,
                replaced: None
            }
        );
        assert_eq!(ids(&s), ["c1", "m2"]);
        assert_eq!(
            s.request_chat("c2"),
            Control::Queued {
                position: 1,
                replaced: Some("c1".into())
            }
        );
        assert_eq!(ids(&s), ["c2", "m2"]);
        // Asking again for the queued chat keeps it first.
        assert_eq!(
            s.request_chat("c2"),
            Control::Queued {
                position: 1,
                replaced: None
            }
        );
        assert_eq!(ids(&s), ["c2", "m2"]);
    }

    #[test]
    fn manual_runs_queue_fifo_behind_the_chat() {
        let mut s = SessionSlot::new();
        s.request_chat("c1");
        assert_eq!(
            s.request_manual("m1"),
            Control::Queued {
                position: 1,
                replaced: None
            }
        );
        assert_eq!(
            s.request_manual("m2"),
            Control::Queued {
                position: 2,
                replaced: None
            }
        );
        assert_eq!(
            s.request_manual("m1"),
            Control::Queued {
                position: 1,
                replaced: None
            }
        );
        assert_eq!(ids(&s), ["m1", "m2"]);
    }

    #[test]
    fn manual_run_on_a_free_slot_activates() {
        let mut s = SessionSlot::new();
        assert_eq!(
            s.request_manual("m1"),
            Control::Activated { displaced: None }
        );
        assert_eq!(s.request_manual("m1"), Control::AlreadyActive);
        assert_eq!(s.active().unwrap().kind, ActiveKind::Automation);
    }

    #[test]
    fn a_queued_chat_takes_over_then_yields_to_a_newer_chat() {
        let mut s = SessionSlot::new();
        s.request_manual("m1");
        s.request_chat("c1");
        s.close_active("m1").unwrap();
        assert_eq!(
            s.tick(&[], &[], at(1, 0)),
            TickAction::ActivatedQueued(Entry {
                session_id: "c1".into(),
                kind: QueuedKind::Chat
            })
        );
        assert_eq!(
            s.request_chat("c2"),
            Control::Activated {
                displaced: Some("c1".into())
            }
        );
        assert!(ids(&s).is_empty());
    }

    #[test]
    fn scheduled_runs_need_an_idle_slot() {
        let mut s = SessionSlot::new();
        s.request_chat("c1");
        assert_eq!(
            s.activate_automation("a1"),
            Err(QueueError::Busy("a1".into()))
        );
        s.close_active("c1").unwrap();
        s.activate_automation("a1").unwrap();
        assert_eq!(active(&s), Some("a1"));
        assert_eq!(
            QueueError::Busy("x".into()).to_string(),
            "cannot start automation x: the slot is busy or sessions are queued"
        );
    }

    #[test]
    fn close_checks_the_id() {
        let mut s = SessionSlot::new();
        assert_eq!(s.close_active("x"), Err(QueueError::NotActive("x".into())));
        s.request_chat("c1");
        assert_eq!(
            s.close_active("c2"),
            Err(QueueError::NotActive("c2".into()))
        );
        s.close_active("c1").unwrap();
        assert!(s.is_idle());
    }

    #[test]
    fn ending_a_session_hands_the_slot_to_the_queue_in_order() {
        let mut s = SessionSlot::new();
        s.request_manual("m1");
        s.request_manual("m2");
        s.request_chat("c1");
        s.request_manual("m3");
        assert_eq!(ids(&s), ["c1", "m2", "m3"]);
        assert_eq!(s.tick(&[], &[], at(1, 0)), TickAction::Busy);
        let mut order = vec![];
        let mut current = "m1".to_string();
        for _ in 0..3 {
            s.close_active(&current).unwrap();
            match s.tick(&[], &[], at(1, 0)) {
                TickAction::ActivatedQueued(e) => {
                    order.push((e.session_id.clone(), e.kind));
                    current = e.session_id;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            order,
            [
                ("c1".to_string(), QueuedKind::Chat),
                ("m2".to_string(), QueuedKind::ManualAutomation),
                ("m3".to_string(), QueuedKind::ManualAutomation)
            ]
        );
        assert_eq!(s.active().unwrap().kind, ActiveKind::Automation);
        s.close_active("m3").unwrap();
        assert_eq!(s.tick(&[], &[], at(1, 0)), TickAction::Idle);
    }

    #[test]
    fn removing_from_the_queue() {
        let mut s = SessionSlot::new();
        s.request_manual("m1");
        s.request_manual("m2");
        assert!(s.remove_queued("m2"));
        assert!(!s.remove_queued("m2"));
        assert!(!s.remove_queued("m1"));
        assert!(ids(&s).is_empty());
    }

    #[test]
    fn orphans_are_automation_runs_that_can_resume() {
        let mut chat = AISession::new("chat", "c", SessionKind::Chat, at(0, 0));
        chat.end_reason = None;
        let seed = AISession::new("seed", "s", SessionKind::Seed, at(0, 0));
        let sessions = vec![
            chat,
            seed,
            run("crashed", "a", None, 5),
            run("net", "a", Some(SessionEndReason::NetworkError), 3),
            run("paused", "a", Some(SessionEndReason::Suspended), 4),
            run("done", "a", Some(SessionEndReason::Completed), 1),
            run("stopped", "a", Some(SessionEndReason::Cancelled), 1),
            run("timeout", "a", Some(SessionEndReason::Timeout), 1),
            run("error", "a", Some(SessionEndReason::Error), 1),
        ];
        assert_eq!(orphans(&sessions), ["net", "paused", "crashed"]);
    }

    #[test]
    fn resume_reasons() {
        assert_eq!(resume_reason(None), RoundReason::AutomationResumeOrphan);
        assert_eq!(
            resume_reason(Some(SessionEndReason::NetworkError)),
            RoundReason::AutomationResumeNetwork
        );
        assert_eq!(
            resume_reason(Some(SessionEndReason::Suspended)),
            RoundReason::AutomationResumeSuspended
        );
    }

    #[test]
    fn tick_resumes_orphans_before_scheduling() {
        let autos = vec![automation("a", Some("0 * * * *"))];
        let sessions = vec![run("r1", "a", Some(SessionEndReason::Suspended), 1)];
        let mut s = SessionSlot::new();
        assert_eq!(
            s.tick(&sessions, &autos, at(5, 30)),
            TickAction::Resumed {
                session_id: "r1".into(),
                reason: RoundReason::AutomationResumeSuspended
            }
        );
        assert_eq!(active(&s), Some("r1"));
        assert_eq!(s.tick(&sessions, &autos, at(5, 30)), TickAction::Busy);
    }

    #[test]
    fn tick_skips_orphans_of_paused_disabled_or_missing_automations() {
        let mut paused = automation("p", None);
        paused.paused = true;
        let mut off = automation("o", None);
        off.enabled = false;
        let autos = vec![paused, off];
        let sessions = vec![
            run("r1", "p", None, 1),
            run("r2", "o", None, 1),
            run("r3", "gone", None, 1),
        ];
        let mut s = SessionSlot::new();
        assert_eq!(s.tick(&sessions, &autos, at(5, 0)), TickAction::Idle);
        assert!(s.is_idle());
    }

    #[test]
    fn tick_starts_a_due_automation_when_idle() {
        let autos = vec![automation("a", Some("0 * * * *"))];
        let mut s = SessionSlot::new();
        assert_eq!(
            s.tick(&[], &autos, at(5, 30)),
            TickAction::StartScheduled {
                automation_id: "a".into(),
                scheduled_for: at(5, 0)
            }
        );
        // The tick does not take the slot itself: the caller creates the run, then activates.
        assert!(s.is_idle());
        s.activate_automation("run-a-5").unwrap();
        assert_eq!(s.tick(&[], &autos, at(5, 30)), TickAction::Busy);
    }

    #[test]
    fn tick_serves_the_queue_before_orphans_and_schedules() {
        let autos = vec![automation("a", Some("* * * * *"))];
        let sessions = vec![run("r1", "a", None, 1)];
        let mut s = SessionSlot::new();
        s.request_manual("m1");
        s.request_manual("m2");
        s.close_active("m1").unwrap();
        assert!(
            matches!(s.tick(&sessions, &autos, at(5, 0)), TickAction::ActivatedQueued(e) if e.session_id == "m2")
        );
    }

    #[test]
    fn watchdog_times_out_idle_automation_runs_only() {
        let limits = AILimitsConfig::default();
        let mut r = run("r", "a", None, 1);
        r.updated_at = at(1, 0);
        assert!(!should_stop_inactive(&r, at(1, 10), &limits));
        assert!(should_stop_inactive(
            &r,
            at(1, 10) + Duration::seconds(1),
            &limits
        ));
        r.is_waiting_for_network = true;
        assert!(!should_stop_inactive(&r, at(3, 0), &limits));
        r.is_waiting_for_network = false;
        r.end_reason = Some(SessionEndReason::Suspended);
        assert!(!should_stop_inactive(&r, at(3, 0), &limits));
        let chat = AISession::new("c", "c", SessionKind::Chat, at(0, 0));
        assert!(!should_stop_inactive(&chat, at(23, 0), &limits));
    }
}
