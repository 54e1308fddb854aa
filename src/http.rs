//! HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (process alive),
//! `/readyz` (connected and partitions assigned or group settled).
//!
//! SKELETON: the observability work fills in the bodies; the signatures are the
//! contract the worker codes against. Binds only the configured address.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::metrics::Metrics;

/// Readiness as seen by the worker; read by `/readyz`.
#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
}

impl Health {
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot bind the metrics endpoint on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Binds `addr` and serves the endpoints on the current tokio runtime until
/// the returned task is aborted. Returns the bound address (port 0 → a free port).
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    health: Arc<Health>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), HttpError> {
    let _ = (metrics, health);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| HttpError::Bind { addr, source })?;
    Ok((bound, tokio::spawn(async move { drop(listener) })))
}
