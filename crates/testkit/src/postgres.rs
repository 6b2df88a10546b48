//! A throwaway PostgreSQL cluster from the server `scripts/fetch-postgres.sh` unpacks: a fresh
//! data folder in a temporary folder, listening on a Unix socket there only. PostgreSQL refuses
//! to run as root: run as root, the server runs as `nobody`. Stopped (immediately) when
//! dropped. Shared by the team tests and the team benchmark.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Cluster {
    /// Holds the cluster and its socket (deleted on drop).
    dir: tempfile::TempDir,
    /// `bin/` of the server.
    bin: PathBuf,
    /// Run as root: the server runs as nobody.
    as_nobody: bool,
    /// Extra server settings.
    settings: String,
}

/// The server's folder (`bin/postgres` in it): `AI_SMARTNESS_POSTGRES_DIR`, else what the
/// fetch script installed.
pub fn installed() -> Option<PathBuf> {
    server_folder("AI_SMARTNESS_POSTGRES_DIR", "scripts/fetch-postgres.sh")
}

/// A server built with TLS (`bin/postgres` in it): `AI_SMARTNESS_POSTGRES_TLS_DIR`, else what
/// `scripts/fetch-postgres-tls.sh` installed. The one above is built without it.
pub fn installed_with_tls() -> Option<PathBuf> {
    server_folder(
        "AI_SMARTNESS_POSTGRES_TLS_DIR",
        "scripts/fetch-postgres-tls.sh",
    )
}

/// The folder the variable `var` names, else the one `script --print-path` prints.
fn server_folder(var: &str, script: &str) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(var) {
        return Some(PathBuf::from(dir)).filter(|d| d.join("bin/postgres").is_file());
    }
    let script = crate::workspace_root().join(script);
    let out = Command::new(script).arg("--print-path").output().ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

impl Cluster {
    /// A running cluster whose `postgres` role has `password` (scram), or none (trust).
    pub fn start(home: &Path, password: Option<&str>, settings: &str) -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("aipg")
            .tempdir_in("/tmp")
            .unwrap();
        let as_nobody = unsafe { libc::geteuid() } == 0;
        if as_nobody {
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
        }
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let c = Cluster {
            dir,
            bin: home.join("bin"),
            as_nobody,
            settings: settings.to_string(),
        };
        let data = c.data();
        let mut args = vec!["-D", data.to_str().unwrap(), "-U", "postgres", "--no-sync"];
        let pwfile = c.dir.path().join("pw");
        let pwfile_arg;
        match password {
            Some(p) => {
                std::fs::write(&pwfile, p).unwrap();
                if as_nobody {
                    std::os::unix::fs::chown(&pwfile, Some(65534), Some(65534)).unwrap();
                }
                pwfile_arg = pwfile.to_str().unwrap().to_string();
                args.extend(["--auth=scram-sha-256", "--pwfile", &pwfile_arg]);
            }
            None => args.push("--auth=trust"),
        }
        let out = c.run("initdb", &args);
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        c.start_server();
        c
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The folder of the server's socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn bin(&self) -> &Path {
        &self.bin
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
    pub fn start_server(&self) {
        let opts = format!(
            "-k {} -c listen_addresses='' -c fsync=off {}",
            self.socket_dir().display(),
            self.settings
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
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill();
    }
}
