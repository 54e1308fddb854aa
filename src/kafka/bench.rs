//! (skeleton)
use std::process::ExitCode;

use crate::cli::BenchArgs;

#[derive(Debug, thiserror::Error)]
#[error("not implemented yet")]
pub struct SkeletonError;

pub async fn main(args: BenchArgs) -> Result<ExitCode, SkeletonError> {
    let _ = args;
    Err(SkeletonError)
}
