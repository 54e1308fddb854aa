//! (skeleton)
use std::process::ExitCode;

use crate::cli::ProduceArgs;

#[derive(Debug, thiserror::Error)]
#[error("not implemented yet")]
pub struct SkeletonError;

pub async fn main(args: ProduceArgs) -> Result<ExitCode, SkeletonError> {
    let _ = args;
    Err(SkeletonError)
}
