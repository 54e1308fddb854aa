//! The `groundgate` binary: parses the command line and hands off to the
//! library. The only place `anyhow` is used.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches};
use groundgate::cli::{Cli, Command};
use groundgate::cmd;

fn main() -> ExitCode {
    cmd::report_panics();
    // `--version` says what the Kafka client library can do (TLS, SASL
    // mechanisms, codecs), so an operator sees it before configuring any.
    let library = groundgate::kafka::library();
    let version = format!(
        "{} (git {})\nlibrdkafka {}\nbuiltin.features: {}",
        env!("CARGO_PKG_VERSION"),
        env!("GG_BUILD_GIT_SHA"),
        library.version,
        library.features_line()
    );
    let command = Cli::command().version(&*Box::leak(version.into_boxed_str()));
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Check(args) => Ok(cmd::check::main(args)),
        Command::Run(args) => block_on(cmd::run::main(args)),
        Command::DevBroker(args) => block_on(cmd::dev_broker::main(args)),
        Command::Demo(args) => block_on(cmd::demo::main(args)),
        Command::Produce(args) => block_on(cmd::produce::main(args)),
        Command::Replay(args) => block_on(cmd::replay::main(args)),
        Command::Bench(args) => block_on(cmd::bench::main(args)),
        Command::Audit(args) => Ok(cmd::audit::main(args)),
        Command::Eval(args) => Ok(cmd::eval::main(args)),
        Command::Schema(args) => Ok(cmd::schema::main(args)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A standard error that cannot be written must not turn the
            // exit code into an abort's.
            let _ = writeln!(std::io::stderr(), "groundgate: {}", cmd::error_chain(&e));
            ExitCode::from(cmd::exit_code_of(&e))
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
// Its `no_thp` feature (Cargo.toml): with transparent huge pages, fresh heap
// pages were faulted in 2 MiB at a time and zeroed by the kernel although
// barely used: 12-30 % of `check`'s profile and twice its resident memory.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
