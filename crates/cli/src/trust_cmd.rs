//! `skywave trust`: the node keys allowed on links with `trust = "keys"`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use skywave_bundle::text::printable;
use skywave_daemon::trust::{TRUST_FILE, trust_file_add, trust_file_entries, trust_file_remove};

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The trust file to edit (default: the node directory's `trusted`, what a link's
    /// `trust_file` defaults to).
    #[arg(long, value_name = "PATH", global = true)]
    pub file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: TrustCommand,
}

#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Allow a node key (as `skywave peers` or the other node's `skywave init` shows it).
    Add {
        /// The node key: 64 hex digits.
        key: String,
        /// A name to remember it by.
        name: Vec<String>,
    },
    /// List the allowed node keys.
    Ls,
    /// Stop allowing a node key (the key or its first 8 or more hex digits). A running
    /// daemon ends sessions with it within a second.
    Rm { key: String },
}

pub fn run(dir: &Path, a: TrustArgs, json: bool) -> anyhow::Result<ExitCode> {
    let path = a.file.unwrap_or_else(|| dir.join(TRUST_FILE));
    match a.command {
        TrustCommand::Add { key, name } => {
            let name = name.join(" ");
            let added = trust_file_add(&path, &key, &name).map_err(|e| anyhow!(e))?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"file": path, "key": key.to_ascii_lowercase(), "added": added})
                );
            } else if added {
                println!(
                    "trusted {} in {}; a running daemon applies it within a second on links with trust = \"keys\"",
                    key.to_ascii_lowercase(),
                    path.display()
                );
            } else {
                println!(
                    "{} is already in {}",
                    key.to_ascii_lowercase(),
                    path.display()
                );
            }
        }
        TrustCommand::Ls => {
            let entries = trust_file_entries(&path).map_err(|e| anyhow!(e))?;
            if json {
                println!("{}", serde_json::json!({"file": path, "keys": entries}));
            } else if entries.is_empty() {
                println!(
                    "no keys in {} (add one with `skywave trust add KEY NAME`)",
                    path.display()
                );
            } else {
                for e in entries {
                    println!("{}  {}", e.key, printable(&e.name));
                }
            }
        }
        TrustCommand::Rm { key } => {
            let removed = trust_file_remove(&path, &key).map_err(|e| anyhow!(e))?;
            if json {
                println!("{}", serde_json::json!({"file": path, "removed": removed}));
            } else if removed.is_empty() {
                eprintln!("no key starting {key} in {}", path.display());
                return Ok(ExitCode::FAILURE);
            } else {
                for e in removed {
                    println!("removed {}  {}", e.key, printable(&e.name));
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
