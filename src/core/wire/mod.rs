//! Wire formats: what an input record looks like on the wire
//! ([`decode`](self::decode())), and the canonical shapes of every output
//! (`output`). Pure: bytes in, typed values out, and back.

mod decode;
mod output;

pub use decode::*;
pub use output::*;
