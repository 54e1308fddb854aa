//! HTTP endpoints: `/metrics` (Prometheus text), `/healthz` (the process is
//! alive and serving, and a worker's consume loop polls its consumer: one
//! that has not for `max.poll.interval.ms` has been put out of its group by
//! librdkafka and does no work until restarted), `/readyz` (the worker has joined its group and been
//! given its share, possibly none, of the partitions; not ready again from
//! the moment its partitions are lost, e.g. after a broker restart, until
//! the group assigns it some, and the worker stops after
//! `kafka.unassigned_timeout_ms` of that; not ready for good from the
//! moment a shutdown drain starts).
//!
//! Binds only the configured address. Serves state; changes nothing.
//!
//! The endpoint shares the process with the worker and is often reachable
//! by more of the network than the brokers are, so what a client can hold
//! is bounded ([`Limits`]): connections open at once, so that idle or
//! hostile clients cannot take the file descriptors librdkafka needs, and
//! how long one connection may stay open, whether idle, sending its request
//! slowly or reading the answer slowly. Past the bound the oldest open
//! connection is closed, not the new one: a probe or a scrape always gets
//! its answer, and clients that hold connections open only lose them.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::metrics::Metrics;

/// Readiness as seen by the worker; read by `/readyz`, and by `/healthz`
/// when the worker's polls are watched.
#[derive(Debug)]
pub struct Health {
    ready: AtomicBool,
    draining: AtomicBool,
    origin: Instant,
    /// Milliseconds from `origin` to the last poll; `u64::MAX` before the
    /// first (a worker still waiting for its brokers at start is alive).
    last_poll_ms: AtomicU64,
    /// How long without a poll makes the worker dead; `None`: not watched.
    stall_after: Option<Duration>,
    /// A stall is logged once, not at every probe.
    stall_logged: AtomicBool,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            ready: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            origin: Instant::now(),
            last_poll_ms: AtomicU64::new(u64::MAX),
            stall_after: None,
            stall_logged: AtomicBool::new(false),
        }
    }
}

impl Health {
    /// Health whose `/healthz` fails once the worker, having polled its
    /// consumer, goes `stall_after` without polling it again.
    pub fn watching_polls(stall_after: Duration) -> Health {
        Health {
            stall_after: Some(stall_after),
            ..Health::default()
        }
    }

    pub fn polled(&self) {
        let ms = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.last_poll_ms.store(ms, Ordering::Relaxed);
    }

    /// How long the worker has gone without polling, when that is longer
    /// than allowed. Not while draining: the loop has stopped polling on
    /// purpose and the drain has its own deadline.
    pub fn stalled_for(&self) -> Option<Duration> {
        let allowed = self.stall_after?;
        let last = self.last_poll_ms.load(Ordering::Relaxed);
        if last == u64::MAX || self.is_draining() {
            return None;
        }
        let since = self
            .origin
            .elapsed()
            .saturating_sub(Duration::from_millis(last));
        (since > allowed).then_some(since)
    }

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

    fn polled(&self) {
        Health::polled(self);
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The OS error is part of the message and deliberately not a `source`:
    /// a report of the error chain would print it twice.
    #[error("cannot bind the metrics endpoint on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
}

impl HttpError {
    /// Whether another process already listens on the address.
    pub fn in_use(&self) -> bool {
        match self {
            HttpError::Bind { error, .. } => error.kind() == std::io::ErrorKind::AddrInUse,
        }
    }
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

async fn healthz(State(s): State<AppState>) -> impl IntoResponse {
    let Some(since) = s.health.stalled_for() else {
        s.health.stall_logged.store(false, Ordering::Relaxed);
        return (StatusCode::OK, "ok\n".to_string());
    };
    let allowed = s.health.stall_after.unwrap_or_default();
    if !s.health.stall_logged.swap(true, Ordering::Relaxed) {
        tracing::error!(
            since_s = since.as_secs(),
            max_poll_interval_ms = allowed.as_millis() as u64,
            "the worker has stopped polling its consumer; /healthz fails so that it is restarted"
        );
    }
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "not alive: the worker has not polled its consumer for {} s, longer than \
             max.poll.interval.ms ({} ms): it is out of its consumer group; restart it\n",
            since.as_secs(),
            allowed.as_millis()
        ),
    )
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

/// What one client can hold of the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once. Prometheus servers, the kubelet's probes
    /// and an operator's `curl` need a handful.
    pub max_connections: usize,
    /// How long a connection may stay open from its acceptance. A scrape
    /// or probe takes milliseconds; a client that keeps its connection for
    /// the next scrape opens a new one after this.
    pub connection_lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 32,
            connection_lifetime: Duration::from_secs(30),
        }
    }
}

/// Accepts connections within [`Limits`]: past `max_connections` the
/// oldest open connection is told to close, and each connection fails its
/// next read or write once closed this way or past its lifetime, which ends
/// it.
struct BoundedListener {
    inner: TcpListener,
    open: Arc<OpenConnections>,
    lifetime: Duration,
}

/// The open connections, oldest first, each with the token that closes it.
struct OpenConnections {
    max: usize,
    list: std::sync::Mutex<std::collections::VecDeque<(u64, CancellationToken)>>,
    next_id: AtomicU64,
}

impl OpenConnections {
    /// Makes room for one more connection and registers it.
    fn admit(&self) -> (u64, CancellationToken) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        // A poisoned lock only means a panic elsewhere while it was held;
        // the list itself is always whole.
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        while list.len() >= self.max.max(1) {
            if let Some((_, oldest)) = list.pop_front() {
                oldest.cancel();
            }
        }
        list.push_back((id, token.clone()));
        (id, token)
    }

    fn release(&self, id: u64) {
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = list.iter().position(|(open, _)| *open == id) {
            list.remove(at);
        }
    }
}

impl axum::serve::Listener for BoundedListener {
    type Io = BoundedStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    let (id, token) = self.open.admit();
                    let io = BoundedStream {
                        stream,
                        id,
                        open: self.open.clone(),
                        closed: Box::pin(token.cancelled_owned()),
                        deadline: Box::pin(tokio::time::sleep(self.lifetime)),
                    };
                    return (io, addr);
                }
                Err(e) => {
                    // Out of file descriptors, or a connection reset before
                    // it was taken: waiting a moment lets the cause pass
                    // instead of spinning on it.
                    tracing::debug!(error = %e, "metrics endpoint: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection counted among the open ones until dropped.
struct BoundedStream {
    stream: TcpStream,
    id: u64,
    open: Arc<OpenConnections>,
    closed: Pin<Box<WaitForCancellationFutureOwned>>,
    deadline: Pin<Box<Sleep>>,
}

impl Drop for BoundedStream {
    fn drop(&mut self) {
        self.open.release(self.id);
    }
}

impl BoundedStream {
    /// Polling the token and the deadline registers the task's waker with
    /// them, so an idle connection whose read is pending is woken and ended.
    fn ended(&mut self, cx: &mut Context<'_>) -> Option<std::io::Error> {
        let reason = if self.closed.as_mut().poll(cx).is_ready() {
            "metrics endpoint connection closed to make room for a newer one"
        } else if self.deadline.as_mut().poll(cx).is_ready() {
            "metrics endpoint connection open too long"
        } else {
            return None;
        };
        Some(std::io::Error::new(std::io::ErrorKind::TimedOut, reason))
    }
}

impl AsyncRead for BoundedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.ended(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for BoundedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if let Some(e) = this.ended(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        if let Some(e) = this.ended(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

/// Binds `addr` and serves the endpoints on the current tokio runtime until
/// the returned task is aborted, within the default [`Limits`]. Returns the
/// bound address (port 0 → a free port).
pub async fn serve(
    addr: SocketAddr,
    metrics_handle: Arc<Metrics>,
    health: Arc<Health>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), HttpError> {
    serve_within(addr, metrics_handle, health, Limits::default()).await
}

/// [`serve`] within the given limits.
pub async fn serve_within(
    addr: SocketAddr,
    metrics_handle: Arc<Metrics>,
    health: Arc<Health>,
    limits: Limits,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), HttpError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|error| HttpError::Bind { addr, error })?;
    let bound = listener
        .local_addr()
        .map_err(|error| HttpError::Bind { addr, error })?;
    let listener = BoundedListener {
        inner: listener,
        open: Arc::new(OpenConnections {
            max: limits.max_connections,
            list: std::sync::Mutex::new(std::collections::VecDeque::new()),
            next_id: AtomicU64::new(0),
        }),
        lifetime: limits.connection_lifetime,
    };
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
    use tokio::net::TcpStream;
    use tokio::task::JoinHandle;

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

    /// The endpoints on a free port, within `limits`.
    async fn serving(limits: Limits, health: Arc<Health>) -> (SocketAddr, JoinHandle<()>) {
        let m = Arc::new(Metrics::new(&crate::config::Config::default().metrics).unwrap());
        serve_within("127.0.0.1:0".parse().unwrap(), m, health, limits)
            .await
            .unwrap()
    }

    /// Whether the server closes the connection without an answer, within
    /// a bound long enough never to be reached by a server that does.
    async fn closed_unanswered(mut s: TcpStream) -> bool {
        let mut out = Vec::new();
        match tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out)).await {
            Ok(_) => out.is_empty(),
            Err(_) => false,
        }
    }

    #[tokio::test]
    async fn past_the_bound_the_oldest_connection_is_closed_and_the_new_one_served() {
        let limits = Limits {
            max_connections: 2,
            connection_lifetime: Duration::from_secs(600),
        };
        let (addr, task) = serving(limits, Arc::new(Health::default())).await;
        let first = TcpStream::connect(addr).await.unwrap();
        let _second = TcpStream::connect(addr).await.unwrap();
        // Connections are accepted in the order they were made, so this
        // third one finds the first two open.
        assert!(get_path(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(
            closed_unanswered(first).await,
            "the oldest connection stayed open"
        );
        task.abort();
    }

    #[tokio::test]
    async fn a_connection_is_ended_at_its_lifetime_idle_or_slow() {
        let limits = Limits {
            max_connections: 4,
            connection_lifetime: Duration::from_millis(300),
        };
        let (addr, task) = serving(limits, Arc::new(Health::default())).await;
        let idle = TcpStream::connect(addr).await.unwrap();
        assert!(
            closed_unanswered(idle).await,
            "an idle connection stayed open"
        );
        // A request whose headers never end, sent a byte at a time.
        let slow = TcpStream::connect(addr).await.unwrap();
        let (mut reader, mut writer) = slow.into_split();
        let trickle = tokio::spawn(async move {
            let _ = writer.write_all(b"GET /metrics HTTP/1.1\r\n").await;
            loop {
                if writer.write_all(b"X").await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        let mut out = Vec::new();
        let ended =
            tokio::time::timeout(Duration::from_secs(20), reader.read_to_end(&mut out)).await;
        assert!(
            ended.is_ok(),
            "a request sent byte by byte held its connection"
        );
        trickle.abort();
        // The endpoint still answers a client that asks in time.
        assert!(get_path(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        task.abort();
    }

    #[tokio::test]
    async fn healthz_fails_once_the_worker_stops_polling_and_not_while_it_drains() {
        let h = Arc::new(Health::watching_polls(Duration::from_secs(1)));
        let (addr, task) = serving(Limits::default(), h.clone()).await;
        // A worker still waiting for its brokers has not polled yet.
        assert!(get_path(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        h.polled();
        assert!(get_path(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        let stalled = tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                let reply = get_path(addr, "/healthz").await;
                if reply.starts_with("HTTP/1.1 503") {
                    return reply;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("healthz never failed after polls stopped");
        assert!(
            stalled.contains("max.poll.interval.ms (1000 ms)"),
            "{stalled}"
        );
        // The drain stops polling on purpose, under its own deadline.
        h.begin_drain();
        assert!(get_path(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        task.abort();
    }

    #[test]
    fn a_health_not_watching_polls_never_stalls() {
        let h = Health::default();
        h.polled();
        assert_eq!(h.stalled_for(), None);
    }

    #[tokio::test]
    async fn endpoints_answer_with_meaningful_status() {
        let h = Arc::new(Health::default());
        let (addr, task) = serving(Limits::default(), h.clone()).await;
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
