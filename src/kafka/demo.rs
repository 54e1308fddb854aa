//! (skeleton)
use std::process::ExitCode;

use crate::cli::DemoArgs;

#[derive(Debug, thiserror::Error)]
#[error("not implemented yet")]
pub struct SkeletonError;

pub async fn main(args: DemoArgs) -> Result<ExitCode, SkeletonError> {
    let _ = args;
    Err(SkeletonError)
}
