//! `process` on a record assembled from adversarial text fragments
//! (`groundgate::fuzzing::Spec`), and the grounding check on its texts.
#![no_main]

use groundgate::core::CoreSettings;
use groundgate::fuzzing::{self, Spec};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SETTINGS: CoreSettings = fuzzing::settings();
}

fuzz_target!(|spec: Spec| {
    let (answer, sources) = spec.texts();
    let sources: Vec<&str> = sources.iter().map(String::as_str).collect();
    fuzzing::check_texts(&answer, &sources);
    SETTINGS.with(|s| fuzzing::check_record(&spec.record(), s));
});
