//! (skeleton)
use std::process::ExitCode;

use crate::cli::DevBrokerArgs;

#[derive(Debug, thiserror::Error)]
#[error("not implemented yet")]
pub struct SkeletonError;

pub async fn main(args: DevBrokerArgs) -> Result<ExitCode, SkeletonError> {
    let _ = args;
    Err(SkeletonError)
}
