//! Connecting to secured Kafka, tested for real without a real Kafka: a
//! local `openssl s_server` (certificates made here with the `openssl` CLI)
//! stands in for a TLS listener, so the handshake `groundgate run` makes is
//! observed from the other side; a local TCP listener stands in for an OIDC
//! token endpoint. The SASL exchange itself (SaslHandshake/Authenticate)
//! needs a Kafka broker and is not tested here.
//!
//! Also the start-up configuration errors of `run` (exit 2, named once).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{
    Proc, WAIT, bin, exit_and_stderr, free_port, http_get, mkfifo, need_tool, succeeded, wait_for,
};

/// A test CA, a server certificate for 127.0.0.1 and a client certificate
/// signed by it, and a second CA that signed nothing of these.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn generate() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki { dir };
        let run = |args: &[&str]| {
            succeeded(
                Command::new("openssl")
                    .args(args)
                    .current_dir(pki.dir.path()),
                &format!("openssl {args:?}"),
            );
        };
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];
        for ca in ["ca", "other-ca"] {
            let subject = format!("/CN=groundgate-test-{ca}");
            let mut args = vec!["req", "-x509", "-nodes", "-days", "2", "-subj", &subject];
            args.extend(ec);
            let (key, pem) = (format!("{ca}.key"), format!("{ca}.pem"));
            args.extend(["-keyout", &key, "-out", &pem]);
            run(&args);
        }
        std::fs::write(
            pki.path("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
        )
        .unwrap();
        std::fs::write(pki.path("client.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
        for (who, cn) in [("server", "localhost"), ("client", "groundgate-client")] {
            let subject = format!("/CN={cn}");
            let (key, csr, pem, ext) = (
                format!("{who}.key"),
                format!("{who}.csr"),
                format!("{who}.pem"),
                format!("{who}.ext"),
            );
            let mut args = vec!["req", "-nodes", "-subj", &subject];
            args.extend(ec);
            args.extend(["-keyout", &key, "-out", &csr]);
            run(&args);
            run(&[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &pem,
            ]);
        }
        pki
    }
}

/// `openssl s_server` on a free loopback port; everything it prints (the
/// handshake, the client certificate, the bytes received) goes to one file.
struct TlsServer {
    _proc: Proc,
    port: u16,
    out: PathBuf,
}

impl TlsServer {
    fn start(pki: &Pki, verify_client: bool) -> TlsServer {
        let port = free_port();
        let out = pki.path(&format!("s_server-{port}.out"));
        let file = std::fs::File::create(&out).unwrap();
        let mut cmd = Command::new("openssl");
        cmd.args(["s_server", "-accept"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("-cert")
            .arg(pki.path("server.pem"))
            .arg("-key")
            .arg(pki.path("server.key"))
            .arg("-CAfile")
            .arg(pki.path("ca.pem"));
        if verify_client {
            // Requires a client certificate signed by the CA.
            cmd.args(["-Verify", "2"]);
        }
        // s_server sends what it reads on stdin and stops at its end: the
        // pipe stays open as long as the server is wanted.
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("openssl s_server starts");
        let server = TlsServer {
            _proc: Proc {
                child,
                name: "openssl s_server",
            },
            port,
            out,
        };
        wait_for("s_server to listen", WAIT, || {
            server.output().contains("ACCEPT").then_some(())
        });
        server
    }

    fn output(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(&self.out).unwrap_or_default()).into_owned()
    }

    fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

/// `groundgate run` against `bootstrap` with `config`; its log goes to a file.
fn run(bootstrap: &str, config: &Path, log: &Path) -> (Proc, SocketAddr) {
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut cmd = bin();
    cmd.args(["run", "--brokers", bootstrap, "--config"])
        .arg(config)
        .args(["--metrics-addr", &metrics.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    (Proc::spawn("run", cmd), metrics)
}

fn read(path: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned()
}

fn write_config(dir: &Path, name: &str, toml: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, toml).unwrap();
    p
}

/// TOML string of a path.
fn q(p: &Path) -> String {
    format!("{:?}", p.display().to_string())
}

#[test]
fn mutual_tls_handshake_completes_with_the_client_certificate() {
    if !need_tool("mutual_tls_handshake", "openssl", "openssl") {
        return;
    }
    let pki = Pki::generate();
    let server = TlsServer::start(&pki, true);
    let config = mtls_config(&pki, "");
    let log = pki.path("run.log");
    let (_worker, _) = run(&server.bootstrap(), &config, &log);
    assert_client_certificate_verified(&server, &log);
}

/// A configuration for mutual TLS with the test CA and client certificate;
/// `extra` goes into its `[kafka]` table.
fn mtls_config(pki: &Pki, extra: &str) -> PathBuf {
    write_config(
        pki.dir.path(),
        "mtls.toml",
        &format!(
            "[kafka]\n{extra}security_protocol = \"SSL\"\nssl_ca_file = {}\nssl_certificate_file = {}\nssl_key_file = {}\n",
            q(&pki.path("ca.pem")),
            q(&pki.path("client.pem")),
            q(&pki.path("client.key")),
        ),
    )
}

/// The server verified the client certificate, finished the handshake,
/// and then received a Kafka request (ApiVersions names the client
/// software, librdkafka). `log`: the client's, shown on failure.
fn assert_client_certificate_verified(server: &TlsServer, log: &Path) {
    let seen = wait_for("a verified TLS handshake and a Kafka request", WAIT, || {
        let out = server.output();
        (out.contains("CIPHER is") && out.contains("librdkafka")).then_some(out)
    });
    assert!(
        seen.contains("verify return:1") && !seen.contains("verify error"),
        "the client certificate verified against the CA:\n{seen}\n--- groundgate log:\n{}",
        read(log)
    );
    assert!(
        seen.contains("subject=CN = groundgate-client")
            || seen.contains("subject=CN=groundgate-client"),
        "the server saw the client certificate:\n{seen}"
    );
}

#[test]
fn sasl_ssl_scram_reaches_the_tls_listener_and_no_secret_is_shown() {
    if !need_tool("sasl_ssl_scram", "openssl", "openssl") {
        return;
    }
    let pki = Pki::generate();
    let server = TlsServer::start(&pki, false);
    let secret = format!("gg-secret-{}", std::process::id());
    let password = pki.path("password");
    std::fs::write(&password, format!("{secret}\n")).unwrap();
    let config = write_config(
        pki.dir.path(),
        "scram.toml",
        &format!(
            "[log]\nlevel = \"debug\"\n[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"SCRAM-SHA-512\"\nsasl_username = \"groundgate\"\nsasl_password_file = {}\nssl_ca_file = {}\n[kafka.properties]\n\"compression.type\" = \"zstd\"\n\"debug\" = \"all\"\n",
            q(&password),
            q(&pki.path("ca.pem")),
        ),
    );
    let log = pki.path("run.log");
    let (worker, metrics) = run(&server.bootstrap(), &config, &log);
    wait_for("a TLS handshake and a Kafka request", WAIT, || {
        let out = server.output();
        (out.contains("CIPHER is") && out.contains("librdkafka")).then_some(())
    });
    let (_, body) = wait_for("/metrics", WAIT, || http_get(metrics, "/metrics"));
    drop(worker);
    let log = read(&log);
    assert!(log.contains("builtin_features"), "start-up line:\n{log}");
    // librdkafka's every debug context is forwarded, its dump of the
    // client's configuration included, with the password redacted.
    assert!(
        log.contains("sasl.password = [redacted]"),
        "librdkafka's configuration dump:\n{log}"
    );
    for (what, text) in [("log", &log), ("/metrics", &body)] {
        assert!(
            !text.contains(&secret),
            "the password appears in the {what}"
        );
    }
    assert!(
        !server.output().contains(&secret),
        "nothing sent before SASL"
    );
}

/// `audit verify` reaches the trail with the workers' configuration file:
/// its brokers and its TLS client certificate, as `run` does.
#[test]
fn audit_verify_reaches_a_tls_listener_with_the_workers_configuration() {
    if !need_tool("audit_verify_mutual_tls", "openssl", "openssl") {
        return;
    }
    let pki = Pki::generate();
    let server = TlsServer::start(&pki, true);
    let config = mtls_config(&pki, &format!("brokers = \"{}\"\n", server.bootstrap()));
    let log = pki.path("verify.log");
    let mut cmd = bin();
    cmd.args(["audit", "verify", "--config"])
        .arg(&config)
        .args(["--input-topic", "answers"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _verify = Proc::spawn("audit verify", cmd);
    assert_client_certificate_verified(&server, &log);
}

/// A refused handshake ends `audit verify` with librdkafka's reason on
/// stderr and exit 2, not a report.
#[test]
fn audit_verify_against_a_refused_handshake_names_the_reason() {
    let Some((_pki, server, config)) = wrong_ca_server("audit_verify_wrong_ca") else {
        return;
    };
    let o = bin()
        .args([
            "audit",
            "verify",
            "--brokers",
            &server.bootstrap(),
            "--config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{stdout}{stderr}");
    assert!(stdout.is_empty(), "no report: {stdout}");
    assert!(
        stderr.contains("certificate verify failed") && stderr.contains("groundgate audit: kafka:"),
        "{stderr}"
    );
}

/// A TLS server and a configuration that trusts another CA than the one
/// that signed the server's certificate; `None` (the test skips) without
/// openssl.
fn wrong_ca_server(test: &str) -> Option<(Pki, TlsServer, PathBuf)> {
    if !need_tool(test, "openssl", "openssl") {
        return None;
    }
    let pki = Pki::generate();
    let server = TlsServer::start(&pki, false);
    let config = write_config(
        pki.dir.path(),
        "wrong-ca.toml",
        &format!(
            "[kafka]\nsecurity_protocol = \"SSL\"\nssl_ca_file = {}\n",
            q(&pki.path("other-ca.pem"))
        ),
    );
    Some((pki, server, config))
}

#[test]
fn a_wrong_ca_fails_the_handshake_with_a_clear_error() {
    let Some((pki, server, config)) = wrong_ca_server("wrong_ca") else {
        return;
    };
    let log = pki.path("run.log");
    let (_worker, _) = run(&server.bootstrap(), &config, &log);
    let text = wait_for("the handshake failure in the log", WAIT, || {
        let text = read(&log);
        text.contains("certificate verify failed").then_some(text)
    });
    // librdkafka words it either way, depending on whether its log line
    // or its error event comes first.
    assert!(
        text.contains("SSL handshake failed") || text.contains("in state SSL_HANDSHAKE"),
        "{text}"
    );
    assert!(
        !server.output().contains("CIPHER is"),
        "no session was established"
    );
}

/// Whether this build has OIDC (librdkafka links the system's libcurl
/// when libcurl4-openssl-dev is installed); like `need_tool` otherwise.
fn need_oidc(test: &str) -> bool {
    if groundgate::kafka::library().features.contains("oidc") {
        return true;
    }
    let what =
        format!("a build with OIDC (apt-get install libcurl4-openssl-dev, then rebuild) [{test}]");
    if std::env::var(crate::common::REQUIRE_TOOLS_ENV).is_ok_and(|v| v == "1") {
        panic!("missing: {what}");
    }
    let _ = writeln!(std::io::stderr(), "SKIPPED: needs {what}");
    false
}

/// OAUTHBEARER/OIDC: the client-credentials request reaches the token
/// endpoint with the client id and the secret read from its file.
#[test]
fn oidc_token_request_carries_the_client_credentials() {
    use base64::Engine as _;
    if !need_oidc("oidc_token_request_carries_the_client_credentials") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let endpoint = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/oauth2/token", endpoint.local_addr().unwrap());
    let secret = format!("oidc-secret-{}", std::process::id());
    let secret_file = dir.path().join("client-secret");
    std::fs::write(&secret_file, &secret).unwrap();
    let config = write_config(
        dir.path(),
        "oidc.toml",
        &format!(
            "[log]\nlevel = \"debug\"\n[kafka]\nsecurity_protocol = \"SASL_PLAINTEXT\"\nsasl_mechanism = \"OAUTHBEARER\"\noidc_token_endpoint = {url:?}\noidc_client_id = \"gg-client\"\noidc_client_secret_file = {}\noidc_scope = \"kafka\"\n[kafka.properties]\n\"debug\" = \"all\"\n",
            q(&secret_file)
        ),
    );
    let log = dir.path().join("run.log");
    let (_worker, _) = run(&format!("127.0.0.1:{}", free_port()), &config, &log);
    let (mut conn, _) = endpoint.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&request).contains("grant_type") {
        let n = conn.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "request ended early: {}",
            String::from_utf8_lossy(&request)
        );
        request.extend_from_slice(&buf[..n]);
    }
    let _ = conn.write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n");
    let request = String::from_utf8_lossy(&request).into_owned();
    assert!(request.starts_with("POST /oauth2/token "), "{request}");
    assert!(
        request.contains("grant_type=client_credentials"),
        "{request}"
    );
    assert!(request.contains("scope=kafka"), "{request}");
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("gg-client:{secret}"));
    assert!(
        request.contains(&format!("Basic {basic}")),
        "client id and secret in the Authorization header: {request}"
    );
    // Neither the secret nor the header carrying it is in the log, with
    // every librdkafka debug context on (its configuration dump included).
    let log = wait_for("librdkafka's configuration dump in the log", WAIT, || {
        let log = read(&log);
        log.contains("sasl.oauthbearer.client.secret = [redacted]")
            .then_some(log)
    });
    assert!(!log.contains(&secret) && !log.contains(&basic), "{log}");
}

/// `run` with `extra` arguments and environment: (exit code, stderr).
fn run_fails(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut cmd = bin();
    cmd.arg("run")
        .args(["--metrics-addr", &format!("127.0.0.1:{}", free_port())])
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    exit_and_stderr("run", cmd)
}

/// `run` with the configuration file `config` and brokers that are never
/// reached: (exit code, stderr).
fn run_fails_with_config(config: &Path) -> (Option<i32>, String) {
    let config = config.to_str().expect("a UTF-8 path");
    run_fails(&["--brokers", "127.0.0.1:9", "--config", config], &[])
}

#[test]
fn configuration_errors_at_start_exit_2_and_are_said_once() {
    let b = ["--brokers", "127.0.0.1:9"];
    for (args, env, needle) in [
        (&[][..], &[][..], "kafka.brokers is not set or empty"),
        (
            &[][..],
            &[("GROUNDGATE_BROKERS", "")][..],
            "kafka.brokers is not set or empty",
        ),
        (
            &[&b[..], &["-X", "noequals"]].concat()[..],
            &[][..],
            "\"noequals\": expected KEY=VALUE",
        ),
        (
            &[&b[..], &["-X", "topic.acks=1"]].concat()[..],
            &[][..],
            "\"topic.acks\"",
        ),
        (
            &[&b[..], &["-X", "bogus.prop=1"]].concat()[..],
            &[][..],
            "bogus.prop",
        ),
        (
            &[&b[..], &["-X", "linger.ms=5", "-X", "linger.ms=50"]].concat()[..],
            &[][..],
            "-X linger.ms is given twice, as \"5\" and as \"50\"",
        ),
        (
            &[&b[..], &["-X", "sasl.password=hunter2"]].concat()[..],
            &[][..],
            "kafka.sasl_password_file",
        ),
    ] {
        let (code, err) = run_fails(args, env);
        assert_eq!(code, Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {needle:?} not in:\n{err}");
        let key = needle.trim_matches('"');
        let lines = err.lines().filter(|l| l.contains(key)).count();
        assert_eq!(lines, 1, "said once: {err}");
        assert!(!err.contains("hunter2"), "{err}");
    }
}

/// An unknown key, no brokers, a value out of range, an unreadable CA file
/// and a property librdkafka refuses: all five in one run, in that order.
#[test]
fn every_kind_of_configuration_problem_is_listed_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "broken.toml",
        "[kafka]\nmax_message_byts = 5\ndrain_deadline_ms = 5\nssl_ca_file = \"/nonexistent/ca.pem\"\n",
    );
    let config = config.to_str().unwrap();
    let expected = [
        "kafka.max_message_byts: unknown key \"max_message_byts\"",
        "kafka.brokers is not set or empty",
        "kafka.drain_deadline_ms = 5: must be between 100 and 600000",
        "kafka.ssl_ca_file = \"/nonexistent/ca.pem\": cannot read it",
        "kafka.properties \"linger.ms\" (-X linger.ms=...): librdkafka refuses it",
    ];
    for preflight in [&[][..], &["--preflight"][..]] {
        let args = [&["--config", config, "-X", "linger.ms=abc"][..], preflight].concat();
        let (code, err) = run_fails(&args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        let problems: Vec<&str> = err.lines().filter_map(|l| l.strip_prefix("  - ")).collect();
        assert_eq!(problems.len(), expected.len(), "{args:?}: {err}");
        for (problem, start) in problems.iter().zip(expected) {
            assert!(
                problem.starts_with(start),
                "{args:?}: {start:?} expected in:\n{err}"
            );
        }
    }
}

#[test]
fn unreadable_tls_files_are_named_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "missing.toml",
        "[kafka]\nsecurity_protocol = \"SSL\"\nssl_ca_file = \"/nonexistent/ca.pem\"\nssl_certificate_file = \"/nonexistent/c.pem\"\nssl_key_file = \"/nonexistent/c.key\"\n",
    );
    let (code, err) = run_fails_with_config(&config);
    assert_eq!(code, Some(2), "{err}");
    for key in ["kafka.ssl_ca_file", "kafka.ssl_certificate_file"] {
        assert!(
            err.contains(&format!("{key} = \"/nonexistent/")),
            "{key}: {err}"
        );
    }
    // The key file's value may be the key itself: only what exists is shown.
    assert!(
        err.contains("kafka.ssl_key_file: cannot read it: No such file or directory (os error 2); its value is not shown, since it names nothing on this machine and may be the secret itself: of the path, only the directory \"/\" exists; the 17 character(s) after it do not"),
        "{err}"
    );
    assert!(!err.contains("c.key"), "{err}");
}

/// A file that holds a secret must be a regular file: a FIFO (which nothing
/// writes to) or a directory is a configuration problem listed at start,
/// not a start that waits forever; a value that names nothing (the secret
/// typed where its path belongs) is not shown.
#[test]
fn secret_files_that_are_no_files_are_listed_without_waiting_or_showing_them() {
    let dir = tempfile::tempdir().unwrap();
    let (fifo, key_fifo) = (
        dir.path().join("password"),
        dir.path().join("pseudonym.key"),
    );
    mkfifo(&fifo);
    mkfifo(&key_fifo);
    let key = dir.path().join("client.key");
    std::fs::write(&key, "not read here").unwrap();
    let config = write_config(
        dir.path(),
        "fifo.toml",
        &format!(
            "[kafka]\nsecurity_protocol = \"SASL_SSL\"\nsasl_mechanism = \"PLAIN\"\nsasl_username = \"u\"\nsasl_password_file = {}\nssl_certificate_file = {}\nssl_key_file = {}\nssl_key_password_file = {}\n[audit]\npseudonymize = [\"user\"]\npseudonym_key_file = {}\nsigning_key_file = \"hunter2-signing-secret\"\n",
            q(&fifo),
            q(&key),
            q(&key),
            q(dir.path()),
            q(&key_fifo)
        ),
    );
    let (code, err) = run_fails_with_config(&config);
    assert_eq!(code, Some(2), "{err}");
    for expected in [
        format!(
            "kafka.sasl_password_file = {}: it is a FIFO (named pipe), not a regular file",
            q(&fifo)
        ),
        format!(
            "kafka.ssl_key_password_file = {}: it is a directory, not a regular file",
            q(dir.path())
        ),
        format!(
            "audit.pseudonym_key_file = {}: it is a FIFO (named pipe), not a regular file",
            q(&key_fifo)
        ),
        "audit.signing_key_file: cannot read it: No such file or directory (os error 2); its value is not shown".to_string(),
    ] {
        assert!(err.contains(&expected), "{expected:?} not in:\n{err}");
    }
    assert!(!err.contains("hunter2"), "{err}");
}

/// What an operator's slips put in the environment is not echoed: a
/// password given where its file's path belongs, a password in a variable
/// named like a key that does not exist, and a variable whose value is not
/// UTF-8 text (in a `GROUNDGATE_*` variable, or in any other).
#[test]
fn secrets_in_the_environment_are_not_echoed() {
    use std::os::unix::ffi::OsStrExt;
    let not_utf8 = std::ffi::OsStr::from_bytes(b"hunter2-not-utf8-\xff");
    let mut cmd = bin();
    cmd.args([
        "run",
        "--metrics-addr",
        &format!("127.0.0.1:{}", free_port()),
    ])
    .env("GROUNDGATE_BROKERS", "127.0.0.1:9")
    .env("GROUNDGATE_KAFKA__SECURITY_PROTOCOL", "SASL_SSL")
    .env("GROUNDGATE_KAFKA__SASL_MECHANISM", "PLAIN")
    .env("GROUNDGATE_KAFKA__SASL_USERNAME", "u")
    .env("GROUNDGATE_KAFKA__SASL_PASSWORD_FILE", "hunter2-in-path")
    .env("GROUNDGATE_KAFKA__SASL_PASSWORD", "hunter2-misspelt")
    .env("GROUNDGATE_KAFKA__CLIENT_ID", not_utf8)
    .env("SOME_OTHER_PASSWORD", not_utf8);
    let (code, err) = exit_and_stderr("run", cmd);
    assert_eq!(code, Some(2), "{err}");
    for expected in [
        "GROUNDGATE_KAFKA__SASL_PASSWORD (value not shown): unknown key \"sasl_password\"",
        "GROUNDGATE_KAFKA__CLIENT_ID: its value is not UTF-8 text (it is not shown)",
        "kafka.sasl_password_file: cannot read it: No such file or directory (os error 2); its value is not shown",
    ] {
        assert!(err.contains(expected), "{expected:?} not in:\n{err}");
    }
    assert!(!err.contains("hunter2"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn version_names_librdkafka_and_its_features() {
    let out = bin().arg("--version").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("librdkafka 2."), "{text}");
    let features = text
        .lines()
        .find_map(|l| l.strip_prefix("builtin.features: "))
        .unwrap_or_else(|| panic!("{text}"));
    for f in groundgate::kafka::PROMISED_FEATURES {
        assert!(features.split(',').any(|x| x == *f), "{f} in {features}");
    }
}

/// The examples of docs/secured-kafka.md are valid configurations: every
/// TOML block, and every shell block's `export GROUNDGATE_*` lines.
#[test]
fn the_documented_examples_are_valid_configurations() {
    use groundgate::config::RawConfig;
    let doc = std::fs::read_to_string(crate::common::repo("docs/secured-kafka.md")).unwrap();
    let mut blocks = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        if let Some(lang) = line.strip_prefix("```").filter(|l| !l.is_empty()) {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((lang.to_string(), body.join("\n")));
        }
    }
    let mut checked = 0;
    for (lang, body) in &blocks {
        let result = match lang.as_str() {
            "toml" => RawConfig::from_toml_str(body),
            "sh" => {
                let env: Vec<(String, String)> = body
                    .lines()
                    .filter_map(|l| l.strip_prefix("export GROUNDGATE_"))
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (format!("GROUNDGATE_{k}"), v.to_string()))
                    .collect();
                if env.is_empty() {
                    continue;
                }
                RawConfig::load(None, &env, RawConfig::default())
            }
            _ => continue,
        };
        if let Err(e) = result.and_then(RawConfig::validate) {
            panic!("docs/secured-kafka.md block:\n{body}\n{e}");
        }
        checked += 1;
    }
    assert!(checked >= 5, "{checked} examples found");
}

#[test]
fn preflight_against_a_refused_handshake_says_so_and_exits_1() {
    let Some((_pki, server, config)) = wrong_ca_server("preflight_wrong_ca") else {
        return;
    };
    let o = bin()
        .args(["run", "--brokers", &server.bootstrap(), "--config"])
        .arg(&config)
        .arg("--preflight")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("problem: cannot read the cluster's metadata"),
        "{stdout}"
    );
    assert!(
        stderr.contains("certificate verify failed"),
        "STDOUT {stdout} STDERR {stderr}"
    );
}
