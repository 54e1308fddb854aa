//! Wire formats: what an input record looks like on the wire
//! ([`decode`](self::decode())), the canonical shapes of every output
//! (`output`), and the Schema Registry header an output value may carry
//! (`frame`). Pure: bytes in, typed values out, and back.

mod decode;
mod frame;
mod output;

pub use decode::*;
pub use frame::*;
pub use output::*;
