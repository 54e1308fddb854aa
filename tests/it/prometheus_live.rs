//! A real Prometheus (the Debian `prometheus` package) scrapes a real worker
//! process working through the shipped sample stream on a dev-broker
//! process. Every PromQL expression of the Grafana dashboard and of the
//! alert rules is then run through Prometheus's HTTP API: each must parse
//! and evaluate, and the core panels must return data. The worker's own
//! counters are checked against what `kcat` finds on the output topics.

use std::net::SocketAddr;
use std::process::Stdio;

use crate::common::*;
use serde_json::Value;

const RECORDS: usize = 300;
const PARTITIONS: u32 = 4;

/// Grafana's template variables, as the dashboard would send them for "All".
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
        .replace("$__range", "5m")
        .replace("$job", "groundgate")
        .replace("$instance", ".*")
}

struct Prom {
    addr: SocketAddr,
}

impl Prom {
    /// Runs an instant query; Err(text) if Prometheus refuses or fails it.
    fn query(&self, q: &str) -> Result<Vec<Value>, String> {
        let (status, body) = http_get(self.addr, &format!("/api/v1/query?query={}", url_encode(q)))
            .ok_or_else(|| "no answer from prometheus".to_string())?;
        let v: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        if status != 200 || v["status"] != "success" {
            return Err(format!("HTTP {status}: {body}"));
        }
        Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
    }

    fn scalar(&self, q: &str) -> Option<f64> {
        let r = self.query(q).ok()?;
        r.first()?["value"][1].as_str()?.parse().ok()
    }
}

fn finite_values(result: &[Value]) -> usize {
    result
        .iter()
        .filter_map(|s| s["value"][1].as_str()?.parse::<f64>().ok())
        .filter(|v| v.is_finite())
        .count()
}

#[test]
fn dashboard_and_alert_queries_evaluate_against_a_scraped_worker() {
    let test = "dashboard_and_alert_queries_evaluate_against_a_scraped_worker";
    // Both checks run first, so a machine missing both says so for both.
    let prometheus = need_tool(test, "prometheus", "prometheus");
    let kcat = need_tool(test, "kcat", "kcat");
    if !(prometheus && kcat) {
        return;
    }
    let panel_exprs = dashboard_exprs();
    assert!(panel_exprs.len() >= 15, "dashboard has its panels");
    let alerts = alert_exprs();

    let (_broker, bs) = dev_broker(PARTITIONS);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("groundgate.toml");
    std::fs::write(
        &config,
        "[kafka]\ngroup_id = \"live\"\ncommit_interval_ms = 200\n[audit]\nseal_interval_ms = 300\n[metrics]\nconsumer_lag = true\nstatistics_interval_ms = 1000\nproviders = [\"openai\", \"anthropic\"]\nmodels = [\"gpt-4o-2024-08-06\", \"claude-sonnet-4\"]\n",
    )
    .unwrap();
    let worker_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut worker = start_worker(&bs, &config, worker_addr, &dir.path().join("run.log"));
    wait_for("the worker to be ready (partitions assigned)", WAIT, || {
        http_get(worker_addr, "/readyz").filter(|(s, _)| *s == 200)
    });

    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let prom_config = dir.path().join("prometheus.yml");
    std::fs::write(
        &prom_config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {rules}\nscrape_configs:\n  - job_name: groundgate\n    static_configs:\n      - targets: [\"{worker_addr}\"]\n",
            rules = repo("deploy/prometheus/alerts.yml").display()
        ),
    )
    .unwrap();
    let mut prom_cmd = std::process::Command::new("prometheus");
    prom_cmd
        .arg(format!("--config.file={}", prom_config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={prom_addr}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap());
    let _prom_proc = Proc::spawn("prometheus", prom_cmd);
    let prom = Prom { addr: prom_addr };
    wait_for("prometheus to scrape the worker", WAIT, || {
        prom.scalar("up{job=\"groundgate\"}").filter(|v| *v == 1.0)
    });

    // Stream the sample at a modest rate, so rates and quantiles have data
    // inside the query window while the worker is being scraped.
    let produced = bin()
        .args(["produce", "--brokers", &bs, "--rate", "150", "--file"])
        .arg(repo("examples/answers.jsonl"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(produced.success());

    // Finished: every input offset committed, which the worker does only
    // once its audit row is sealed (so no seal is still to come), and lag
    // reported (librdkafka reports it once a partition has a commit).
    let metrics = wait_for("the worker to finish and seal the sample", WAIT, || {
        let done = committed(&bs, "live", PARTITIONS as i32)
            .values()
            .sum::<i64>() as usize
            >= RECORDS;
        let (_, body) = http_get(worker_addr, "/metrics")?;
        let lag = body.contains("# TYPE groundgate_consumer_lag_records ");
        (done && lag).then_some(body)
    });

    // Counters agree with the topics, as an independent client reads them.
    let on = |topic: &str| kcat_count(&bs, topic) as f64;
    let outcome = |o: &str| {
        sum_where(
            &metrics,
            "groundgate_records_total",
            &format!("outcome=\"{o}\""),
        )
    };
    let role = |r: &str| {
        sum_where(
            &metrics,
            "groundgate_published_total",
            &format!("role=\"{r}\""),
        )
    };
    let (final_n, retry_n, audit_n, dlq_n) = (
        on("answers.final"),
        on("answers.retry"),
        on("answers.audit"),
        on("answers.dlq"),
    );
    // The audit topic holds one row per record and the seals over them.
    let seals = sum_where(&metrics, "groundgate_audit_seals_total", "");
    assert!(
        seals >= f64::from(PARTITIONS),
        "each input partition sealed: {seals}"
    );
    assert_eq!(audit_n, RECORDS as f64 + seals);
    assert_eq!(outcome("accepted") + outcome("rejected"), final_n);
    assert_eq!(outcome("retry"), retry_n);
    assert_eq!(outcome("dead_letter"), dlq_n);
    assert_eq!(role("final"), final_n);
    assert_eq!(role("retry"), retry_n);
    assert_eq!(role("audit"), RECORDS as f64, "rows, seals not included");
    assert_eq!(role("dead_letter"), dlq_n);
    assert_eq!(
        sum_where(&metrics, "groundgate_dead_letters_total", ""),
        dlq_n,
        "dead letters by kind add up"
    );

    // Every metric the dashboard names is one the worker exports.
    for (title, expr) in &panel_exprs {
        for name in metric_names(expr) {
            assert!(
                metrics.contains(&format!("# TYPE {name} ")),
                "panel {title:?} uses {name}, which the worker does not export"
            );
        }
    }

    wait_for("prometheus to scrape the finished counters", WAIT, || {
        prom.scalar("sum(groundgate_published_total{job=\"groundgate\",role=\"audit\"})")
            .filter(|v| *v as usize >= RECORDS)
    });

    let mut failures = Vec::new();
    for (title, expr) in panel_exprs.iter().chain(&alerts) {
        let q = substitute(expr);
        match prom.query(&q) {
            Ok(result) => {
                let core = [
                    "groundgate_records_total",
                    "groundgate_findings_total",
                    "_seconds_bucket",
                ]
                .iter()
                .any(|m| q.contains(m));
                if core && finite_values(&result) == 0 && !alerts.iter().any(|(_, e)| e == expr) {
                    failures.push(format!("{title}: no data for core panel query {q}"));
                }
            }
            Err(e) => failures.push(format!("{title}: {q}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "failing queries:\n{}",
        failures.join("\n")
    );

    // The rules loaded and are evaluated without errors.
    let (_, rules) = http_get(prom_addr, "/api/v1/rules").unwrap();
    let rules: Value = serde_json::from_str(&rules).unwrap();
    let loaded: Vec<&Value> = rules["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert_eq!(loaded.len(), alerts.len());
    for r in loaded {
        assert_ne!(
            r["health"], "err",
            "rule {} fails: {}",
            r["name"], r["lastError"]
        );
    }

    worker.signal("TERM");
    let status = worker.wait_exit(WAIT).expect("worker stops on SIGTERM");
    assert!(status.success());
}
