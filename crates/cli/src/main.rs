//! The `skywave` command.

mod daemon_cmd;
mod demo;
mod docs_cmd;
mod emulate_cmd;
mod example;
mod lab_cmd;
mod lab_real;
mod store_cmd;
mod trust_cmd;
mod util;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use nix::sys::signal::{SigHandler, Signal, signal};

/// Keep sets of signed bundles in sync between peers, over HF and UHF radio, satellite,
/// cellular and the Internet.
#[derive(Debug, Parser)]
#[command(name = "skywave", version, propagate_version = true)]
pub struct Cli {
    /// Node directory (store, keys). Default: $SKYWAVE_HOME, else $XDG_DATA_HOME/skywave,
    /// else ~/.local/share/skywave.
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,

    /// Log verbosity (error, warn, info, debug, trace, or a RUST_LOG filter; RUST_LOG
    /// wins). Default: info for the daemon, warn otherwise.
    #[arg(long, global = true, value_name = "LEVEL")]
    pub log: Option<String>,

    /// Log line format: text for people, json (one object per line) for collectors.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "text",
        value_name = "FORMAT"
    )]
    pub log_format: util::LogFormat,

    /// Append log lines to this file instead of standard error (never coloured).
    #[arg(long, global = true, value_name = "PATH")]
    pub log_file: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start here: two nodes sync sample bundles over a simulated HF modem in virtual time.
    Demo(demo::DemoArgs),
    /// A short scripted tour on sample data: two nodes, bundles carried between them.
    Example(example::ExampleArgs),
    /// Run a link model on the real clock between real programs (UDP, TCP, pty, TUN).
    Emulate(emulate_cmd::EmulateArgs),
    /// Run the design's scenarios in virtual time: list, run, matrix.
    Lab(lab_cmd::LabArgs),
    /// Create the store and this node's identity in the node directory.
    Init,
    /// Add a file as a new bundle authored by this node.
    Add(store_cmd::AddArgs),
    /// Append a file's bytes to a journal bundle authored by this node.
    Append(store_cmd::AppendArgs),
    /// List the bundles held.
    Ls(store_cmd::LsArgs),
    /// Delete a bundle authored here: a signed tombstone replaces it on every node,
    /// freeing its payload there.
    Rm(store_cmd::IdArg),
    /// Show one bundle's manifest.
    Show(store_cmd::IdArg),
    /// Write one bundle's payload to a file or standard output.
    Get(store_cmd::GetArgs),
    /// Re-verify every signature and payload hash; quarantine damage; remove orphans.
    Fsck,
    /// Run the node: links, sync, HTTP API (until SIGINT or SIGTERM).
    Daemon(daemon_cmd::DaemonArgs),
    /// The daemon's configuration file: an annotated example, or check one.
    Config(daemon_cmd::ConfigArgs),
    /// One screen: links, peers and transfers of the running daemon.
    Status(daemon_cmd::StatusArgs),
    /// Peers of the running daemon.
    Peers,
    /// Follow the running daemon's events (bundles, peers, links).
    Events(daemon_cmd::EventsArgs),
    /// The node keys allowed on links with `trust = "keys"`: add, ls, rm.
    Trust(trust_cmd::TrustArgs),
    /// Print a shell's completion script, e.g. `skywave completions bash >
    /// /usr/share/bash-completion/completions/skywave`.
    Completions(docs_cmd::CompletionsArgs),
    /// Print the manual page (roff): `skywave man | man -l -`.
    Man,
}

fn main() -> ExitCode {
    // Before parsing: `--help` and `--version` print from inside it.
    sigpipe(SigHandler::SigDfl);
    let cli = Cli::parse();
    if matches!(cli.command, Command::Daemon(_)) {
        sigpipe(SigHandler::SigIgn);
    }
    // The daemon says what it set up (node, API, links) at info; other verbs print
    // their results and log only what went wrong.
    let level = cli.log.clone().unwrap_or_else(|| {
        if matches!(cli.command, Command::Daemon(_)) {
            "info".into()
        } else {
            "warn".into()
        }
    });
    if let Err(e) = util::init_tracing(&level, cli.log_format, cli.log_file.as_deref()) {
        eprintln!("error: {e:#}");
        return ExitCode::FAILURE;
    }
    let json = cli.json;
    match run(cli) {
        Ok(code) => code,
        Err(e) if json => {
            // A script asked for JSON: it gets its errors as JSON too (on standard
            // error, one object, standard output keeping only results).
            let causes: Vec<String> = e.chain().skip(1).map(ToString::to_string).collect();
            eprintln!(
                "{}",
                serde_json::json!({"error": e.to_string(), "causes": causes})
            );
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

/// SIGPIPE's disposition. `SigDfl` for every verb but the daemon: a closed pipe on
/// standard output (`skywave ls | head -1`) ends the process quietly, as it ends `cat`
/// or `grep`, where with Rust's default (ignored) the write fails and `println!`
/// panics; ripgrep and fd do the same. `SigIgn` (Rust's default) for the daemon: it
/// writes only to sockets and its log, and a log reader that goes away must not stop
/// a node.
#[allow(unsafe_code)]
fn sigpipe(h: SigHandler) {
    // SAFETY: called from main before any other thread exists; neither disposition is
    // a handler, so nothing runs in signal context.
    if let Err(e) = unsafe { signal(Signal::SIGPIPE, h) } {
        eprintln!("warning: setting SIGPIPE's disposition: {e}");
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if let Command::Demo(a) = cli.command {
        return demo::run(a, cli.json);
    }
    if let Command::Example(a) = cli.command {
        return example::run(a);
    }
    if let Command::Emulate(a) = cli.command {
        return emulate_cmd::run(a, cli.json);
    }
    if let Command::Lab(a) = cli.command {
        return lab_cmd::run(a, cli.json);
    }
    if let Command::Config(a) = cli.command {
        return daemon_cmd::config(a, cli.json);
    }
    if let Command::Completions(a) = cli.command {
        return docs_cmd::completions(a);
    }
    if let Command::Man = cli.command {
        return docs_cmd::man();
    }
    let dir = util::node_dir(cli.dir.as_deref())?;
    // With a daemon running on the directory, the store verbs go through it.
    let remote = skywave_daemon::client::Client::find(&dir);
    match (cli.command, remote) {
        (Command::Add(a), Some(c)) => daemon_cmd::add(&c, a, cli.json),
        (Command::Append(a), Some(c)) => daemon_cmd::append(&c, a, cli.json),
        (Command::Ls(a), Some(c)) => daemon_cmd::ls(&c, &dir, a, cli.json),
        (Command::Rm(a), Some(c)) => daemon_cmd::rm(&c, a, cli.json),
        (Command::Show(a), Some(c)) => daemon_cmd::show(&c, &dir, a, cli.json),
        (Command::Get(a), Some(c)) => daemon_cmd::get(&c, &dir, a),
        (command, _) => run_local(command, &dir, cli.json),
    }
}

fn run_local(command: Command, dir: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let dir = dir.to_path_buf();
    match command {
        Command::Daemon(a) => daemon_cmd::daemon(&dir, a),
        Command::Config(_) => unreachable!("handled above"),
        Command::Status(a) => daemon_cmd::status(&dir, a, json),
        Command::Peers => daemon_cmd::peers(&dir, json),
        Command::Events(a) => daemon_cmd::events(&dir, a, json),
        Command::Demo(_) => unreachable!("handled above"),
        Command::Example(_) => unreachable!("handled above"),
        Command::Emulate(_) => unreachable!("handled above"),
        Command::Lab(_) => unreachable!("handled above"),
        Command::Completions(_) | Command::Man => unreachable!("handled above"),
        Command::Init => store_cmd::init(&dir, json),
        Command::Add(a) => store_cmd::add(&dir, a, json),
        Command::Append(a) => store_cmd::append(&dir, a, json),
        Command::Ls(a) => store_cmd::ls(&dir, a, json),
        Command::Rm(a) => store_cmd::rm(&dir, a, json),
        Command::Show(a) => store_cmd::show(&dir, a, json),
        Command::Get(a) => store_cmd::get(&dir, a),
        Command::Fsck => store_cmd::fsck(&dir, json),
        Command::Trust(a) => trust_cmd::run(&dir, a, json),
    }
}
