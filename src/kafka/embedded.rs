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

    /// Takes broker `id` down (tests): its clients lose their connections
    /// and it refuses new ones until `cluster().broker_up(id)`.
    ///
    /// The mock closes the broker's listening socket and binds a new one to
    /// the same port at once, and aborts the process if that bind finds the
    /// port taken (seen when two clusters started and took a broker down
    /// together): while nothing holds the port, another socket may be given
    /// it. A connection to each broker, answered, is held through the call,
    /// so the port stays in use; it made the abort rarer, not impossible.
    pub fn broker_down(&self, id: i32) -> Result<(), rdkafka::error::KafkaError> {
        let held: Vec<std::net::TcpStream> = self
            .bootstrap()
            .split(',')
            .filter_map(|addr| answered_connection(addr).ok())
            .collect();
        let down = self.cluster.broker_down(id);
        drop(held);
        down
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

/// A connection to `addr` that the broker has accepted and answered (an
/// ApiVersions request, version 0).
fn answered_connection(addr: &str) -> std::io::Result<std::net::TcpStream> {
    use std::io::{Read, Write};
    const WAIT: std::time::Duration = std::time::Duration::from_secs(5);
    let mut stream = std::net::TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(WAIT))?;
    stream.set_write_timeout(Some(WAIT))?;
    // Size 10; API key 18 (ApiVersions), version 0, correlation id 1, no
    // client id.
    stream.write_all(&[0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff])?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let mut body = vec![0u8; u32::from_be_bytes(size).min(1 << 16) as usize];
    stream.read_exact(&mut body)?;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every broker of the cluster answers the connection held while one
    /// is taken down, and the one taken down comes back on its port.
    #[test]
    fn a_broker_taken_down_is_held_by_an_answered_connection_and_comes_back() {
        let broker = EmbeddedBroker::start_with_brokers(2, 1, &["t"]).unwrap();
        let addrs: Vec<String> = broker.bootstrap().split(',').map(str::to_owned).collect();
        assert_eq!(addrs.len(), 2, "{addrs:?}");
        for addr in &addrs {
            answered_connection(addr).unwrap();
        }
        broker.broker_down(2).unwrap();
        broker.cluster().broker_up(2).unwrap();
        for addr in &addrs {
            answered_connection(addr).unwrap();
        }
    }
}
