//! HTTP endpoints
