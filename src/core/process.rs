//! process().
use super::*;

/// Turns one input record into exactly one terminal output and one audit row.
pub fn process(
    value: Option<&[u8]>,
    meta: &RecordMeta<'_>,
    now_nanos: i64,
    settings: &CoreSettings,
) -> Outcome {
    let _ = (value, meta, now_nanos, settings);
    Outcome {
        kind: OutcomeKind::DeadLetter,
        request_id: None,
        terminal: Terminal::DeadLetter(DeadLetter {
            kind: DeadLetterKind::Schema,
            detail: String::new(),
        }),
        audit: Vec::new(),
        summary: Summary::default(),
    }
}
