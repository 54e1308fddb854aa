//! `groundgate eval`: prints how well the grounding check separates labelled
//! supported and unsupported answers, one table row per file (and per
//! `--by` group), the naive baselines beside it; `--fit` fits the model's
//! coefficients instead, with k-fold cross-validation and each file held
//! out. The scoring is `crate::batch::eval`; this file only prints.

use std::io::{self, Write};
use std::process::ExitCode;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};

use crate::batch::eval::{
    EvalError, NO_FIELD, Row, Scored, cross_validate, distinct_inputs, fit, leave_one_file_out,
    load_config, naive_shared, rows, score_file,
};
use crate::cli::EvalArgs;
use crate::core::GroundingModel;
use crate::core::grounding::model::coefficient_names;
use crate::terminal::{Escaped, escape, escape_lines};

pub fn main(args: EvalArgs) -> ExitCode {
    match run(&args) {
        // `eval … | head` closes the pipe early: stop quietly, no panic.
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln_lossy!("groundgate eval: cannot write the report to standard output: {e}");
            ExitCode::from(super::EXIT_USAGE)
        }
        Err(e) => {
            eprintln_lossy!("groundgate eval: {}", escape_lines(&e.to_string()));
            ExitCode::from(super::EXIT_USAGE)
        }
    }
}

fn run(args: &EvalArgs) -> Result<io::Result<()>, EvalError> {
    distinct_inputs(&args.inputs)?;
    let config = load_config(args)?;
    if args.inputs.iter().any(|p| p.as_os_str() == "-") {
        super::note_terminal_stdin("eval");
    }
    let mut files = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        files.push(score_file(
            path,
            &config,
            &args.label_field,
            args.by.as_deref(),
        )?);
    }
    // A misspelt field puts every record in one group, which reads as a
    // breakdown that found nothing to break down.
    if let Some(field) = args.by.as_deref() {
        for (i, scored) in files.iter().enumerate() {
            if scored.iter().all(|s| s.group.as_deref() == Some(NO_FIELD)) {
                eprintln_lossy!(
                    "groundgate eval: no record of {} has the field {} that --by names: its only group is {NO_FIELD}",
                    Escaped(&name(args, i)),
                    Escaped(field)
                );
            }
        }
    }
    // Markers in another style (`[1]`) leave every claim uncited, and an
    // uncited answer counts as fully supported: the row would read as a
    // check that separates nothing, not as input it cannot read.
    for (i, scored) in files.iter().enumerate() {
        if scored.iter().all(|s| s.evidence.is_empty()) {
            eprintln_lossy!(
                "groundgate eval: no answer of {} has a claim citing a source with a [^N] marker, so each counts as fully supported and its figures measure nothing: groundgate reads [^N] markers only ([^1] cites the first source), and markers written otherwise ([1], (1), 【1】) are plain text to it",
                Escaped(&name(args, i))
            );
        }
    }
    let most = files.iter().map(Vec::len).max().unwrap_or(0);
    if args.fit && args.folds > most {
        return Err(EvalError::Folds {
            folds: args.folds,
            most,
        });
    }
    if args.fit {
        let records: usize = files.iter().map(Vec::len).sum();
        let unsupported = files.iter().flatten().filter(|s| s.unsupported).count();
        let one = match unsupported {
            0 => Some(("supported", "unsupported")),
            n if n == records => Some(("unsupported", "supported")),
            _ => None,
        };
        if let Some((label, other)) = one {
            return Err(EvalError::OneLabel {
                records,
                label,
                other,
            });
        }
    }
    let out = &mut io::stdout().lock();
    let min_support = config.core.grounding.min_support;
    Ok(if args.fit {
        print_fit(out, args, &files, min_support)
    } else {
        let model = match config.core.grounding.model() {
            GroundingModel::Shipped => "the shipped model",
            GroundingModel::Configured => "the model set in [grounding] coefficients",
        };
        print_report(out, args, &files, min_support, model)
    })
}

/// An input's name in the rows: its file name or, where two inputs share
/// one (`week1/labelled.jsonl`, `week2/labelled.jsonl`), the path as given,
/// so that their rows are told apart (as `check` names its inputs).
fn name(args: &EvalArgs, i: usize) -> String {
    let base = |p: &std::path::Path| {
        p.file_name()
            .map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into())
    };
    let own = base(&args.inputs[i]);
    if args.inputs.iter().filter(|p| base(p) == own).count() > 1 {
        args.inputs[i].display().to_string()
    } else {
        own
    }
}

fn f3(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}"))
}

fn all_rows(args: &EvalArgs, files: &[Vec<Scored>]) -> Vec<Row> {
    files
        .iter()
        .enumerate()
        .flat_map(|(i, scored)| rows(&name(args, i), scored))
        .collect()
}

/// The table: one row per file and per `--by` group of it.
fn table(args: &EvalArgs, files: &[Vec<Scored>]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "file",
        "records (unsupported)",
        "AUC",
        "bal. acc",
        "precision",
        "recall",
        "flagged",
        "best min_support (bal. acc)",
        "naive AUC (all / content words)",
        "naive best bal. acc (all / content)",
    ]);
    for r in &all_rows(args, files) {
        let label = match &r.group {
            Some(g) => format!(
                "  {}={}",
                Escaped(args.by.as_deref().unwrap_or("")),
                Escaped(g)
            ),
            None => escape(&r.file).into_owned(),
        };
        t.add_row(vec![
            label,
            format!("{} ({})", r.records, r.unsupported),
            f3(r.auc),
            f3(r.balanced_accuracy),
            f3(r.precision),
            f3(r.recall),
            format!("{:.1} %", 100.0 * r.flagged),
            match (r.best_min_support, r.best_balanced_accuracy) {
                (Some(t), Some(a)) => format!("{t:.4} ({a:.3})"),
                _ => "n/a".to_string(),
            },
            format!("{} / {}", f3(r.naive_auc), f3(r.naive_content_auc)),
            format!(
                "{} / {}",
                f3(r.naive_best_balanced_accuracy),
                f3(r.naive_content_best_balanced_accuracy)
            ),
        ]);
    }
    t
}

fn print_report(
    out: &mut impl Write,
    args: &EvalArgs,
    files: &[Vec<Scored>],
    min_support: f64,
    model: &str,
) -> io::Result<()> {
    if args.json {
        let all = all_rows(args, files);
        let text = crate::terminal::to_json(&all, true).map_err(io::Error::other)?;
        return writeln!(out, "{text}");
    }
    let t = table(args, files);
    writeln!(
        out,
        "grounding ({model}): an answer is flagged unsupported_claim when a claim's support < min_support {min_support}; \
         precision and recall of that finding; naive: share of the answer's words (all, or content words: \
         stop words left out) found in the sources, best threshold\n{t}"
    )?;
    print_naive_shared(out, args, files)?;
    if args.misses > 0 {
        for (i, scored) in files.iter().enumerate() {
            print_misses(out, &name(args, i), scored, args.misses)?;
        }
    }
    Ok(())
}

/// The naive baselines at one threshold for every file, as the check runs
/// at one `min_support`: the fair comparison with the "bal. acc" column
/// (the table's naive columns pick each file's own best threshold).
fn print_naive_shared(
    out: &mut impl Write,
    args: &EvalArgs,
    files: &[Vec<Scored>],
) -> io::Result<()> {
    for (what, content) in [("naive", false), ("naive, content words", true)] {
        let share = |s: &Scored| if content { s.naive_content } else { s.naive };
        let pairs: Vec<Vec<(f64, bool)>> = files
            .iter()
            .map(|f| f.iter().map(|s| (share(s), s.unsupported)).collect())
            .collect();
        let Some((threshold, accuracies)) = naive_shared(&pairs) else {
            return Ok(());
        };
        let each: Vec<String> = accuracies
            .iter()
            .enumerate()
            .filter_map(|(i, a)| a.map(|a| format!("{} {a:.3}", Escaped(&name(args, i)))))
            .collect();
        writeln!(
            out,
            "{what} at one threshold for all files ({threshold:.4}, the best mean balanced accuracy): {}",
            each.join(", ")
        )?;
    }
    Ok(())
}

fn print_misses(out: &mut impl Write, file: &str, scored: &[Scored], n: usize) -> io::Result<()> {
    let mut misses: Vec<&Scored> = scored
        .iter()
        .filter(|s| s.flagged != s.unsupported)
        .collect();
    // Worst first: supported answers scored lowest, unsupported ones highest.
    let wrongness = |s: &Scored| {
        if s.unsupported {
            s.score
        } else {
            1.0 - s.score
        }
    };
    misses.sort_by(|a, b| {
        wrongness(b)
            .total_cmp(&wrongness(a))
            .then(a.line.cmp(&b.line))
    });
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec!["line", "request_id", "label", "score", "answer"]);
    for s in misses.iter().take(n) {
        let mut answer: String = s.answer.chars().take(100).collect();
        if answer.len() < s.answer.len() {
            answer.push('…');
        }
        t.add_row(vec![
            s.line.to_string(),
            escape(&s.request_id).into_owned(),
            if s.unsupported {
                "unsupported"
            } else {
                "supported"
            }
            .to_string(),
            format!("{:.3}", s.score),
            escape(&answer).into_owned(),
        ]);
    }
    writeln!(
        out,
        "{}: worst misses ({} in all):\n{t}",
        Escaped(file),
        misses.len()
    )
}

/// Fewest records of each label in a file that `--fit` takes without a
/// note that the fit is unreliable.
const FEW_TO_FIT: usize = 100;

fn print_fit(
    out: &mut impl Write,
    args: &EvalArgs,
    files: &[Vec<Scored>],
    min_support: f64,
) -> io::Result<()> {
    let rescored = |predicted: Vec<Vec<f64>>| -> Vec<Vec<Scored>> {
        files
            .iter()
            .zip(&predicted)
            .map(|(scored, preds)| {
                scored
                    .iter()
                    .zip(preds)
                    .map(|(s, &p)| Scored {
                        score: p,
                        flagged: crate::core::grounding::is_unsupported(p, min_support),
                        ..s.clone()
                    })
                    .collect()
            })
            .collect()
    };
    let cv = rescored(cross_validate(files, args.folds));
    let held_out = leave_one_file_out(files).map(rescored);
    let all: Vec<Vec<&Scored>> = files.iter().map(|f| f.iter().collect()).collect();
    let w = fit(&all);
    let folds = args.folds;
    if args.json {
        let coefficients: serde_json::Map<String, serde_json::Value> = coefficient_names()
            .zip(w)
            .map(|(name, v)| (name.to_string(), v.into()))
            .collect();
        let report = serde_json::json!({
            "folds": folds,
            "min_support": min_support,
            "cross_validated": all_rows(args, &cv),
            "leave_one_file_out": held_out.as_ref().map(|h| all_rows(args, h)),
            "coefficients": coefficients,
        });
        let text = crate::terminal::to_json(&report, true).map_err(io::Error::other)?;
        return writeln!(out, "{text}");
    }
    // A model fitted on a handful of answers fits them, not the stream:
    // say so before the figures that would suggest otherwise.
    for (i, scored) in files.iter().enumerate() {
        let unsupported = scored.iter().filter(|s| s.unsupported).count();
        let supported = scored.len() - unsupported;
        if supported.min(unsupported) < FEW_TO_FIT {
            writeln!(
                out,
                "note: {} holds {supported} supported and {unsupported} unsupported records; \
                 a fit on fewer than {FEW_TO_FIT} of each is unreliable",
                Escaped(&name(args, i))
            )?;
        }
    }
    let t = table(args, &cv);
    writeln!(
        out,
        "{folds}-fold cross-validated (record i of a file in fold i mod {folds}; flagged when support < {min_support}):\n{t}",
    )?;
    if let Some(h) = &held_out {
        writeln!(
            out,
            "each file held out (scored by a fit on the other files, as a set from another source would be):\n{}",
            table(args, h)
        )?;
    }
    // Four decimals, as shipped: a deployment's file and the repository's
    // table then hold the same model.
    let named: Vec<String> = coefficient_names()
        .zip(w)
        .map(|(name, v)| format!("{name} = {v:.4}"))
        .collect();
    writeln!(
        out,
        "coefficients fitted on all inputs, for a configuration file's [grounding] section:\n\
         coefficients = {{ {} }}",
        named.join(", ")
    )?;
    writeln!(
        out,
        "the same, to ship as the built-in model (src/core/grounding/model.rs):\n\
         pub const COEFFICIENTS: [f64; FEATURES + 1] = ["
    )?;
    for (name, v) in coefficient_names().zip(w) {
        writeln!(out, "    {v:.4}, // {name}")?;
    }
    writeln!(out, "];")
}
