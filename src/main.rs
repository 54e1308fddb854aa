//! The `groundgate` binary: parses the command line and hands off to the
//! library. The only place `anyhow` is used.

use std::process::ExitCode;

use clap::Parser;
use groundgate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => groundgate::check::main(args),
        other => {
            eprintln!("groundgate: {other:?} is not wired yet");
            ExitCode::from(2)
        }
    }
}
