//! `groundgate run` entry point. (skeleton, owned by the worker work)
use std::process::ExitCode;

use crate::cli::RunArgs;

#[derive(Debug, thiserror::Error)]
#[error("not implemented yet")]
pub struct RunError;

pub async fn main(args: RunArgs) -> Result<ExitCode, RunError> {
    let _ = args;
    Err(RunError)
}
