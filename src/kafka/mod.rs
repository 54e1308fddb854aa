//! Kafka shell
