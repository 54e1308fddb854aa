//! Validates the shipped deploy artefacts with the real tools (promtool):
//! the configuration and rules parse, and each alert fires on the series of
//! its unit tests. It must not need a container engine or a broker.

use std::process::Command;

use crate::common::{need_tool, succeeded};

fn promtool(args: &[&str]) -> Vec<u8> {
    succeeded(
        Command::new("promtool")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        "promtool",
    )
}

#[test]
fn prometheus_config_is_valid() {
    if !need_tool("prometheus_config_is_valid", "promtool", "prometheus") {
        return;
    }
    promtool(&["check", "config", "deploy/prometheus/prometheus.yml"]);
}

#[test]
fn alert_rules_are_valid_and_each_has_a_runbook() {
    if !need_tool(
        "alert_rules_are_valid_and_each_has_a_runbook",
        "promtool",
        "prometheus",
    ) {
        return;
    }
    promtool(&["check", "rules", "deploy/prometheus/alerts.yml"]);
    let rules = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus/alerts.yml"),
    )
    .unwrap();
    let alerts = rules.matches("- alert:").count();
    assert!(alerts >= 6);
    assert_eq!(rules.matches("runbook:").count(), alerts);
}

/// The alert rules fire, and stay silent, on the series of
/// `tests/prometheus/alerts_test.yml`, and that file makes every alert fire
/// at least once. promtool compares annotations too; the rules are run
/// without theirs (a case states the labels, not the runbook text again).
#[test]
fn alert_rules_fire_on_the_series_their_unit_tests_feed_them() {
    use serde_yaml_ng::Value;
    if !need_tool(
        "alert_rules_fire_on_the_series_their_unit_tests_feed_them",
        "promtool",
        "prometheus",
    ) {
        return;
    }
    let read = |path: &str| -> Value {
        let text = std::fs::read_to_string(crate::common::repo(path)).unwrap();
        serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let mut rules = read("deploy/prometheus/alerts.yml");
    let mut alerts = Vec::new();
    for group in rules["groups"].as_sequence_mut().unwrap() {
        for rule in group["rules"].as_sequence_mut().unwrap() {
            let rule = rule.as_mapping_mut().unwrap();
            rule.remove("annotations");
            alerts.push(rule["alert"].as_str().unwrap().to_string());
        }
    }
    let mut cases = read("tests/prometheus/alerts_test.yml");
    cases["rule_files"] = Value::Sequence(vec![Value::from("alerts.yml")]);
    let fired: std::collections::BTreeSet<&str> = cases["tests"]
        .as_sequence()
        .unwrap()
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_sequence().unwrap())
        .filter(|c| c["exp_alerts"].as_sequence().is_some_and(|a| !a.is_empty()))
        .map(|c| c["alertname"].as_str().unwrap())
        .collect();
    let untested: Vec<&String> = alerts
        .iter()
        .filter(|a| !fired.contains(a.as_str()))
        .collect();
    assert!(
        untested.is_empty(),
        "no case in tests/prometheus/alerts_test.yml makes these fire: {untested:?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, v: &Value| {
        std::fs::write(dir.path().join(name), serde_yaml_ng::to_string(v).unwrap()).unwrap();
    };
    write("alerts.yml", &rules);
    write("alerts_test.yml", &cases);
    // promtool reports a failed case on standard output.
    let out = Command::new("promtool")
        .args(["test", "rules", "alerts_test.yml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "promtool test rules:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
