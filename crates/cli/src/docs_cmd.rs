//! `skywave completions SHELL` and `skywave man`: generated from the command's own
//! definition, so they always match the verbs and flags of this build.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory};

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// Prints the completion script for a shell.
pub fn completions(a: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = crate::Cli::command();
    let mut out = io::stdout().lock();
    clap_complete::generate(a.shell, &mut cmd, "skywave", &mut out);
    out.flush().context("writing the completion script")?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the manual page (roff), the verbs listed in it with what each does.
pub fn man() -> anyhow::Result<ExitCode> {
    let cmd = crate::Cli::command();
    let mut page = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut page)
        .context("rendering the manual page")?;
    let mut out = io::stdout().lock();
    out.write_all(&page)
        .and_then(|()| out.flush())
        .context("writing the manual page")?;
    Ok(ExitCode::SUCCESS)
}
