//! The listener: accepts connections within the limits of [`crate::connections`], one task per
//! connection ([`crate::server`]). Accept errors (out of file descriptors, say) back off
//! exponentially and are logged once per burst, not once per attempt.

use crate::app::Daemon;
use crate::connections::Connections;
use interprocess::local_socket::tokio::Listener;
use interprocess::local_socket::traits::tokio::Listener as _;
use std::sync::Arc;
use std::time::Duration;

/// Accepts connections until shutdown, each handled by [`super::server::handle_connection`].
pub async fn listen(daemon: Daemon, listener: Listener, connections: Arc<Connections>) {
    let mut shutdown = daemon.life().subscribe_shutdown();
    let mut failures = AcceptFailures::default();
    loop {
        let permit = tokio::select! {
            p = connections.reserve() => p,
            _ = shutdown.recv() => break,
        };
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.recv() => break,
        };
        match accepted {
            Ok(stream) => {
                failures.succeeded();
                let registration = connections.register(permit);
                let d = daemon.clone();
                daemon.life().spawn(async move {
                    if let Err(e) = super::server::handle_connection(d, stream, registration).await
                    {
                        tracing::debug!("connection ended: {e}");
                    }
                });
            }
            Err(e) => {
                drop(permit);
                let pause = failures.failed(&e);
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = shutdown.recv() => break,
                }
            }
        }
    }
}

/// Accept errors in a row: logged once when a burst starts and once when it ends, with a pause
/// that doubles up to a second in between.
#[derive(Default)]
struct AcceptFailures {
    in_a_row: u32,
    first_error: Option<String>,
}

impl AcceptFailures {
    fn failed(&mut self, e: &std::io::Error) -> Duration {
        if self.in_a_row == 0 {
            tracing::warn!("accepting connections fails: {e}; backing off");
            self.first_error = Some(e.to_string());
        }
        self.in_a_row += 1;
        Duration::from_millis(10u64 << self.in_a_row.min(7).saturating_sub(1))
            .min(Duration::from_secs(1))
    }

    fn succeeded(&mut self) {
        if self.in_a_row > 0 {
            tracing::warn!(
                "accepting connections works again after {} failures ({})",
                self.in_a_row,
                self.first_error.take().unwrap_or_default()
            );
            self.in_a_row = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_failures_back_off_up_to_a_second() {
        let mut f = AcceptFailures::default();
        let e = std::io::Error::other("EMFILE");
        let pauses: Vec<u64> = (0..10).map(|_| f.failed(&e).as_millis() as u64).collect();
        assert_eq!(&pauses[..4], &[10, 20, 40, 80]);
        assert_eq!(*pauses.last().unwrap(), 640);
        f.succeeded();
        assert_eq!(f.failed(&e).as_millis(), 10);
    }
}
