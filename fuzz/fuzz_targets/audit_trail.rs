//! `audit verify`'s reading and judging of a trail file's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    groundgate::fuzzing::check_trail(data);
});
