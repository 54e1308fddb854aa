//! HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the process is
//! alive and serving), `/readyz` (the worker has joined its group and been
//! given its share, possibly none, of the partitions; not ready again from
//! the moment its partitions are lost, e.g. after a broker restart, until
//! the group assigns it some, and the worker stops after
//! `kafka.unassigned_timeout_ms` of that; not ready for good from the
//! moment a shutdown drain starts).
//!
//! Binds only the configured address. Serves state; changes nothing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::metrics::Metrics;

/// Readiness as seen by the worker; read by `/readyz`.
#[derive(Debug, Default)]
pub struct Health {
    ready: AtomicBool,
    draining: AtomicBool,
}

impl Health {
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// The worker is shutting down: never ready again, whatever a late
    /// partition assignment says, so no new traffic is routed to it.
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed) && !self.is_draining()
    }
}

/// The worker reports readiness through its own trait; this is where it lands.
impl crate::kafka::worker::Readiness for Health {
    fn set_ready(&self, ready: bool) {
        Health::set_ready(self, ready);
    }

    fn begin_drain(&self) {
        Health::begin_drain(self);
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

#[derive(Clone)]
struct AppState {
    metrics: Arc<Metrics>,
    health: Arc<Health>,
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        s.metrics.encode(),
    )
}

async fn healthz() -> impl IntoResponse {
    (StatusCode::OK, "ok\n")
}

async fn readyz(State(s): State<AppState>) -> impl IntoResponse {
    if s.health.is_ready() {
        (StatusCode::OK, "ready\n")
    } else if s.health.is_draining() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: shutting down (draining in-flight records)\n",
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: waiting for the consumer group to assign partitions\n",
        )
    }
}

/// Binds `addr` and serves the endpoints on the current tokio runtime until
/// the returned task is aborted. Returns the bound address (port 0 → a free port).
pub async fn serve(
    addr: SocketAddr,
    metrics_handle: Arc<Metrics>,
    health: Arc<Health>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), HttpError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| HttpError::Bind { addr, source })?;
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            metrics: metrics_handle,
            health,
        });
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "metrics endpoint stopped");
        }
    });
    Ok((bound, task))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get_path(addr: SocketAddr, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn endpoints_answer_with_meaningful_status() {
        let m = Arc::new(Metrics::new(&crate::config::Config::default().metrics).unwrap());
        let h = Arc::new(Health::default());
        let (addr, task) = serve("127.0.0.1:0".parse().unwrap(), m, h.clone())
            .await
            .unwrap();
        assert!(get_path(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get_path(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        h.set_ready(true);
        assert!(get_path(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        // From the start of a shutdown drain, for good.
        h.begin_drain();
        let draining = get_path(addr, "/readyz").await;
        assert!(draining.starts_with("HTTP/1.1 503"), "{draining}");
        assert!(draining.contains("shutting down"), "{draining}");
        h.set_ready(true);
        assert!(get_path(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        let metrics = get_path(addr, "/metrics").await;
        assert!(metrics.starts_with("HTTP/1.1 200"));
        assert!(metrics.contains("text/plain; version=0.0.4"));
        assert!(metrics.contains("groundgate_records_total"));
        assert!(get_path(addr, "/nope").await.starts_with("HTTP/1.1 404"));
        task.abort();
    }
}
