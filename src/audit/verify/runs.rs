//! The runs of `check` in a trail. A seal names its chain (the input), which
//! every run over that input names alike, so `check` also names its run in
//! every seal and states in each final seal how many chains the run sealed:
//! a chain belongs to the run its last seal names, every seal of it must
//! name that run, and a run must hold as many chains as its final seals
//! state. Pure; each chain is judged on its own in the parent module.

use std::collections::BTreeMap;

use super::chain::{Chain, SealRec};
use super::report::{Problem, ProblemKind, Report, RunReport};
use crate::audit::seal::ChainId;

/// The run a line of a trail names when it is a seal: `None` for a line
/// that is not a seal, `Some(None)` for a seal naming no run (a worker's,
/// or one of a `check` that did not name its runs). A line is told by its
/// `type` alone; judging it is the verifier's.
pub fn seal_run(line: &[u8]) -> Option<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Seal {
        #[serde(rename = "type")]
        kind: Option<String>,
        run: Option<serde_json::Value>,
    }
    // Rows far outnumber seals: most lines are not parsed at all.
    memchr::memmem::find(line, crate::audit::seal::SEAL_TYPE.as_bytes())?;
    let seal: Seal = serde_json::from_slice(line).ok()?;
    (seal.kind.as_deref() == Some(crate::audit::seal::SEAL_TYPE))
        .then(|| seal.run.and_then(|r| r.as_str().map(str::to_string)))
}

/// Holds a report to the runs of `check` the trail was expected to be
/// (`--run`, ids kept from `check`'s summary): every run found must be one
/// of them, and so must every chain `check` sealed (one naming no run is
/// none of them), and each of them must be found. Runs are judged whole
/// before this, so a run found is complete. Nothing is expected when
/// `expected` is empty.
pub fn expect_runs(report: &mut Report, expected: &[String]) {
    if expected.is_empty() {
        return;
    }
    let mut problems = Vec::new();
    for r in report.runs.iter().filter(|r| !expected.contains(&r.run)) {
        problems.push(Problem {
            run: Some(r.run.clone()),
            ..Problem::new(
                ProblemKind::RunUnexpected,
                None,
                format!("run {} is not one of the runs given with --run", r.run),
            )
        });
    }
    for chain in &report.unbound_chains {
        problems.push(Problem::new(
            ProblemKind::RunUnexpected,
            None,
            format!("chain {chain} was sealed by a `check` naming no run: not one of the runs given with --run"),
        ));
    }
    let mut seen: Vec<&String> = Vec::new();
    for run in expected {
        if seen.contains(&run) || report.runs.iter().any(|r| &r.run == run) {
            continue;
        }
        seen.push(run);
        problems.push(Problem {
            run: Some(run.clone()),
            ..Problem::new(
                ProblemKind::RunAbsent,
                None,
                format!("run {run}, given with --run, has no chain in the trail"),
            )
        });
    }
    report.problems.extend(problems);
}

/// Most chain names or seal numbers a problem lists; a run may have
/// thousands of inputs.
const LISTED: usize = 10;

pub(super) struct Runs {
    pub(super) problems: Vec<Problem>,
    pub(super) runs: Vec<RunReport>,
    /// Chains of `check`'s whose seals name no run (`topic/partition`).
    pub(super) unbound: Vec<String>,
    /// The run of each chain bound to one.
    pub(super) of_chain: BTreeMap<ChainId, String>,
}

/// What one run's chains in the trail say.
#[derive(Default)]
struct Found<'c> {
    chains: Vec<&'c ChainId>,
    /// The count each final seal of the run states, with its chain.
    stated: Vec<(u64, &'c ChainId)>,
}

/// Groups the chains `check` sealed by run and judges each run whole.
pub(super) fn judge(chains: &BTreeMap<ChainId, Chain>) -> Runs {
    let mut out = Runs {
        problems: Vec::new(),
        runs: Vec::new(),
        unbound: Vec::new(),
        of_chain: BTreeMap::new(),
    };
    let mut found: BTreeMap<&str, Found<'_>> = BTreeMap::new();
    for (id, c) in chains {
        if !c.seals.iter().any(|s| s.by_check) {
            continue;
        }
        let Some(last) = last_seal(&c.seals) else {
            continue;
        };
        let run = last.run.as_deref();
        let mut others: BTreeMap<Option<&str>, Vec<&SealRec>> = BTreeMap::new();
        for s in c.seals.iter().filter(|s| s.run.as_deref() != run) {
            others.entry(s.run.as_deref()).or_default().push(s);
        }
        for (other, seals) in others {
            out.problems.push(mixed(id, run, other, &seals));
        }
        let Some(run) = run else {
            out.unbound.push(name(id));
            continue;
        };
        out.of_chain.insert(id.clone(), run.to_string());
        let f = found.entry(run).or_default();
        f.chains.push(id);
        let finals = c
            .seals
            .iter()
            .filter(|s| s.is_final && s.run.as_deref() == Some(run));
        for s in finals {
            match s.run_inputs {
                Some(n) => f.stated.push((n, id)),
                None => out.problems.push(Problem {
                    offsets: Some((s.first, s.last)),
                    seal_seq: Some(s.seq),
                    at: Some(s.at),
                    run: Some(run.to_string()),
                    ..Problem::new(
                        ProblemKind::SealMalformed,
                        Some(id),
                        format!(
                            "final seal of run {run} states no run_inputs: `check` states on every final seal how many chains its run sealed"
                        ),
                    )
                }),
            }
        }
    }
    for (run, f) in found {
        let mut counts: Vec<u64> = f.stated.iter().map(|(n, _)| *n).collect();
        counts.sort_unstable();
        counts.dedup();
        let inputs = match counts[..] {
            [n] => Some(n),
            _ => None,
        };
        let here = f.chains.len() as u64;
        let detail = if counts.len() > 1 {
            let said: Vec<String> = f
                .stated
                .iter()
                .map(|(n, id)| format!("{n} ({})", name(id)))
                .collect();
            Some(format!(
                "the final seals of run {run} state different numbers of chains: {}; `check` states one number on every final seal of a run",
                listed(&said)
            ))
        } else {
            inputs.filter(|&n| n != here).map(|n| {
                let names: Vec<String> = f.chains.iter().map(|id| name(id)).collect();
                format!(
                    "run {run} sealed {n} input chain(s), as its final seals state, and the trail holds {here} of them ({}): a chain of the run was removed, or replaced by another run's",
                    listed(&names)
                )
            })
        };
        if let Some(detail) = detail {
            out.problems.push(Problem {
                run: Some(run.to_string()),
                ..Problem::new(ProblemKind::RunIncomplete, None, detail)
            });
        }
        out.runs.push(RunReport {
            run: run.to_string(),
            inputs,
            chains: here,
        });
    }
    out
}

/// The chain's last seal: the highest sequence number, the later one read
/// on a tie (the chain's head).
fn last_seal(seals: &[SealRec]) -> Option<&SealRec> {
    seals.iter().max_by_key(|s| s.seq)
}

/// Seals of chain `id` naming `other` (a run, or none) where its last seal
/// names `run`.
fn mixed(id: &ChainId, run: Option<&str>, other: Option<&str>, seals: &[&SealRec]) -> Problem {
    let named = |r: Option<&str>| r.map_or_else(|| "no run".to_string(), |r| format!("run {r}"));
    let numbers: Vec<String> = seals.iter().map(|s| s.seq.to_string()).collect();
    let first = seals.iter().min_by_key(|s| s.at).copied();
    let detail = format!(
        "seal(s) {} name {}, and the chain's last seal names {}: `check` seals a chain within one run, so seals of another run were put into it",
        listed(&numbers),
        named(other),
        named(run)
    );
    Problem {
        offsets: seals
            .iter()
            .map(|s| s.first)
            .min()
            .zip(seals.iter().map(|s| s.last).max()),
        seal_seq: first.map(|s| s.seq),
        at: first.map(|s| s.at),
        run: run.map(str::to_string),
        ..Problem::new(ProblemKind::RunMixed, Some(id), detail)
    }
}

fn name(id: &ChainId) -> String {
    format!("{}/{}", id.topic, id.partition)
}

/// `items` joined, at most [`LISTED`] of them and how many more.
fn listed(items: &[String]) -> String {
    let shown = items[..items.len().min(LISTED)].join(", ");
    match items.len().saturating_sub(LISTED) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::{expect_runs, seal_run};
    use crate::audit::verify::{ProblemKind, Report, RunReport};

    #[test]
    fn a_trail_is_held_to_the_runs_expected_of_it() {
        let found = Report {
            runs: vec![RunReport {
                run: "aa".into(),
                inputs: Some(1),
                chains: 1,
            }],
            unbound_chains: vec!["old.jsonl/0".into()],
            ..Report::default()
        };
        let mut r = found.clone();
        expect_runs(&mut r, &[]);
        assert!(r.problems.is_empty());
        let mut r = found.clone();
        expect_runs(&mut r, &["bb".into(), "aa".into(), "bb".into()]);
        let got: Vec<(ProblemKind, Option<&str>)> = r
            .problems
            .iter()
            .map(|p| (p.kind, p.run.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (ProblemKind::RunUnexpected, None),
                (ProblemKind::RunAbsent, Some("bb")),
            ]
        );
        let mut r = Report {
            unbound_chains: Vec::new(),
            ..found
        };
        expect_runs(&mut r, &["aa".into()]);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
    }

    #[test]
    fn a_seal_line_names_its_run_and_a_row_names_none() {
        let seal = br#"{"chain":{"partition":0,"topic":"a.jsonl"},"run":"0a1b","seq":0,"type":"groundgate.seal/v1"}"#;
        assert_eq!(seal_run(seal), Some(Some("0a1b".to_string())));
        let worker =
            br#"{"chain":{"partition":0,"topic":"answers"},"seq":0,"type":"groundgate.seal/v1"}"#;
        assert_eq!(seal_run(worker), Some(None));
        // A row quoting the seal type in an answer is still a row.
        let row = br#"{"answer":"groundgate.seal/v1","input":{"offset":1},"outcome":"accepted"}"#;
        assert_eq!(seal_run(row), None);
        assert_eq!(seal_run(b"not json groundgate.seal/v1"), None);
    }
}
