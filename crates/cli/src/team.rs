//! `ai team join|status|leave`: the project's place in a team store on PostgreSQL. These talk
//! to the store directly (they are a person's set-up steps); the daemon reads the result from
//! `config.json` like every setting. The store's password is never written: it comes from the
//! environment or `~/.pgpass` (a password typed in the address is used for the join and
//! dropped).

use crate::Ctx;
use ai_smartness_config::{Config, ConfigEditError, TeamConfig, TeamShare};
use ai_smartness_team as team;
use anyhow::{bail, Context, Result};
use serde::Serialize;
use std::process::ExitCode;

/// What `ai team status` (and `join`) report.
#[derive(Debug, Serialize)]
pub struct TeamView {
    pub joined: bool,
    pub team: String,
    /// The repository's normalized remote: the project as the team knows it.
    pub project: String,
    /// The store's address, without its password.
    pub url: String,
    pub author: String,
    pub share: TeamShare,
    /// The kinds of message that may leave (empty: every kind).
    pub share_kinds: Vec<String>,
    pub reachable: bool,
    /// Why the store could not be reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_messages: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_messages: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_threads: Option<i64>,
    /// The daemon's sender: sent, pending (the lag), its last failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<ai_smartness_replies::TeamSyncState>,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("a runtime for the team store")
}

/// The author shared items carry: given, else git's `user.name`, else the login name.
fn default_author(root: &std::path::Path) -> String {
    std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["config", "--get", "user.name"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".into())
}

pub fn join(
    ctx: &Ctx,
    address: &str,
    name: Option<String>,
    author: Option<String>,
) -> Result<ExitCode> {
    let root = ctx.paths.root.clone();
    let project = team::project_id(&root)?;
    let (url, typed) = team::split_password(address)?;
    let config = Config::load(&ctx.paths.config())?;
    if typed.is_some() {
        eprintln!(
            "the password in the address is used for this join only and not kept: \
             set {} or PGPASSWORD, or add it to ~/.pgpass, for the daemon",
            config
                .team
                .password_env
                .as_deref()
                .unwrap_or("the variable team.password_env names")
        );
    }
    let password = typed.or_else(|| team::password_for(&url, config.team.password_env.as_deref()));
    let used = password.clone();
    let schema = runtime()?.block_on(async {
        let mut client = team::connect(&url, password.as_deref()).await?;
        team::migrate(&mut client).await
    })?;
    // Written now, key by key, on the file as it is after the round trip: an edit made
    // meanwhile stays.
    let config = Config::set_keys(
        &ctx.paths.config(),
        &[
            (&["team", "url"], url.into()),
            (
                &["team", "name"],
                name.unwrap_or_else(|| "default".into()).into(),
            ),
            (
                &["team", "author"],
                author.unwrap_or_else(|| default_author(&root)).into(),
            ),
        ],
    )?;
    if !ctx.json {
        println!(
            "joined team {:?} as {} (schema {schema}); nothing is shared until you choose \
             (`ai team share all`, or `ai thread ID --share`)",
            config.team.name, project
        );
    }
    report(ctx, used)
}

/// The kinds of message a sharing rule may name (what capture records as `source_type`).
const KINDS: &[&str] = &[
    "prompt", "response", "write", "command", "read", "task", "fetch", "note",
];

pub fn share(ctx: &Ctx, what: &str, kinds: Option<Vec<String>>) -> Result<ExitCode> {
    let share = match what {
        "all" => TeamShare::All,
        _ => TeamShare::None,
    };
    let mut edits: Vec<(&[&str], serde_json::Value)> =
        vec![(&["team", "share"], serde_json::to_value(share)?)];
    if let Some(kinds) = kinds {
        let kinds: Vec<String> = kinds.iter().map(|k| k.trim().to_lowercase()).collect();
        let kinds = if kinds.iter().any(|k| k == "all") {
            Vec::new()
        } else {
            if let Some(bad) = kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
                bail!("unknown kind {bad:?}: the kinds are {}", KINDS.join(", "));
            }
            kinds
        };
        edits.push((&["team", "share_kinds"], kinds.into()));
    }
    let config = Config::set_keys(&ctx.paths.config(), &edits)?;
    if ctx.json {
        let shown = SharingShown {
            share: &config.team.share,
            share_kinds: &config.team.share_kinds,
        };
        println!("{}", serde_json::to_string(&shown)?);
    } else {
        println!("shared: {}", describe_sharing(&config.team));
        if !config.team.joined() {
            println!("(not in a team yet: nothing leaves until `ai team join`)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What the project shares, in words.
fn describe_sharing(t: &TeamConfig) -> String {
    let what = match t.share {
        TeamShare::None => "threads you share one by one",
        TeamShare::All => "every thread not marked private",
    };
    if t.share_kinds.is_empty() {
        what.to_string()
    } else {
        format!("{what}; only their {} messages", t.share_kinds.join(", "))
    }
}

pub fn status(ctx: &Ctx) -> Result<ExitCode> {
    let config = Config::load(&ctx.paths.config())?;
    let password = team::password_for(&config.team.url, config.team.password_env.as_deref());
    report(ctx, password)
}

/// Prints the team view, reaching the store with `password`.
fn report(ctx: &Ctx, password: Option<String>) -> Result<ExitCode> {
    let config = Config::load(&ctx.paths.config())?;
    let t = &config.team;
    let project = team::project_id(&ctx.paths.root).unwrap_or_default();
    let mut view = TeamView {
        joined: t.joined(),
        team: t.name.clone(),
        project: project.clone(),
        url: t.url.clone(),
        author: t.author.clone(),
        share: t.share,
        share_kinds: t.share_kinds.clone(),
        reachable: false,
        error: None,
        server: None,
        schema: None,
        team_messages: None,
        project_messages: None,
        project_threads: None,
        sync: None,
    };
    if t.joined() {
        view.sync = ctx
            .call_if_running(ai_smartness_proto::protocol::Command::TeamSync(
                ai_smartness_proto::protocol::Flag,
            ))
            .and_then(|v| serde_json::from_value(v).ok());
    }
    if t.joined() {
        let got = runtime()?.block_on(async {
            let client = team::connect(&t.url, password.as_deref()).await?;
            team::status(&client, &t.name, &project).await
        });
        match got {
            Ok(s) => {
                view.reachable = true;
                view.server = Some(s.server);
                view.schema = Some(s.schema);
                view.team_messages = Some(s.team_messages);
                view.project_messages = Some(s.project_messages);
                view.project_threads = Some(s.project_threads);
            }
            Err(e) => view.error = Some(e.to_string()),
        }
    }
    if ctx.json {
        println!("{}", serde_json::to_string_pretty(&view)?);
    } else if !view.joined {
        println!("not in a team (ai team join POSTGRES_URL)");
    } else {
        println!("team {:?} at {} as {:?}", view.team, view.url, view.author);
        println!("project: {}", view.project);
        println!("shared: {}", describe_sharing(t));
        match (&view.error, view.schema) {
            (Some(e), _) => println!("store: unreachable ({e}); local memory goes on alone"),
            (None, Some(schema)) => println!(
                "store: PostgreSQL {}, schema {schema}; {} messages in the team, {} of this project in {} threads",
                view.server.as_deref().unwrap_or("?"),
                view.team_messages.unwrap_or(0),
                view.project_messages.unwrap_or(0),
                view.project_threads.unwrap_or(0)
            ),
            _ => {}
        }
        if let Some(s) = &view.sync {
            println!(
                "sender: {} sent since the daemon started, {} waiting{}",
                s.sent,
                s.pending,
                s.error
                    .as_deref()
                    .map(|e| format!(" (last failure: {e})"))
                    .unwrap_or_default()
            );
        }
    }
    if view.joined && !view.reachable {
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn leave(ctx: &Ctx) -> Result<ExitCode> {
    let config = Config::load(&ctx.paths.config())?;
    if !config.team.joined() {
        bail!("this project is not in a team");
    }
    let name = config.team.name;
    // The store is forgotten; where the password comes from and the prompt's budget stay, as
    // the file has them now.
    Config::edit(&ctx.paths.config(), |doc| {
        let kept = |key: &str| doc.get("team").and_then(|t| t.get(key)).cloned();
        let mut team = serde_json::to_value(TeamConfig::default())?;
        for key in ["password_env", "inject_budget_ms"] {
            if let (Some(v), Some(t)) = (kept(key), team.as_object_mut()) {
                t.insert(key.into(), v);
            }
        }
        let Some(map) = doc.as_object_mut() else {
            return Err(ConfigEditError::DocumentNotObject);
        };
        map.insert("team".into(), team);
        Ok(())
    })?;
    if ctx.json {
        println!("{}", serde_json::to_string(&TeamLeft { left: &name })?);
    } else {
        println!(
            "left team {name:?}; what was shared stays in the store, local memory is untouched"
        );
    }
    Ok(ExitCode::SUCCESS)
}
/// What `ai team share --json` prints: the sharing now in force.
#[derive(serde::Serialize)]
struct SharingShown<'a> {
    share: &'a ai_smartness_config::TeamShare,
    share_kinds: &'a [String],
}

/// What `ai team leave --json` prints.
#[derive(serde::Serialize)]
struct TeamLeft<'a> {
    left: &'a str,
}
