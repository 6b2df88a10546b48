//! A real PostgreSQL with pgvector for a test (`ai_smartness_testkit::postgres`), with a password
//! (scram) so the tests see how ours is found.
//!
//! Without the server the test reports a skip, except under CI (`CI` set), where it fails.

use crate::harness::in_ci;
use std::process::Command;

use ai_smartness_testkit::postgres as pg_cluster;

/// The password the test cluster's `postgres` role has.
pub const PASSWORD: &str = "team-pw-7f3a9c1e";

pub struct TestPostgres(pg_cluster::Cluster);

impl TestPostgres {
    /// A running cluster, or `None` (the test skips) when the server is not installed.
    pub fn start_or_skip() -> Option<TestPostgres> {
        let Some(home) = pg_cluster::installed() else {
            assert!(
                !in_ci(),
                "PostgreSQL is missing and CI is set: CI must test the team store \
                 (scripts/fetch-postgres.sh fetches it)"
            );
            ai_smartness_testkit::record("no PostgreSQL here (run scripts/fetch-postgres.sh)");
            return None;
        };
        Some(TestPostgres(pg_cluster::Cluster::start(
            &home,
            Some(PASSWORD),
            "",
        )))
    }

    /// A running cluster of a server built with TLS, with `settings` (its port, its
    /// certificate), or `None` (the test skips) when that server is not installed.
    pub fn start_tls_or_skip(settings: &str) -> Option<TestPostgres> {
        let Some(home) = pg_cluster::installed_with_tls() else {
            assert!(
                !in_ci(),
                "a PostgreSQL built with TLS is missing and CI is set: CI must test TLS \
                 (scripts/fetch-postgres-tls.sh installs it)"
            );
            ai_smartness_testkit::record(
                "no PostgreSQL built with TLS here (run scripts/fetch-postgres-tls.sh)",
            );
            return None;
        };
        Some(TestPostgres(pg_cluster::Cluster::start(
            &home,
            Some(PASSWORD),
            settings,
        )))
    }

    /// Whether a server built with TLS is installed (without one the TLS test skips).
    pub fn tls_server_installed() -> bool {
        pg_cluster::installed_with_tls().is_some()
    }

    pub fn start(&self) {
        self.0.start_server();
    }

    pub fn kill(&self) {
        self.0.kill();
    }

    pub fn url(&self) -> String {
        self.0.url()
    }

    /// The folder of the server's socket.
    pub fn socket_dir(&self) -> &std::path::Path {
        self.0.socket_dir()
    }

    /// Runs SQL with psql; its output, one row a line.
    pub fn sql(&self, sql: &str) -> String {
        let out = Command::new(self.0.bin().join("psql"))
            .args([
                "-h",
                self.0.socket_dir().to_str().unwrap(),
                "-U",
                "postgres",
                "-At",
                "-c",
                sql,
            ])
            .env("PGPASSWORD", PASSWORD)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}
