//! The deployment artefacts agree with the binary: the compose file
//! validates with `docker-compose config`, the Kubernetes manifests parse and
//! point at what groundgate really serves (probe paths, port, config path,
//! drain deadline vs grace period, topic and group for autoscaling), and the
//! shared configuration file loads with groundgate's own loader; the
//! dashboard and the alert rules name only metrics groundgate exports, and
//! select only label values it exports them with. No
//! container engine or cluster is needed (none exists in CI).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::common::{
    alert_exprs, dashboard_exprs, label_matchers, metric_names, need_tool, repo, succeeded,
};
use groundgate::config::{Config, RawConfig};
use groundgate::core::types::{FindingKind, Mode, OutcomeKind, Summary};
use serde_json::Value;

fn yaml_docs(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(repo(path)).unwrap();
    let mut docs = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let v: Value = serde::Deserialize::deserialize(doc)
            .unwrap_or_else(|e| panic!("{path} is not valid YAML: {e}"));
        if !v.is_null() {
            docs.push(v);
        }
    }
    docs
}

fn one(path: &str) -> Value {
    let mut d = yaml_docs(path);
    assert_eq!(d.len(), 1, "{path} holds one document");
    d.remove(0)
}

fn shared_config() -> Config {
    let text = std::fs::read_to_string(repo("deploy/k8s/groundgate.toml")).unwrap();
    RawConfig::from_toml_str(&text)
        .and_then(RawConfig::validate)
        .unwrap_or_else(|e| panic!("deploy/k8s/groundgate.toml: {e}"))
}

/// `labels` carries every key/value of `selector`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

#[test]
fn compose_file_validates_and_wires_the_stack() {
    if !need_tool(
        "compose_file_validates_and_wires_the_stack",
        "docker-compose",
        "docker-compose",
    ) {
        return;
    }
    let out = succeeded(
        Command::new("docker-compose")
            .args(["-f", "docker-compose.yml", "config"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        "docker-compose config",
    );
    let compose: Value = serde_yaml_ng::from_slice(&out).unwrap();
    let services = compose["services"].as_object().unwrap();
    for s in [
        "kafka",
        "kafka-init",
        "worker-1",
        "worker-2",
        "producer",
        "prometheus",
        "grafana",
    ] {
        assert!(services.contains_key(s), "service {s}");
    }
    assert!(
        services["kafka"]["image"]
            .as_str()
            .unwrap()
            .starts_with("apache/kafka:")
    );
    let kafka_env = services["kafka"]["environment"].to_string();
    assert!(kafka_env.contains("broker,controller"), "KRaft mode");

    for w in ["worker-1", "worker-2"] {
        let cmd: Vec<&str> = services[w]["command"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(cmd.first(), Some(&"run"), "{w} runs the worker");
        assert!(
            services[w].get("build").is_some(),
            "{w} is built from the Dockerfile"
        );
    }
    // The workers start after the preflight of their own configuration.
    let preflight = services["preflight"]["command"].to_string();
    assert!(
        preflight.contains("--preflight") && preflight.contains("/etc/groundgate/groundgate.toml"),
        "{preflight}"
    );
    assert_eq!(
        services["worker-1"]["depends_on"]["preflight"]["condition"],
        "service_completed_successfully"
    );
    let producer = services["producer"]["command"].to_string();
    assert!(
        producer.contains("produce") && producer.contains("--rate"),
        "{producer}"
    );

    // Every bind mount exists in the repository.
    for (name, svc) in services {
        for vol in svc["volumes"].as_array().into_iter().flatten() {
            let source = vol["source"]
                .as_str()
                .or_else(|| vol.as_str().and_then(|s| s.split(':').next()))
                .unwrap();
            if source.starts_with('/') || source.starts_with('.') {
                assert!(
                    Path::new(source).exists() || repo(source).exists(),
                    "{name}: {source}"
                );
            }
        }
    }

    // Prometheus scrapes exactly the compose workers on the metrics port.
    let prom = one("deploy/prometheus/prometheus.yml");
    let targets: Vec<&str> = prom["scrape_configs"][0]["static_configs"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(targets, ["worker-1:9464", "worker-2:9464"]);
    // The worker of the "secured" profile by name, on the same port, so it
    // is a target only while its profile runs.
    let file = one("docker-compose.yml");
    let secured = &file["services"]["worker-secured"];
    assert_eq!(secured["profiles"][0], "secured");
    assert_eq!(secured["hostname"], "worker-secured");
    assert_eq!(secured["ports"][0], "9466:9464");
    let dns = &prom["scrape_configs"][0]["dns_sd_configs"];
    assert_eq!(dns.as_array().map(Vec::len), Some(1), "{dns}");
    assert_eq!(dns[0]["names"], serde_json::json!(["worker-secured"]));
    assert_eq!(dns[0]["type"], "A");
    assert_eq!(dns[0]["port"], 9464);
    assert_eq!(
        prom["scrape_configs"].as_array().map(Vec::len),
        Some(1),
        "one job, as the alerts and the dashboard name it"
    );
}

/// The `max.message.bytes` the compose file's topic-creating `service`
/// sets on each topic of its loop over the five topics.
fn compose_topic_limit(compose: &Value, service: &str) -> i64 {
    let script: String = compose["services"][service]["command"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        script.contains("for t in answers answers.final answers.retry answers.audit answers.dlq"),
        "{service}: {script}"
    );
    let set = "--entity-type topics --entity-name \"$$t\" --add-config max.message.bytes=";
    let mut limits = script.split(set).skip(1).map(|t| {
        t.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<i64>()
            .unwrap()
    });
    let limit = limits
        .next()
        .unwrap_or_else(|| panic!("{service} sets no max.message.bytes on the topics: {script}"));
    assert!(limits.next().is_none(), "{service}: one limit: {script}");
    limit
}

#[test]
fn compose_topics_take_the_largest_message_the_workers_write() {
    let compose = one("docker-compose.yml");
    let largest = shared_config().kafka.max_message_bytes as i64;
    for init in ["kafka-init", "kafka-secured-init"] {
        let limit = compose_topic_limit(&compose, init);
        assert!(
            limit >= largest,
            "{init}: max.message.bytes={limit} < kafka.max_message_bytes {largest}"
        );
    }
}

/// docker-compose.yml as compose reads it: the workers take their
/// settings from an anchor (`<<: *worker`).
fn compose_merged() -> Value {
    let text = std::fs::read_to_string(repo("docker-compose.yml")).unwrap();
    let mut merged: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    merged.apply_merge().unwrap();
    serde_json::to_value(merged).unwrap()
}

/// Every compose service that runs the worker waits longer than its drain
/// deadline before it kills it (compose's own default is 10 s, the drain
/// deadline's default), as the Kubernetes grace period does.
#[test]
fn compose_workers_get_longer_to_stop_than_their_drain() {
    let compose = compose_merged();
    let drain = shared_config().kafka.drain_deadline.as_secs_f64();
    let mut workers = 0;
    for (name, svc) in compose["services"].as_object().unwrap() {
        let runs = svc["command"].as_array().is_some_and(|c| {
            c.first() == Some(&Value::from("run")) && !c.contains(&Value::from("--preflight"))
        });
        if !runs {
            continue;
        }
        workers += 1;
        let grace = svc["stop_grace_period"]
            .as_str()
            .and_then(|g| g.strip_suffix('s'))
            .and_then(|g| g.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name}: stop_grace_period in seconds"));
        assert!(
            grace >= drain + 10.0,
            "{name}: stop_grace_period {grace} s vs drain deadline {drain} s"
        );
    }
    assert!(workers >= 2, "the compose workers");
}

#[test]
fn shared_config_file_is_valid_and_matches_the_topology() {
    let c = shared_config();
    assert!(
        c.metrics.consumer_lag,
        "lag metrics feed the dashboard, alerts and the HPA"
    );
    assert_eq!(c.metrics.addr.port(), 9464);
    assert!(
        c.kafka.brokers.is_none(),
        "brokers come from the environment"
    );
}

#[test]
fn kubernetes_manifests_point_at_what_the_worker_serves() {
    let config = shared_config();
    let deploy = one("deploy/k8s/deployment.yaml");
    assert_eq!(deploy["kind"], "Deployment");
    let pod = &deploy["spec"]["template"];
    let labels = &pod["metadata"]["labels"];
    assert!(selects(&deploy["spec"]["selector"]["matchLabels"], labels));
    let spec = &pod["spec"];
    let c = &spec["containers"][0];

    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(
        c["ports"][0]["containerPort"].as_u64(),
        Some(u64::from(config.metrics.addr.port()))
    );
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(
            c[probe]["httpGet"]["port"], c["ports"][0]["name"],
            "{probe} uses the metrics port"
        );
    }

    // The grace period covers the drain deadline plus flush and commit.
    let grace = spec["terminationGracePeriodSeconds"].as_f64().unwrap();
    assert!(
        grace >= config.kafka.drain_deadline.as_secs_f64() + 10.0,
        "terminationGracePeriodSeconds {grace} vs drain deadline {:?}",
        config.kafka.drain_deadline
    );

    // The config path the worker is given is where the ConfigMap is mounted.
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(args[0], "run");
    let config_path = args[args.iter().position(|a| *a == "--config").unwrap() + 1];
    let mount = c["volumeMounts"][0]["mountPath"].as_str().unwrap();
    assert_eq!(config_path, format!("{mount}/groundgate.toml"));
    let volume = &spec["volumes"][0];
    assert_eq!(volume["name"], c["volumeMounts"][0]["name"]);
    let kustomization = one("deploy/k8s/kustomization.yaml");
    assert_eq!(
        volume["configMap"]["name"],
        kustomization["configMapGenerator"][0]["name"]
    );
    assert_eq!(
        kustomization["configMapGenerator"][0]["files"][0],
        "groundgate.toml"
    );
    for r in kustomization["resources"].as_array().unwrap() {
        assert!(
            repo(&format!("deploy/k8s/{}", r.as_str().unwrap())).exists(),
            "{r}"
        );
    }

    // Only the broker list comes from the environment (unknown GROUNDGATE_* vars are fatal).
    for e in c["env"].as_array().unwrap() {
        assert_eq!(e["name"], "GROUNDGATE_BROKERS");
    }
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    for kind in ["requests", "limits"] {
        assert!(
            c["resources"][kind]["memory"].is_string(),
            "resources.{kind}"
        );
    }

    let svc = one("deploy/k8s/service.yaml");
    assert!(
        selects(&svc["spec"]["selector"], labels),
        "service selects the workers"
    );
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "metrics");
    let pdb = one("deploy/k8s/pdb.yaml");
    assert!(
        selects(&pdb["spec"]["selector"]["matchLabels"], labels),
        "pdb selects the workers"
    );

    // Autoscaling examples watch the right group, topic and metric.
    let keda = one("deploy/k8s/scaling-keda.yaml");
    let trigger = &keda["spec"]["triggers"][0]["metadata"];
    assert_eq!(trigger["consumerGroup"], config.kafka.group_id.as_str());
    assert_eq!(trigger["topic"], config.kafka.topics.input.as_str());
    assert_eq!(
        keda["spec"]["scaleTargetRef"]["name"],
        deploy["metadata"]["name"]
    );
    // The optional network policy covers the workers and the verification
    // job, lets Prometheus reach the metrics port and the pods reach the
    // brokers on the port of their broker list.
    let policy = one("deploy/k8s/networkpolicy.yaml");
    let job = one("deploy/k8s/audit-verify-cronjob.yaml");
    let job_pod = &job["spec"]["jobTemplate"]["spec"]["template"];
    for pod_labels in [labels, &job_pod["metadata"]["labels"]] {
        assert!(
            selects(&policy["spec"]["podSelector"]["matchLabels"], pod_labels),
            "{pod_labels}"
        );
    }
    assert_eq!(
        policy["spec"]["ingress"][0]["ports"][0]["port"],
        c["ports"][0]["containerPort"]
    );
    let egress_ports: Vec<u64> = policy["spec"]["egress"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|rule| rule["ports"].as_array().unwrap())
        .filter_map(|p| p["port"].as_u64())
        .collect();
    for env in [&c["env"], &job_pod["spec"]["containers"][0]["env"]] {
        let brokers = env
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "GROUNDGATE_BROKERS")
            .and_then(|e| e["value"].as_str())
            .unwrap();
        for broker in brokers.split(',') {
            let port: u64 = broker.rsplit(':').next().unwrap().parse().unwrap();
            assert!(egress_ports.contains(&port), "{broker}: {egress_ports:?}");
        }
    }
    assert!(egress_ports.contains(&53), "name resolution");

    let hpa = one("deploy/k8s/scaling-hpa.yaml");
    let metric = hpa["spec"]["metrics"][0]["external"]["metric"]["name"]
        .as_str()
        .unwrap();
    let m = groundgate::metrics::Metrics::new(&config.metrics).unwrap();
    // Lag series exist once librdkafka statistics report an assigned partition.
    m.set_consumer_lag(&[(config.kafka.topics.input.clone(), 0, 7)]);
    let exported = m.encode();
    assert!(
        exported.contains(&format!("# TYPE {metric} ")),
        "{metric} is exported"
    );

    // kustomize (in kubectl) must render the directory.
    if need_tool(
        "kubernetes_manifests_point_at_what_the_worker_serves (kustomize render)",
        "kubectl",
        "kubernetes-client",
    ) {
        succeeded(
            Command::new("kubectl")
                .args(["kustomize", "deploy/k8s"])
                .current_dir(env!("CARGO_MANIFEST_DIR")),
            "kubectl kustomize",
        );
    }
}

/// The arguments of the first container of a pod spec.
fn container_args(c: &Value) -> Vec<String> {
    c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

/// The value after `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> &'a str {
    let at = args.iter().position(|a| a == flag);
    &args[at.unwrap_or_else(|| panic!("{flag} in {args:?}")) + 1]
}

#[test]
fn the_audit_verification_job_checks_the_workers_trail_with_their_settings() {
    let config = shared_config();
    let job = one("deploy/k8s/audit-verify-cronjob.yaml");
    assert_eq!(job["kind"], "CronJob");
    let kustomization = one("deploy/k8s/kustomization.yaml");
    assert!(
        kustomization["resources"]
            .as_array()
            .unwrap()
            .contains(&Value::from("audit-verify-cronjob.yaml"))
    );
    assert_eq!(job["spec"]["concurrencyPolicy"], "Forbid");
    // A failed verification is a finding: kept, not retried away.
    assert_eq!(job["spec"]["jobTemplate"]["spec"]["backoffLimit"], 0);
    let spec = &job["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["securityContext"]["runAsNonRoot"], true);
    let c = &spec["containers"][0];
    let args = container_args(c);
    assert_eq!(args[..2], ["audit", "verify"]);

    // The workers' configuration, mounted from their ConfigMap, and their
    // broker list.
    let worker = one("deploy/k8s/deployment.yaml");
    let wspec = &worker["spec"]["template"]["spec"];
    assert_eq!(c["env"], wspec["containers"][0]["env"]);
    assert_eq!(spec["volumes"], wspec["volumes"]);
    let mount = c["volumeMounts"][0]["mountPath"].as_str().unwrap();
    assert_eq!(flag(&args, "--config"), format!("{mount}/groundgate.toml"));
    assert_eq!(flag(&args, "--input-topic"), config.kafka.topics.input);
    assert_eq!(flag(&args, "--group"), config.kafka.group_id);

    // The job's very command line, with the repository's copy of the file
    // and the dev broker standing in for the cluster: it loads, connects and
    // reads the (empty) trail, which passes while the input topic owes no
    // row (--allow-empty): the Job of a deployment that has consumed
    // nothing yet does not fail every hour.
    let (_broker, bootstrap) = crate::common::dev_broker(2);
    let mut run = args.clone();
    let at = run.iter().position(|a| a == "--config").unwrap() + 1;
    run[at] = repo("deploy/k8s/groundgate.toml").display().to_string();
    let o = crate::common::bin()
        .args(&run)
        .env("GROUNDGATE_BROKERS", &bootstrap)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(o.status.code(), Some(0), "{report:#}");
    assert_eq!(report["empty_allowed"], true, "{report:#}");
    assert!(
        crate::common::problem_kinds(&report).is_empty(),
        "{report:#}"
    );
}

#[test]
fn dashboard_and_alerts_name_only_exported_metrics() {
    let config = shared_config();
    let m = groundgate::metrics::Metrics::new(&config.metrics).unwrap();
    // Lag series exist once librdkafka statistics report an assigned
    // partition; usage and grounding series once an answer is processed.
    m.set_consumer_lag(&[(config.kafka.topics.input.clone(), 0, 7)]);
    let answer = Summary {
        mode: Some(Mode::Strict),
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
        grounding_score: Some(0.5),
        ..Summary::default()
    };
    m.record_outcome(OutcomeKind::Accepted, &answer, Duration::from_micros(5));
    let unsupported = Summary {
        findings: vec![FindingKind::UnsupportedClaim],
        ..answer
    };
    m.record_outcome(OutcomeKind::Retry, &unsupported, Duration::from_micros(5));
    let exported = m.encode();
    let panels = dashboard_exprs();
    let alerts = alert_exprs();
    let mut unknown = Vec::new();
    for (title, expr) in panels.iter().chain(&alerts) {
        for name in metric_names(expr) {
            // process_* comes from the process collector, on Linux only.
            if !name.starts_with("process_") && !exported.contains(&format!("# TYPE {name} ")) {
                unknown.push(format!("{title}: {name}"));
            }
        }
    }
    assert!(unknown.is_empty(), "not exported: {unknown:?}");

    // A label value selected is one the metric takes: a misspelt value
    // selects nothing, and a panel stays empty or an alert never fires.
    let mut unknown = Vec::new();
    for (title, expr) in panels.iter().chain(&alerts) {
        for (name, label, values) in label_matchers(expr) {
            for value in values {
                let exported_with = exported
                    .lines()
                    .any(|l| l.starts_with(&name) && l.contains(&format!("{label}=\"{value}\"")));
                if !exported_with {
                    unknown.push(format!("{title}: {name}{{{label}=\"{value}\"}}"));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "label values never exported: {unknown:?}"
    );

    // The audit trail has its panels and its alerts.
    let named = |list: &[(String, String)], metric: &str| {
        list.iter()
            .filter(|(_, e)| metric_names(e).contains(metric))
            .map(|(t, _)| t.clone())
            .collect::<Vec<_>>()
    };
    for metric in [
        "groundgate_audit_seals_total",
        "groundgate_audit_seal_failures_total",
        "groundgate_audit_last_seal_timestamp_seconds",
    ] {
        assert!(
            !named(&panels, metric).is_empty(),
            "no panel shows {metric}"
        );
    }
    assert_eq!(
        named(&alerts, "groundgate_audit_last_seal_timestamp_seconds"),
        ["GroundgateAuditSealsStopped"]
    );
    assert_eq!(
        named(&alerts, "groundgate_audit_seal_failures_total"),
        ["GroundgateAuditSealFailures"]
    );
    assert_eq!(
        named(&alerts, "groundgate_audit_chain_restarts_total"),
        ["GroundgateAuditChainRestarted"]
    );
    // "Seals stopped" only while the same worker still processes records:
    // an idle worker does not seal.
    let stopped = &alerts
        .iter()
        .find(|(n, _)| n == "GroundgateAuditSealsStopped")
        .unwrap()
        .1;
    assert!(stopped.contains("groundgate_records_total"), "{stopped}");

    // Every rule carries a summary and a runbook.
    let rules = one("deploy/prometheus/alerts.yml");
    for rule in rules["groups"][0]["rules"].as_array().unwrap() {
        for key in ["summary", "runbook"] {
            assert!(
                rule["annotations"][key]
                    .as_str()
                    .is_some_and(|s| !s.is_empty()),
                "{} lacks {key}",
                rule["alert"]
            );
        }
    }
}

/// The scrape job's name is the deployment's: the compose Prometheus calls
/// it `groundgate`, while the Kubernetes manifests leave it to the
/// cluster's Prometheus (the pod annotations' job, or a ServiceMonitor's,
/// named after the Service). No alert depends on it, or it would never
/// fire there.
#[test]
fn no_alert_depends_on_the_scrape_jobs_name() {
    for (alert, expr) in alert_exprs() {
        assert!(
            !expr.contains("job=") && !expr.contains("job=~"),
            "{alert} selects a scrape job by name: {expr}"
        );
    }
}

/// The environment a secured client gets, loaded and checked the way
/// `groundgate run` does (with `files` standing in for the mounted Secret).
fn secured_config(env: &[(String, String)], files: &[&str]) -> Config {
    use groundgate::config::secret_file::FileError;
    use groundgate::config::{Access, SaslMechanism, SecurityProtocol, check_access};
    let ours: Vec<(String, String)> = env
        .iter()
        .filter(|(k, _)| k.starts_with("GROUNDGATE_"))
        .cloned()
        .collect();
    let config = RawConfig::load(
        Some(&repo("deploy/k8s/groundgate.toml")),
        &ours,
        RawConfig::default(),
    )
    .and_then(RawConfig::validate)
    .unwrap_or_else(|e| panic!("{e}"));
    let s = &config.kafka.security;
    assert_eq!(s.protocol, Some(SecurityProtocol::SaslSsl));
    assert_eq!(s.mechanism, Some(SaslMechanism::ScramSha512));
    let read = |p: &Path, _: u64| {
        if files.iter().any(|f| Path::new(f) == p) {
            Ok(b"from the secret".to_vec())
        } else {
            Err(FileError::missing())
        }
    };
    let var = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| Ok(v.clone()));
    let features = groundgate::kafka::library().features;
    let access = Access {
        read: &read,
        var: &var,
        features: Some(&features),
        refuses: None,
        clients: None,
    };
    let mut problems = Vec::new();
    let secrets = check_access(s, &config.kafka.properties, &access, &mut problems);
    assert_eq!(problems, Vec::<String>::new());
    assert!(secrets.sasl_password.is_some());
    config
}

#[test]
fn the_secured_compose_profile_configures_sasl_ssl() {
    let compose = one("docker-compose.yml");
    let env: Vec<(String, String)> = compose["x-secured-client"]
        .as_object()
        .expect("x-secured-client")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
        .collect();
    secured_config(&env, &["/certs/ca.pem"]);
    // The password the clients use is the one the init job gives the user.
    let password = &env.iter().find(|(k, _)| k == "KAFKA_PASSWORD").unwrap().1;
    let init = compose["services"]["kafka-secured-init"]["command"].to_string();
    assert!(
        init.contains(&format!("SCRAM-SHA-512=[password={password}]")),
        "{init}"
    );
    for s in [
        "kafka-secured-certs",
        "kafka-secured",
        "kafka-secured-init",
        "worker-secured",
        "producer-secured",
    ] {
        assert_eq!(
            compose["services"][s]["profiles"][0], "secured",
            "{s} starts only with --profile secured"
        );
    }
}

#[test]
fn the_secured_kubernetes_overlay_mounts_the_secret_the_settings_name() {
    if !need_tool(
        "the_secured_kubernetes_overlay_mounts_the_secret_the_settings_name",
        "kubectl",
        "kubernetes-client",
    ) {
        return;
    }
    let out = succeeded(
        Command::new("kubectl")
            .args(["kustomize", "deploy/k8s-secured"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        "kubectl kustomize",
    );
    let rendered: Vec<Value> = serde_yaml_ng::Deserializer::from_slice(&out)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .collect();
    let of = |kind: &str| {
        rendered
            .iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("a {kind}"))
    };
    let deploy = of("Deployment");
    let spec = &deploy["spec"]["template"]["spec"];
    let c = &spec["containers"][0];
    // The audit verification reaches the cluster the same way.
    let job = &of("CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(job["containers"][0]["env"], c["env"]);
    assert_eq!(job["containers"][0]["volumeMounts"], c["volumeMounts"]);
    assert_eq!(job["volumes"], spec["volumes"]);
    assert_eq!(job["securityContext"]["fsGroup"], 10001);
    let env: Vec<(String, String)> = c["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().into(),
                e["value"].as_str().unwrap().into(),
            )
        })
        .collect();
    let volume = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["secret"]["secretName"] == "groundgate-kafka")
        .expect("the Secret is a volume");
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == volume["name"])
        .expect("and is mounted");
    assert_eq!(mount["readOnly"], true);
    let dir = mount["mountPath"].as_str().unwrap();
    let files = [format!("{dir}/password"), format!("{dir}/ca.pem")];
    let config = secured_config(&env, &[&files[0], &files[1]]);
    assert_eq!(
        config.kafka.security.ca_file.as_deref(),
        Some(Path::new(&files[1]))
    );
    // The worker's user can read the Secret's files.
    assert_eq!(spec["securityContext"]["fsGroup"], 10001);
}

/// The image reports the commit it was built from: its build context holds
/// no `.git`, so the Dockerfile takes the commit as a build argument,
/// compose passes it on, and `build.rs` stamps that one in.
#[test]
fn the_image_build_takes_the_commit_it_reports() {
    let compose = compose_merged();
    let built: Vec<(&String, &Value)> = compose["services"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, s)| s.get("build").is_some())
        .collect();
    assert!(built.len() >= 5, "{built:?}");
    for (name, service) in built {
        let arg = service["build"]["args"]["GG_BUILD_GIT_SHA"].as_str();
        assert!(
            arg.is_some_and(|a| a.starts_with("${GG_BUILD_GIT_SHA")),
            "{name} passes GG_BUILD_GIT_SHA to the build: {arg:?}"
        );
    }
    let ignored = std::fs::read_to_string(repo(".dockerignore")).unwrap();
    assert!(ignored.lines().any(|l| l.trim() == ".git/"), "{ignored}");
    let dockerfile = std::fs::read_to_string(repo("Dockerfile")).unwrap();
    let builder = dockerfile
        .split("\nFROM ")
        .find(|stage| stage.lines().next().unwrap_or("").ends_with(" AS builder"))
        .expect("a builder stage");
    let arg = builder
        .find("\nARG GG_BUILD_GIT_SHA")
        .expect("the builder stage declares ARG GG_BUILD_GIT_SHA");
    let build = builder.find("cargo build").expect("the builder builds");
    assert!(arg < build, "ARG GG_BUILD_GIT_SHA before cargo build");
    let script = std::fs::read_to_string(repo("build.rs")).unwrap();
    assert!(
        script.contains("std::env::var(\"GG_BUILD_GIT_SHA\")"),
        "build.rs reads GG_BUILD_GIT_SHA"
    );
}

/// docs/operations.md's `kubectl run … -- run --preflight` mounts no
/// ConfigMap: it judges the built-in defaults, which must agree with the
/// shipped configuration on everything the preflight checks, or it passes
/// settings the workers do not run with.
#[test]
fn the_preflight_without_the_configmap_judges_what_the_workers_run_with() {
    let shipped = shared_config();
    let builtin = RawConfig::default().validate().unwrap();
    let (s, b) = (&shipped.kafka, &builtin.kafka);
    assert_eq!(s.topics, b.topics, "kafka.topics");
    assert_eq!(s.group_id, b.group_id, "kafka.group_id");
    assert_eq!(s.guarantee, b.guarantee, "kafka.guarantee");
    assert_eq!(
        s.max_message_bytes, b.max_message_bytes,
        "kafka.max_message_bytes"
    );
    assert_eq!(
        s.output_schema_ids, b.output_schema_ids,
        "output_schema_ids"
    );
    assert_eq!(
        shipped.core.max_record_bytes, builtin.core.max_record_bytes,
        "max_record_bytes"
    );
    assert_eq!(
        shipped.core.value_framing, builtin.core.value_framing,
        "value_framing"
    );
    let doc = std::fs::read_to_string(repo("docs/operations.md")).unwrap();
    assert!(
        doc.contains("kubectl run groundgate-preflight") && doc.contains("-- run --preflight\n"),
        "the documented preflight pod"
    );
}
