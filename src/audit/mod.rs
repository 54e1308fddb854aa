//! The sealed audit trail: hash-linked, optionally signed seals over the
//! audit rows, and `groundgate audit verify` / `audit keygen`.
//!
//! - [`seal`]: pure. Builds seal records from the rows a shell writes.
//! - [`verify`]: pure. Judges a trail (rows + seals) read by a shell.
//! - [`keys`]: the key files (PKCS#8 / SPKI PEM): the only file I/O for keys.
//!
//! The seal and verify modules must not read files, the clock or the
//! environment; the shells (`check`, the worker, `audit verify` in
//! `crate::cmd`) do that and pass values in.

pub mod keys;
pub mod seal;
pub mod verify;

pub use seal::{ChainHead, ChainId, Sealer, Written};
