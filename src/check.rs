//! `groundgate check`: offline batch runner. (skeleton)
use std::process::ExitCode;

use crate::cli::CheckArgs;

pub fn main(args: CheckArgs) -> ExitCode {
    let _ = args;
    ExitCode::from(2)
}
