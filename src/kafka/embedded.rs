//! The embedded broker: librdkafka's in-process mock cluster, a real
//! wire-protocol Kafka broker that keeps everything in memory. Used by
//! `dev-broker`, `demo`, `bench` and the tests, never by `run`. It is NOT
//! durable and NOT a production broker: it keeps roughly 5 MB / 100k
//! messages per partition, does not enforce `read_committed`, does not store
//! offsets committed inside a transaction, and checks the sequence numbers
//! of transactional producers only. So when it is made to refuse a produce
//! request (tests inject errors through [`EmbeddedBroker::cluster`]) while
//! an idempotent producer's next request for the same partition is in
//! flight, it appends that next one, and librdkafka then reports the refused
//! batch delivered too. Tests that inject produce errors keep one request in
//! flight.
//!
//! The mock listens on a random port. To offer a stable address (so a worker
//! can be killed and restarted against a long-lived `dev-broker`), a TCP
//! forwarder listens on the requested port and relays to the mock; clients
//! bootstrap through it and then follow the broker's advertised address.

use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;
use tokio::net::{TcpListener, TcpStream};
use tracing::warn;

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("cannot start the embedded broker: {0}")]
    Start(rdkafka::error::KafkaError),
    #[error("cannot create topic {topic} on the embedded broker: {source}")]
    Topic {
        topic: String,
        source: rdkafka::error::KafkaError,
    },
    #[error(
        "cannot listen on 127.0.0.1:{port} for the embedded broker: {source}; choose another port with --port (--port 0 picks a free one and prints it as bootstrap=HOST:PORT)"
    )]
    Listen { port: u16, source: std::io::Error },
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    #[error("cannot install the signal handler: {0}")]
    Signal(std::io::Error),
}

/// An in-memory broker living as long as this value.
pub struct EmbeddedBroker {
    cluster: MockCluster<'static, DefaultProducerContext>,
}

impl EmbeddedBroker {
    /// Starts a one-broker mock cluster with `topics` created, each with
    /// `partitions` partitions.
    pub fn start(partitions: i32, topics: &[&str]) -> Result<EmbeddedBroker, EmbeddedError> {
        Self::start_with_brokers(1, partitions, topics)
    }

    /// Like [`EmbeddedBroker::start`] with `brokers` brokers (ids 1..=brokers),
    /// so tests can move coordinators and leaders between them.
    pub fn start_with_brokers(
        brokers: i32,
        partitions: i32,
        topics: &[&str],
    ) -> Result<EmbeddedBroker, EmbeddedError> {
        let cluster = MockCluster::new(brokers.max(1)).map_err(EmbeddedError::Start)?;
        for t in topics {
            cluster
                .create_topic(t, partitions.max(1), brokers.clamp(1, 3))
                .map_err(|source| EmbeddedError::Topic {
                    topic: t.to_string(),
                    source,
                })?;
        }
        Ok(EmbeddedBroker { cluster })
    }

    /// The bootstrap address of the mock broker itself (random port).
    pub fn bootstrap(&self) -> String {
        self.cluster.bootstrap_servers()
    }

    /// For fault injection in tests: broker down/up, request errors, coordinator moves.
    pub fn cluster(&self) -> &MockCluster<'static, DefaultProducerContext> {
        &self.cluster
    }

    /// Listens on `127.0.0.1:port` (0 = any) and relays every connection to
    /// the mock broker; returns the bound address. Runs until the runtime stops.
    pub async fn forward_from(&self, port: u16) -> Result<String, EmbeddedError> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| EmbeddedError::Listen { port, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| EmbeddedError::Listen { port, source })?;
        let target = self.bootstrap();
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let target = target.clone();
                tokio::spawn(async move {
                    match TcpStream::connect(&target).await {
                        Ok(mut outbound) => {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                        Err(e) => {
                            warn!(error = %e, "embedded broker forwarder cannot reach the mock broker")
                        }
                    }
                });
            }
        });
        Ok(bound.to_string())
    }
}
