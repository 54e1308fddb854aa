//! Gaps that are no records: input offsets a `read_committed` consumer is
//! never handed. On Kafka, a transaction's commit or abort marker takes an
//! offset of its own, and so does every record of an aborted transaction;
//! a worker reading its input that way receives neither, so it writes no
//! audit row for them. This module takes the gaps the verifier found and
//! what a `read_committed` reader of the input topic was handed over them,
//! and keeps as gaps only the offsets that reader was handed.
//!
//! Pure: the shell reads the input topic and passes what it read in.

use std::collections::BTreeMap;

use super::{Problem, ProblemKind, Report};
use crate::audit::seal::ChainId;

/// What a `read_committed` reader of one input partition was handed over
/// the offsets that were read through.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handed {
    /// Inclusive offset ranges read through to their end; offsets outside
    /// them were not read and stay gaps.
    pub read: Vec<(i64, i64)>,
    /// The offsets handed out within `read`, ascending.
    pub offsets: Vec<i64>,
}

/// The gaps of the verified chains, for the shell to read over.
pub fn gaps(report: &Report) -> Vec<(ChainId, (i64, i64))> {
    report
        .chains
        .iter()
        .flat_map(|c| {
            let id = ChainId {
                topic: c.topic.clone(),
                partition: c.partition,
            };
            c.gaps.iter().map(move |&g| (id.clone(), g))
        })
        .collect()
}

/// Narrows every gap of a chain in `handed` to the offsets the reader was
/// handed, counts the others in the chain's `undelivered`, and rewrites
/// the chain's gap problems to match (where its first one stood).
pub fn narrow(report: &mut Report, handed: &BTreeMap<ChainId, Handed>) {
    for c in &mut report.chains {
        let id = ChainId {
            topic: c.topic.clone(),
            partition: c.partition,
        };
        let Some(h) = handed.get(&id) else {
            continue;
        };
        let mut kept = Vec::new();
        for &gap in &c.gaps {
            let (gaps, skipped) = narrow_one(gap, h);
            kept.extend(gaps);
            c.undelivered += skipped;
        }
        if kept == c.gaps {
            continue;
        }
        c.gaps = kept;
        let ours = |p: &Problem| {
            p.kind == ProblemKind::Gap
                && p.topic.as_deref() == Some(id.topic.as_str())
                && p.partition == Some(id.partition)
        };
        let Some(at) = report.problems.iter().position(ours) else {
            continue;
        };
        report.problems.retain(|p| !ours(p));
        let fresh = c.gaps.iter().map(|&(a, b)| Problem::gap(&id, a, b));
        report.problems.splice(at..at, fresh);
    }
    // A trail with no row whose gaps all narrowed away verified nothing.
    report.mark_nothing_verified();
}

/// One gap narrowed: the ranges still owed a row, and how many offsets the
/// reader read through without being handed them.
fn narrow_one((a, b): (i64, i64), h: &Handed) -> (Vec<(i64, i64)>, u64) {
    let mut owed = Vec::new();
    let mut skipped = 0u64;
    // The first offset of the gap not yet placed; `None` past i64::MAX.
    let mut next = Some(a);
    let push = |owed: &mut Vec<(i64, i64)>, lo: i64, hi: i64| match owed.last_mut() {
        Some(last) if last.1.checked_add(1) == Some(lo) => last.1 = hi,
        _ => owed.push((lo, hi)),
    };
    for &(ra, rb) in &h.read {
        let (lo, hi) = (ra.max(a), rb.min(b));
        let Some(n) = next else { break };
        if lo > hi || hi < n {
            continue;
        }
        let lo = lo.max(n);
        if lo > n {
            // Not read: still owed.
            push(&mut owed, n, lo - 1);
        }
        let start = h.offsets.partition_point(|&o| o < lo);
        let end = h.offsets.partition_point(|&o| o <= hi);
        let given = &h.offsets[start..end];
        for &o in given {
            push(&mut owed, o, o);
        }
        let read = i128::from(hi) - i128::from(lo) + 1;
        skipped += u64::try_from(read).unwrap_or(u64::MAX) - given.len() as u64;
        next = hi.checked_add(1);
    }
    if let Some(n) = next
        && n <= b
    {
        push(&mut owed, n, b);
    }
    (owed, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::verify::ChainReport;

    fn id(p: i32) -> ChainId {
        ChainId {
            topic: "answers".into(),
            partition: p,
        }
    }

    fn report(gaps: &[(i64, i64)]) -> Report {
        let mut r = Report {
            chains: vec![ChainReport {
                topic: "answers".into(),
                partition: 0,
                gaps: gaps.to_vec(),
                ..ChainReport::default()
            }],
            ..Report::default()
        };
        r.problems = gaps
            .iter()
            .map(|&(a, b)| Problem::gap(&id(0), a, b))
            .collect();
        r
    }

    fn handed(read: &[(i64, i64)], offsets: &[i64]) -> BTreeMap<ChainId, Handed> {
        BTreeMap::from([(
            id(0),
            Handed {
                read: read.to_vec(),
                offsets: offsets.to_vec(),
            },
        )])
    }

    #[test]
    fn markers_and_aborted_records_read_through_are_no_gap() {
        // Offsets 10 and 11: a commit marker and an aborted record.
        let mut r = report(&[(10, 11)]);
        r.chains[0].rows = 10;
        narrow(&mut r, &handed(&[(10, 11)], &[]));
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert!(r.chains[0].gaps.is_empty());
        assert_eq!(r.chains[0].undelivered, 2);
    }

    #[test]
    fn a_trail_without_rows_whose_gaps_are_all_markers_verified_nothing() {
        let mut r = report(&[(0, 1)]);
        narrow(&mut r, &handed(&[(0, 1)], &[]));
        assert!(r.chains[0].gaps.is_empty());
        let kinds: Vec<_> = r.problems.iter().map(|p| p.kind).collect();
        assert_eq!(kinds, vec![ProblemKind::NothingToVerify]);
    }

    #[test]
    fn a_record_the_reader_was_handed_stays_a_gap() {
        // 20..=25 missing rows; the reader was handed 21, 22 and 25 (lost
        // rows), not 20, 23, 24 (markers).
        let mut r = report(&[(20, 25)]);
        narrow(&mut r, &handed(&[(20, 25)], &[21, 22, 25]));
        assert_eq!(r.chains[0].gaps, vec![(21, 22), (25, 25)]);
        assert_eq!(r.chains[0].undelivered, 3);
        let offsets: Vec<_> = r.problems.iter().map(|p| p.offsets).collect();
        assert_eq!(offsets, vec![Some((21, 22)), Some((25, 25))]);
        assert_eq!(
            r.problems[0].detail,
            "2 input offset(s) without an audit row"
        );
    }

    #[test]
    fn offsets_not_read_through_stay_gaps() {
        // Read 105..=107 only (below 105: deleted by retention; past 107:
        // an open transaction the reader could not pass).
        let mut r = report(&[(100, 110)]);
        narrow(&mut r, &handed(&[(105, 107)], &[]));
        assert_eq!(r.chains[0].gaps, vec![(100, 104), (108, 110)]);
        assert_eq!(r.chains[0].undelivered, 3);
    }

    #[test]
    fn other_problems_keep_their_place_and_other_chains_are_untouched() {
        let mut r = report(&[(1, 1), (5, 6)]);
        r.problems.insert(
            0,
            Problem {
                kind: ProblemKind::RowMissing,
                ..Problem::gap(&id(0), 0, 0)
            },
        );
        r.problems.push(Problem::gap(&id(1), 3, 3));
        narrow(&mut r, &handed(&[(1, 6)], &[6]));
        let kinds: Vec<_> = r.problems.iter().map(|p| (p.kind, p.offsets)).collect();
        assert_eq!(
            kinds,
            vec![
                (ProblemKind::RowMissing, Some((0, 0))),
                (ProblemKind::Gap, Some((6, 6))),
                (ProblemKind::Gap, Some((3, 3))),
            ]
        );
    }

    #[test]
    fn a_gap_to_the_end_of_the_offsets_is_narrowed_without_overflow() {
        let mut r = report(&[(i64::MAX - 2, i64::MAX)]);
        narrow(&mut r, &handed(&[(i64::MAX - 2, i64::MAX)], &[i64::MAX]));
        assert_eq!(r.chains[0].gaps, vec![(i64::MAX, i64::MAX)]);
        assert_eq!(r.chains[0].undelivered, 2);
    }
}
