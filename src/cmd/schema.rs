//! `groundgate schema`: the JSON Schemas of the records this binary reads
//! and writes, built into it, so the contract a pipeline validates against
//! is the one of the binary it runs (also in `schemas/` of the repository
//! and in the container image).

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use crate::cli::SchemaArgs;
use crate::terminal::escape_lines;

/// Every schema, by name (the file is NAME.schema.json), in the order of
/// the names.
pub const SCHEMAS: &[(&str, &str)] = &[
    ("answer", include_str!("../../schemas/answer.schema.json")),
    (
        "audit-record",
        include_str!("../../schemas/audit-record.schema.json"),
    ),
    (
        "audit-row",
        include_str!("../../schemas/audit-row.schema.json"),
    ),
    (
        "check-dead-letter",
        include_str!("../../schemas/check-dead-letter.schema.json"),
    ),
    (
        "dead-letter-too-large",
        include_str!("../../schemas/dead-letter-too-large.schema.json"),
    ),
    ("eval", include_str!("../../schemas/eval.schema.json")),
    (
        "eval-fit",
        include_str!("../../schemas/eval-fit.schema.json"),
    ),
    ("final", include_str!("../../schemas/final.schema.json")),
    ("retry", include_str!("../../schemas/retry.schema.json")),
    ("seal", include_str!("../../schemas/seal.schema.json")),
    ("summary", include_str!("../../schemas/summary.schema.json")),
    (
        "verify-report",
        include_str!("../../schemas/verify-report.schema.json"),
    ),
];

pub fn main(args: SchemaArgs) -> ExitCode {
    let result = match (&args.name, &args.out) {
        (_, Some(dir)) => write_all(dir),
        (Some(name), None) => print_one(name),
        (None, None) => list(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln_lossy!("groundgate schema: {}", escape_lines(&e));
            ExitCode::from(super::EXIT_USAGE)
        }
    }
}

fn title(text: &str) -> String {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v["title"].as_str().map(str::to_string))
        .unwrap_or_default()
}

/// `text` on standard output (see [`super::stdout_written`]).
fn print(text: &str) -> Result<(), String> {
    let mut out = io::stdout().lock();
    super::stdout_written(out.write_all(text.as_bytes()).and_then(|()| out.flush()))
}

fn list() -> Result<(), String> {
    let width = SCHEMAS.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let lines: String = SCHEMAS
        .iter()
        .map(|(name, text)| format!("{name:width$}  {}\n", title(text)))
        .collect();
    print(&lines)
}

fn print_one(name: &str) -> Result<(), String> {
    // The file's name (`final.schema.json`, as `--out` writes it) names
    // its schema too.
    let wanted = name.strip_suffix(".schema.json").unwrap_or(name);
    let Some((_, text)) = SCHEMAS.iter().find(|(n, _)| *n == wanted) else {
        let names: Vec<&str> = SCHEMAS.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "no schema named {name:?}; the schemas are {}",
            names.join(", ")
        ));
    };
    print(text)
}

fn write_all(dir: &Path) -> Result<(), String> {
    if dir.exists() && !dir.is_dir() {
        return Err(format!(
            "--out {} is not a directory: the schemas are written into one, as NAME.schema.json",
            dir.display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (name, text) in SCHEMAS {
        let path = dir.join(format!("{name}.schema.json"));
        // Written beside and renamed into place, so a write that fails (a
        // full disk) leaves the file there before whole, never cut short.
        let partial = crate::batch::files::partial(&path);
        std::fs::write(&partial, text)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&partial);
                format!("cannot write {}: {e}", path.display())
            })?;
    }
    eprintln_lossy!("wrote {} schemas into {}", SCHEMAS.len(), dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_that_cannot_be_written_leaves_the_file_there_before_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (name, _) = SCHEMAS[0];
        let path = dir.path().join(format!("{name}.schema.json"));
        std::fs::write(&path, "{\"kept\": true}").unwrap();
        // A directory where the new text would be written makes the write fail.
        std::fs::create_dir(dir.path().join(format!("{name}.schema.json.partial"))).unwrap();
        let e = write_all(dir.path()).unwrap_err();
        assert!(e.contains("cannot write"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"kept\": true}");
    }

    #[test]
    fn every_schema_is_written_whole_and_nothing_else_is_left() {
        let dir = tempfile::tempdir().unwrap();
        write_all(dir.path()).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut want: Vec<String> = SCHEMAS
            .iter()
            .map(|(n, _)| format!("{n}.schema.json"))
            .collect();
        want.sort();
        assert_eq!(names, want);
        for (name, text) in SCHEMAS {
            let path = dir.path().join(format!("{name}.schema.json"));
            assert_eq!(std::fs::read_to_string(path).unwrap(), *text);
        }
    }
}
