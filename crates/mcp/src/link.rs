//! The MCP server's line to the project's daemon: one request per tool call over the socket,
//! the daemon started when it is not running, and every wait bounded, so a daemon that does not
//! answer gives the tool an error result, never a hang.

use crate::client::{Client, ClientError};
use ai_smartness_proto::paths::ProjectPaths;
use ai_smartness_proto::protocol::{Command, ErrorCode, Request};
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::time::Duration;

/// An ordinary request answers well within this.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a tool call waits for a daemon it had to start.
const START_WAIT: Duration = Duration::from_secs(8);

/// Why a tool call got no answer: said to the model as the tool's error result.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// Nothing listens on the socket: the daemon is to be started.
    #[error("the memory daemon is not running ({0})")]
    NotRunning(String),
    #[error("the memory daemon is not answering ({0}); try again in a few seconds")]
    Down(String),
    #[error("the memory daemon is starting; try again in a few seconds")]
    Starting,
    /// The daemon answered with an error: its message (unknown id, bad value...).
    #[error("{message}")]
    Refused { code: ErrorCode, message: String },
    #[error("the memory daemon's reply is not what this server expects ({0}): restart it with `ai daemon restart`")]
    Unexpected(String),
}

/// The project and how to start its daemon.
#[derive(Debug, Clone)]
pub struct DaemonLink {
    /// The project: where its socket is, and its config.
    paths: ProjectPaths,
    /// The `ai` binary that starts the daemon (this one).
    ai: PathBuf,
}

impl DaemonLink {
    pub fn new(paths: ProjectPaths, ai: PathBuf) -> DaemonLink {
        DaemonLink { paths, ai }
    }

    pub fn paths(&self) -> &ProjectPaths {
        &self.paths
    }

    /// Sends `cmd` and reads its reply as `T`, starting the daemon first when it is down.
    pub async fn call<T: DeserializeOwned + Send + 'static>(
        &self,
        cmd: Command,
        timeout: Duration,
    ) -> Result<T, LinkError> {
        let request = Request::Command(cmd);
        match self.send(request.clone(), timeout).await {
            Err(LinkError::NotRunning(_)) => {
                self.start().await?;
                self.send(request, timeout).await
            }
            other => other,
        }
    }

    async fn send<T: DeserializeOwned + Send + 'static>(
        &self,
        request: Request,
        timeout: Duration,
    ) -> Result<T, LinkError> {
        let socket = self.paths.socket();
        // The client is blocking (std only, shared with the hooks): a blocking thread runs it,
        // and its own timeouts bound every read and write.
        let reply = tokio::task::spawn_blocking(move || {
            let mut client = Client::connect(&socket, timeout)?;
            client.request(&request)
        })
        .await
        .map_err(|e| LinkError::Down(e.to_string()))?;
        let response = match reply {
            Ok(r) => r,
            Err(e @ ClientError::NotRunning(_)) => {
                return Err(LinkError::NotRunning(e.to_string()))
            }
            Err(e) => return Err(LinkError::Down(e.to_string())),
        };
        if !response.ok {
            let (code, message) = response.error.map_or_else(
                || (ErrorCode::Internal, "the daemon refused the request".into()),
                |e| (e.code, e.message),
            );
            return Err(LinkError::Refused { code, message });
        }
        serde_json::from_value(response.result.unwrap_or_default())
            .map_err(|e| LinkError::Unexpected(e.to_string()))
    }

    /// Starts the daemon (`ai daemon start`, which returns once it answers) unless a start is
    /// under way or failed recently; waits [`START_WAIT`] at most.
    async fn start(&self) -> Result<(), LinkError> {
        if crate::client::instance_lock_held(&self.paths) {
            // Another process is starting it (or it runs, its socket not yet bound): give it a
            // moment, then let the caller try once more.
            tokio::time::sleep(Duration::from_millis(500)).await;
            return Ok(());
        }
        if let Some(why) = crate::client::why_not_start(&self.paths) {
            return Err(LinkError::Down(why));
        }
        let mut cmd = tokio::process::Command::new(&self.ai);
        cmd.arg("--project")
            .arg(&self.paths.root)
            .args(["daemon", "start", "--quiet"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd
            .spawn()
            .map_err(|e| LinkError::Down(format!("cannot run {}: {e}", self.ai.display())))?;
        match tokio::time::timeout(START_WAIT, child.wait()).await {
            Ok(Ok(status)) if status.success() => Ok(()),
            Ok(Ok(status)) => Err(LinkError::Down(format!(
                "`ai daemon start` failed ({status}); `ai health` says why"
            ))),
            Ok(Err(e)) => Err(LinkError::Down(e.to_string())),
            Err(_) => {
                // Still starting: the child finishes on its own; tokio reaps it.
                Err(LinkError::Starting)
            }
        }
    }
}
