//! Exponential backoff with jitter for retryable LLM errors, honouring the provider's
//! `retry-after` (capped, so one header cannot park the daemon for an hour).

use crate::LlmError;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many times, and how far apart, a call is tried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Tries in all, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Wait before the first retry, before jitter.
    pub base_delay: Duration,
    /// Each later wait is this many times the previous one.
    pub factor: f64,
    /// No computed wait exceeds this.
    pub max_delay: Duration,
    /// A provider's `retry-after` is honoured up to this.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            factor: 2.0,
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// One try, no retry.
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// The backoff before retry number `retry` (1 for the first), before jitter.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .factor
            .max(1.0)
            .powi(retry.saturating_sub(1).min(64) as i32);
        let secs = (self.base_delay.as_secs_f64() * exp).min(self.max_delay.as_secs_f64());
        Duration::from_secs_f64(secs.max(0.0))
    }

    /// The wait before retry number `retry` after `err`: the provider's `retry-after` when it
    /// gave one (capped), else the backoff with "equal jitter" (half fixed, half random), so
    /// clients that failed together do not retry together.
    pub fn delay_for(&self, retry: u32, err: &LlmError) -> Duration {
        if let Some(after) = err.retry_after {
            return after.min(self.max_retry_after);
        }
        let b = self.backoff(retry);
        b / 2 + b.mul_f64(jitter() / 2.0)
    }
}

/// What a retry is about to do, for logs.
#[derive(Debug)]
pub struct RetryNotice<'a> {
    /// The attempt that failed (1 for the first).
    pub attempt: u32,
    /// Why it failed.
    pub error: &'a LlmError,
    /// The wait before the next attempt.
    pub wait: Duration,
}

/// Runs `op` (given the attempt number, from 1) until it succeeds, fails with an error that is
/// not retryable, or `policy.max_attempts` are spent.
pub async fn with_retries<T, Op, Fut>(policy: &RetryPolicy, op: Op) -> Result<T, LlmError>
where
    Op: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    with_retries_if(policy, op, LlmError::retryable, |_| {}).await
}

/// [`with_retries`] with the retry decision and a notice before each wait.
pub async fn with_retries_if<T, Op, Fut, P, N>(
    policy: &RetryPolicy,
    mut op: Op,
    retry_if: P,
    mut on_retry: N,
) -> Result<T, LlmError>
where
    Op: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
    P: Fn(&LlmError) -> bool,
    N: FnMut(&RetryNotice<'_>),
{
    let mut attempt = 1;
    loop {
        match op(attempt).await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < policy.max_attempts.max(1) && retry_if(&e) => {
                let wait = policy.delay_for(attempt, &e);
                on_retry(&RetryNotice {
                    attempt,
                    error: &e,
                    wait,
                });
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// A number in [0, 1): clock nanos and a counter through splitmix64. Jitter needs spread, not
/// cryptography, so no `rand`.
fn jitter() -> f64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = nanos
        ^ COUNTER
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .rotate_left(17);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use std::sync::atomic::AtomicU32;
    use tokio::time::Instant;

    fn err(kind: ErrorKind) -> LlmError {
        LlmError::new(kind, "x")
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff(1), Duration::from_millis(500));
        assert_eq!(p.backoff(2), Duration::from_secs(1));
        assert_eq!(p.backoff(3), Duration::from_secs(2));
        assert_eq!(p.backoff(10), Duration::from_secs(30));
        assert_eq!(p.backoff(1000), Duration::from_secs(30));
        for retry in 1..8 {
            for _ in 0..50 {
                let d = p.delay_for(retry, &err(ErrorKind::ServerError));
                assert!(d >= p.backoff(retry) / 2 && d <= p.backoff(retry), "{d:?}");
            }
        }
        let mut e = err(ErrorKind::RateLimit);
        e.retry_after = Some(Duration::from_secs(3));
        assert_eq!(p.delay_for(1, &e), Duration::from_secs(3));
        e.retry_after = Some(Duration::from_secs(3600));
        assert_eq!(p.delay_for(1, &e), Duration::from_secs(60));
    }

    #[test]
    fn jitter_spreads() {
        let v: Vec<f64> = (0..200).map(|_| jitter()).collect();
        assert!(v.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(v.iter().any(|x| *x < 0.3) && v.iter().any(|x| *x > 0.7));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_retryable_errors_with_backoff() {
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let mut waits = Vec::new();
        let r = with_retries_if(
            &RetryPolicy::default(),
            |attempt| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    if attempt < 3 {
                        Err(err(ErrorKind::ServerError))
                    } else {
                        Ok(attempt)
                    }
                }
            },
            LlmError::retryable,
            |n| waits.push((n.attempt, n.wait)),
        )
        .await;
        assert_eq!(r, Ok(3));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(waits.len(), 2);
        let slept = start.elapsed();
        let expected: Duration = waits.iter().map(|w| w.1).sum();
        assert!(slept >= expected && slept < expected + Duration::from_millis(50));
        assert!(
            waits[0].1 >= Duration::from_millis(250) && waits[0].1 <= Duration::from_millis(500)
        );
        assert!(waits[1].1 >= Duration::from_millis(500) && waits[1].1 <= Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_attempts_and_honours_retry_after() {
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let r: Result<(), _> = with_retries(&RetryPolicy::default(), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async {
                let mut e = err(ErrorKind::RateLimit);
                e.retry_after = Some(Duration::from_secs(5));
                Err(e)
            }
        })
        .await;
        assert_eq!(r.unwrap_err().kind, ErrorKind::RateLimit);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let slept = start.elapsed();
        assert!(slept >= Duration::from_secs(10) && slept < Duration::from_millis(10_100));
    }

    #[tokio::test(start_paused = true)]
    async fn does_not_retry_what_cannot_succeed() {
        for kind in [
            ErrorKind::AuthError,
            ErrorKind::ContextLength,
            ErrorKind::ContentFilter,
            ErrorKind::Internal,
            ErrorKind::BudgetExceeded,
        ] {
            let calls = AtomicU32::new(0);
            let r: Result<(), _> = with_retries(&RetryPolicy::default(), |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move { Err(err(kind)) }
            })
            .await;
            assert_eq!(r.unwrap_err().kind, kind);
            assert_eq!(calls.load(Ordering::SeqCst), 1, "{kind}");
        }
        let calls = AtomicU32::new(0);
        let _: Result<(), _> = with_retries(&RetryPolicy::none(), |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err(err(ErrorKind::Network)) }
        })
        .await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
