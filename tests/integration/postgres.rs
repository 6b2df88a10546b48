//! A real PostgreSQL with pgvector for a test: the server `scripts/fetch-postgres.sh` unpacked
//! from its PyPI wheel, a fresh cluster in a temporary folder, listening on a Unix socket there
//! only, with a password (scram) so the tests see how ours is found. PostgreSQL refuses to run
//! as root: run as root, the server runs as `nobody`. Stopped (immediately) when dropped.
//!
//! Without the server the test reports a skip, except under CI (`CI` set), where it fails.

use crate::harness::in_ci;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The password the test cluster's `postgres` role has.
pub const PASSWORD: &str = "team-pw-7f3a9c1e";

pub struct TestPostgres {
    /// Holds the cluster and its socket (deleted on drop).
    dir: tempfile::TempDir,
    /// `bin/` of the server.
    bin: PathBuf,
    /// Run as root: the server runs as nobody.
    as_nobody: bool,
}

/// The server's folder (`bin/postgres` in it), from the fetch script.
fn installed() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AI_SMARTNESS_POSTGRES_DIR") {
        return Some(PathBuf::from(dir)).filter(|d| d.join("bin/postgres").is_file());
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/fetch-postgres.sh");
    let out = Command::new(script).arg("--print-path").output().ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

impl TestPostgres {
    /// A running cluster, or `None` (the test skips) when the server is not installed.
    pub fn start_or_skip() -> Option<TestPostgres> {
        let Some(home) = installed() else {
            assert!(
                !in_ci(),
                "PostgreSQL is missing and CI is set: CI must test the team store \
                 (scripts/fetch-postgres.sh fetches it)"
            );
            ai_smartness::skips::record("no PostgreSQL here (run scripts/fetch-postgres.sh)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("aipg")
            .tempdir_in("/tmp")
            .unwrap();
        let as_nobody = unsafe { libc::geteuid() } == 0;
        if as_nobody {
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let pg = TestPostgres {
            dir,
            bin: home.join("bin"),
            as_nobody,
        };
        let pwfile = pg.dir.path().join("pw");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if as_nobody {
            std::os::unix::fs::chown(&pwfile, Some(65534), Some(65534)).unwrap();
        }
        let data = pg.data();
        let out = pg.run(
            "initdb",
            &[
                "-D",
                data.to_str().unwrap(),
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                "--pwfile",
                pwfile.to_str().unwrap(),
                "--no-sync",
            ],
        );
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        pg.start();
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The folder of the server's socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let program = self.bin.join(tool);
        let mut cmd = if self.as_nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&program);
            c
        } else {
            Command::new(&program)
        };
        cmd.args(args).env_remove("PGPASSWORD").output().unwrap()
    }

    /// Starts (or starts again) the server and waits until it accepts connections.
    pub fn start(&self) {
        let opts = format!(
            "-k {} -c listen_addresses='' -c fsync=off",
            self.socket_dir().display()
        );
        let log = self.dir.path().join("log");
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-o",
                &opts,
                "-l",
                log.to_str().unwrap(),
                "-w",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Stops the server at once, as a crash would.
    pub fn kill(&self) {
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                self.data().to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }

    /// The address of the `postgres` database, without a password.
    pub fn url(&self) -> String {
        let host: String =
            url::form_urlencoded::byte_serialize(self.socket_dir().to_str().unwrap().as_bytes())
                .collect();
        format!("postgres://postgres@localhost/postgres?host={host}")
    }

    /// Runs SQL with psql; its output, one row a line.
    pub fn sql(&self, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                self.socket_dir().to_str().unwrap(),
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

impl Drop for TestPostgres {
    fn drop(&mut self) {
        self.kill();
    }
}
