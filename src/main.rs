//! The `groundgate` binary: parses the command line and hands off to the
//! library. The only place `anyhow` is used.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use groundgate::cli::{Cli, Command};
use groundgate::kafka;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => Ok(groundgate::check::main(args)),
        Command::Run(args) => block_on(async { Ok(kafka::run::main(args).await?) }),
        Command::DevBroker(args) => block_on(async { Ok(kafka::embedded::main(args).await?) }),
        Command::Demo(args) => block_on(async { Ok(kafka::demo::main(args).await?) }),
        Command::Produce(args) => block_on(async { Ok(kafka::produce::main(args).await?) }),
        Command::Bench(args) => block_on(async { Ok(kafka::bench::main(args).await?) }),
        Command::Eval(args) => Ok(groundgate::eval::main(args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("groundgate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn block_on(
    fut: impl std::future::Future<Output = anyhow::Result<ExitCode>>,
) -> anyhow::Result<ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(fut)
}

// glibc malloc's arena locks showed up as the top cost under load (the
// consume thread, librdkafka's threads and tokio allocate concurrently);
// mimalloc's thread-local heaps removed that contention (see README numbers).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
