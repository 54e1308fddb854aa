//! `check`'s reading of an input file: the text plain, packed in gzip and
//! zstd, cut short and corrupted, cut into records under a small size
//! limit (`groundgate::fuzzing::check_input`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    groundgate::fuzzing::check_input(data);
});
