//! `process` on raw record bytes, under settings that run every check.
#![no_main]

use groundgate::core::CoreSettings;
use groundgate::fuzzing;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SETTINGS: CoreSettings = fuzzing::settings();
}

fuzz_target!(|data: &[u8]| {
    SETTINGS.with(|s| fuzzing::check_record(data, s));
});
