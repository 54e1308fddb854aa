//! `groundgate eval`: prints how well the grounding check separates labelled
//! supported and unsupported answers (AUC, accuracy, a threshold sweep, the
//! worst misses). The scoring is `crate::batch::eval`; this file only prints.

use std::io::{self, Write};
use std::process::ExitCode;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use crate::batch::eval::{Confusion, Scored, auc, score_file};
use crate::cli::EvalArgs;
use crate::config::Config;

pub fn main(args: EvalArgs) -> ExitCode {
    match score_file(&args) {
        // `eval … | head` closes the pipe early: stop quietly, no panic.
        Ok((config, scored)) => {
            match print_report(&mut io::stdout().lock(), &args, &config, &scored) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("groundgate eval: cannot write the report to standard output: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Err(e) => {
            eprintln!("groundgate eval: {e}");
            ExitCode::from(2)
        }
    }
}

/// The thresholds of the sweep: 0.05 to 0.95 in steps of 0.05, and the
/// configured `min_support` when it is not one of them. Each is the nearest
/// double to its decimal (`step / 20`, not `step * 0.05`, which gives
/// 0.6000000000000001 for 0.6): the row at the configured value then flags
/// exactly the records the header counts.
fn sweep_thresholds(min_support: f64) -> Vec<f64> {
    let mut v: Vec<f64> = (1..=19).map(|step| f64::from(step) / 20.0).collect();
    if !v.contains(&min_support) {
        v.push(min_support);
        v.sort_by(f64::total_cmp);
    }
    v
}

/// Balanced accuracy, precision and recall as printed: `n/a` where the
/// labels hold one class only (like the AUC), and precision `n/a` when
/// nothing was flagged.
fn rates(c: &Confusion) -> [String; 3] {
    let both = c.has_both_classes();
    let shown = |defined: bool, v: f64| {
        if defined {
            format!("{v:.3}")
        } else {
            "n/a".to_string()
        }
    };
    [
        shown(both, c.balanced_accuracy()),
        shown(both && c.tp + c.fp > 0, c.precision()),
        shown(both, c.recall()),
    ]
}

fn print_report(
    out: &mut impl Write,
    args: &EvalArgs,
    config: &Config,
    scored: &[Scored],
) -> io::Result<()> {
    let min_support = config.core.grounding.min_support;
    let pos = scored.iter().filter(|s| s.unsupported).count();
    writeln!(
        out,
        "{}: {} records ({} unsupported, {} supported); min_support {}",
        args.input.display(),
        scored.len(),
        pos,
        scored.len() - pos,
        min_support
    )?;
    match auc(scored) {
        Some(a) => writeln!(out, "AUC of the grounding score: {a:.3}")?,
        None => writeln!(out, "AUC of the grounding score: n/a (needs both labels)")?,
    }
    let c = Confusion::of(scored.iter().map(|s| (s.unsupported, s.flagged)));
    let [ba, pr, re] = rates(&c);
    writeln!(
        out,
        "unsupported_claim finding: balanced accuracy {ba}, precision {pr}, recall {re}"
    )?;

    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["", "flagged", "not flagged"]);
    t.add_row(vec![
        "labelled unsupported".to_string(),
        c.tp.to_string(),
        c.fn_.to_string(),
    ]);
    t.add_row(vec![
        "labelled supported".to_string(),
        c.fp.to_string(),
        c.tn.to_string(),
    ]);
    writeln!(out, "{t}")?;

    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "min_support",
        "balanced acc",
        "precision",
        "recall",
        "flagged",
    ]);
    for th in sweep_thresholds(min_support) {
        let c = Confusion::of(scored.iter().map(|s| (s.unsupported, s.score < th)));
        let configured = if th == min_support {
            " (configured)"
        } else {
            ""
        };
        let [ba, pr, re] = rates(&c);
        t.add_row(vec![
            format!("{th:.2}{configured}"),
            ba,
            pr,
            re,
            (c.tp + c.fp).to_string(),
        ]);
    }
    writeln!(
        out,
        "threshold sweep (a record is flagged when its score < min_support):\n{t}"
    )?;

    let mut misses: Vec<&Scored> = scored
        .iter()
        .filter(|s| s.flagged != s.unsupported)
        .collect();
    // Worst first: supported answers scored lowest, unsupported ones highest.
    misses.sort_by(|a, b| {
        let wa = if a.unsupported {
            a.score
        } else {
            1.0 - a.score
        };
        let wb = if b.unsupported {
            b.score
        } else {
            1.0 - b.score
        };
        wb.total_cmp(&wa).then(a.line.cmp(&b.line))
    });
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["line", "request_id", "label", "score", "answer"]);
    for s in misses.iter().take(args.misses) {
        let mut answer: String = s.answer.chars().take(100).collect();
        if answer.len() < s.answer.len() {
            answer.push('…');
        }
        t.add_row(vec![
            s.line.to_string(),
            s.request_id.clone(),
            if s.unsupported {
                "unsupported"
            } else {
                "supported"
            }
            .to_string(),
            format!("{:.3}", s.score),
            answer,
        ]);
    }
    writeln!(out, "worst misses ({} in all):\n{t}", misses.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_holds_the_configured_threshold_exactly() {
        let grid = sweep_thresholds(0.6);
        assert_eq!(grid.len(), 19);
        assert!(grid.contains(&0.6), "{grid:?}");
        assert!(grid.contains(&0.15), "{grid:?}");
        let off_grid = sweep_thresholds(0.62);
        assert_eq!(off_grid.len(), 20);
        assert!(off_grid.windows(2).all(|w| w[0] < w[1]), "{off_grid:?}");
        assert!(off_grid.contains(&0.62));
    }
}
