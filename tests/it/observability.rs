//! Validates the shipped deploy artefacts with the real tools (promtool).
//! It must not need a container engine or a broker.

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
