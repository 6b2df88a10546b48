//! What clients can make the daemon hold, and the table of open connections that keeps it
//! bounded (the listener admits by it, each connection's handler registers in it):
//!
//! - **Connections**: at most [`Limits::max_connections`] at once, sized below the process's file
//!   limit so that accepting can never exhaust it. When every slot is taken, the connection idle
//!   longest (waiting for a request, not being answered) is closed to make room: a hook's
//!   request, which arrives, is answered and leaves within milliseconds, is never starved by
//!   connections that sit there.
//! - **Streams** (`ai watch`, a followed chat or run) are long-lived by design: at most
//!   [`Limits::max_streams`], never evicted.
//! - **Time**: a connection that sends nothing for [`Limits::idle_timeout`] is closed, and a
//!   request must arrive whole within [`Limits::frame_timeout`] of its first byte.
//! - **Memory**: the bytes of unfinished requests across all connections come out of one budget
//!   ([`Limits::buffered_bytes`]); a connection that would exceed it gets an error and is
//!   closed. Per request the frame limit still applies.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Descriptors kept for everything but client connections: the store's files, logs, the
/// journal, the model, LLM and workflow subprocesses.
const RESERVED_FDS: u64 = 128;

/// Bounds on what clients can make the daemon hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Of those, streaming ones (watch, follow).
    pub max_streams: usize,
    /// A connection that sends nothing for this long is closed.
    pub idle_timeout: Duration,
    /// A request must arrive whole within this after its first byte.
    pub frame_timeout: Duration,
    /// Bytes of unfinished requests held across all connections.
    pub buffered_bytes: usize,
    /// The dashboard's connections at once: from the same file budget, beside these (never
    /// taken from them, so hooks are never starved by the dashboard's port).
    pub dashboard_connections: usize,
}

impl Limits {
    /// A local daemon serves a handful of hooks and CLI calls at a time: 256 connections is
    /// plenty, and fewer when the file limit is low (half of what it leaves once
    /// [`RESERVED_FDS`] are set aside). The dashboard, a page or two in a browser, gets an
    /// eighth of it, at most 64: whatever reaches its port, the socket's connections, the
    /// reserved descriptors and the dashboard's together stay below the file limit.
    pub fn for_fd_limit(fd_limit: u64) -> Limits {
        let room = fd_limit.saturating_sub(RESERVED_FDS);
        let max_connections = (room / 2).clamp(8, 256) as usize;
        Limits {
            max_connections,
            max_streams: (max_connections / 8).max(2),
            idle_timeout: Duration::from_secs(30),
            frame_timeout: Duration::from_secs(10),
            buffered_bytes: 32 << 20,
            dashboard_connections: (room / 8).clamp(4, 64) as usize,
        }
    }

    /// What the dashboard's server may hold.
    pub fn dashboard(&self) -> ai_smartness_dashboard::Limits {
        ai_smartness_dashboard::Limits {
            max_connections: self.dashboard_connections,
            ..ai_smartness_dashboard::Limits::default()
        }
    }

    /// Raises the soft file limit to the hard one (a daemon should not stop at a shell's
    /// default) and sizes the limits on the result.
    pub fn for_this_process() -> Limits {
        Limits::for_fd_limit(raise_fd_limit())
    }
}

/// Windows has no per-process descriptor limit of this kind (handles run to millions): the
/// connection limits are those of a generous Unix limit.
#[cfg(windows)]
fn raise_fd_limit() -> u64 {
    4096
}

/// The soft `RLIMIT_NOFILE` after raising it to the hard limit (or the soft one when that fails).
#[cfg(unix)]
fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read and write the struct given, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
    }
    lim.rlim_cur
}

/// What a connection is doing, for choosing which one to close when all slots are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Waiting for (or receiving) a request: may be closed to make room.
    Waiting,
    /// A request is being answered: never interrupted.
    Answering,
    /// Streaming events to a follower: never evicted (their number is bounded instead).
    Streaming,
}

struct Slot {
    activity: Activity,
    last_active: Instant,
    /// Wakes the connection's task to close it.
    close: Arc<Notify>,
}

/// The open connections; shared by the listener and every connection.
pub struct Connections {
    limits: Limits,
    slots: Mutex<HashMap<u64, Slot>>,
    permits: Arc<Semaphore>,
    /// Bytes of unfinished requests, as permits.
    buffer_budget: Arc<Semaphore>,
    next_id: AtomicU64,
    /// Set when buffered bytes or open connections went high: memory is handed back once
    /// they are all gone.
    went_high: std::sync::atomic::AtomicBool,
}

impl Connections {
    pub fn new(limits: Limits) -> Arc<Connections> {
        Arc::new(Connections {
            limits,
            slots: Mutex::new(HashMap::new()),
            permits: Arc::new(Semaphore::new(limits.max_connections)),
            buffer_budget: Arc::new(Semaphore::new(limits.buffered_bytes)),
            next_id: AtomicU64::new(1),
            went_high: Default::default(),
        })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a free slot, closing the connection idle longest when none is free.
    pub(crate) async fn reserve(self: &Arc<Self>) -> OwnedSemaphorePermit {
        loop {
            if let Ok(p) = Arc::clone(&self.permits).try_acquire_owned() {
                return p;
            }
            if !self.evict_idlest() {
                // Every connection is busy answering or streaming: wait for one to end.
                return Arc::clone(&self.permits)
                    .acquire_owned()
                    .await
                    .expect("the connection semaphore is never closed");
            }
            // The evicted connection releases its permit as its task ends.
            match tokio::time::timeout(
                Duration::from_millis(100),
                Arc::clone(&self.permits).acquire_owned(),
            )
            .await
            {
                Ok(p) => return p.expect("the connection semaphore is never closed"),
                Err(_) => continue,
            }
        }
    }

    /// Asks the connection waiting longest to close; false when none is waiting.
    fn evict_idlest(&self) -> bool {
        let slots = self.lock();
        let idlest = slots
            .values()
            .filter(|s| s.activity == Activity::Waiting)
            .min_by_key(|s| s.last_active);
        match idlest {
            Some(s) => {
                s.close.notify_one();
                true
            }
            None => false,
        }
    }

    pub(crate) fn register(self: &Arc<Self>, permit: OwnedSemaphorePermit) -> Registration {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        let mut slots = self.lock();
        if slots.len() >= self.limits.max_connections / 4 {
            self.went_high.store(true, Ordering::Relaxed);
        }
        slots.insert(
            id,
            Slot {
                activity: Activity::Waiting,
                last_active: Instant::now(),
                close: Arc::clone(&close),
            },
        );
        drop(slots);
        Registration {
            id,
            connections: Arc::clone(self),
            close,
            _permit: permit,
        }
    }

    /// Bytes of unfinished requests may grow by `bytes`: a reservation, or `None` when the
    /// daemon already holds its budget of them.
    pub fn reserve_buffer(&self, bytes: usize) -> Option<OwnedSemaphorePermit> {
        let bytes = u32::try_from(bytes).ok()?;
        let permit = Arc::clone(&self.buffer_budget)
            .try_acquire_many_owned(bytes)
            .ok()?;
        if self.buffer_budget.available_permits() < self.limits.buffered_bytes / 2 {
            self.went_high.store(true, Ordering::Relaxed);
        }
        Some(permit)
    }

    /// Called when a connection ends: once the connections of a burst (many at once, or much
    /// buffered) are all gone, the freed heap is handed back to the system (glibc keeps it
    /// otherwise).
    fn after_close(&self, open_now: usize) {
        if open_now <= 1
            && self.buffer_budget.available_permits() == self.limits.buffered_bytes
            && self.went_high.swap(false, Ordering::Relaxed)
        {
            tracing::debug!("unfinished requests all released: handing freed memory back");
            tokio::task::spawn_blocking(super::release_free_memory);
        }
    }
}

#[cfg(test)]
impl Connections {
    pub async fn register_for_tests(self: &Arc<Self>) -> Registration {
        let permit = self.reserve().await;
        self.register(permit)
    }
}

/// A connection's place in [`Connections`]; frees it when dropped.
pub struct Registration {
    id: u64,
    connections: Arc<Connections>,
    close: Arc<Notify>,
    _permit: OwnedSemaphorePermit,
}

impl Registration {
    /// Records what the connection does now (and that it is active).
    pub fn set(&self, activity: Activity) {
        if let Some(s) = self.connections.lock().get_mut(&self.id) {
            s.activity = activity;
            s.last_active = Instant::now();
        }
    }

    /// Marks the connection streaming, if the stream limit allows; false otherwise.
    pub fn start_streaming(&self) -> bool {
        let mut slots = self.connections.lock();
        let streams = slots
            .values()
            .filter(|s| s.activity == Activity::Streaming)
            .count();
        if streams >= self.connections.limits.max_streams {
            return false;
        }
        if let Some(s) = slots.get_mut(&self.id) {
            s.activity = Activity::Streaming;
            s.last_active = Instant::now();
        }
        true
    }

    /// Resolves when the listener asks this connection to close.
    pub async fn closed(&self) {
        self.close.notified().await
    }

    pub fn connections(&self) -> &Arc<Connections> {
        &self.connections
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let open_now = {
            let mut slots = self.connections.lock();
            slots.remove(&self.id);
            slots.len()
        };
        self.connections.after_close(open_now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_stay_below_the_file_limit() {
        assert_eq!(Limits::for_fd_limit(1024).max_connections, 256);
        assert_eq!(Limits::for_fd_limit(256).max_connections, 64);
        assert_eq!(Limits::for_fd_limit(64).max_connections, 8);
        assert!(Limits::for_fd_limit(1 << 20).max_connections <= 256);
        // The socket's, the dashboard's and the reserved descriptors fit in the limit.
        for fds in [64, 256, 1024, 4096] {
            let l = Limits::for_fd_limit(fds);
            assert!(
                (l.max_connections + l.dashboard_connections) as u64 + RESERVED_FDS
                    <= fds.max(RESERVED_FDS + 16),
                "{fds}: {l:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_full_table_closes_the_connection_waiting_longest() {
        let limits = Limits {
            max_connections: 2,
            ..Limits::for_fd_limit(1024)
        };
        let c = Connections::new(limits);
        let first = c.register(c.reserve().await);
        let second = c.register(c.reserve().await);
        second.set(Activity::Answering);
        // The third waits for a slot: the first (waiting) is asked to close; the second
        // (answering) is left alone.
        let c2 = Arc::clone(&c);
        let third = tokio::spawn(async move { c2.reserve().await });
        first.closed().await;
        drop(first);
        let permit = third.await.unwrap();
        assert_eq!(c.open(), 1);
        drop(permit);
        drop(second);
        assert_eq!(c.open(), 0);
    }

    #[test]
    fn the_buffer_budget_is_shared_by_all_connections() {
        let limits = Limits {
            buffered_bytes: 1000,
            ..Limits::for_fd_limit(1024)
        };
        let c = Connections::new(limits);
        let a = c.reserve_buffer(600).unwrap();
        assert!(c.reserve_buffer(600).is_none());
        drop(a);
        assert!(c.reserve_buffer(600).is_some());
    }
}
