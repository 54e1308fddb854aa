//! Helpers shared by the integration tests: they drive the built binary as
//! child processes (dev-broker, run, produce, demo, check, audit) and talk
//! to it over TCP; and build the in-process brokers several areas share.
//! Every wait polls a condition against a deadline; nothing asserts timing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use groundgate::kafka::embedded::EmbeddedBroker;
use rdkafka::mocking::MockCoordinator;

pub const WAIT: Duration = Duration::from_secs(120);

/// A path in the repository.
pub fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_groundgate");

/// Set to `1` (CI does) to make a missing external tool a test failure
/// instead of a skip.
/// Not `GROUNDGATE_*`: groundgate refuses unknown variables of its own
/// prefix, and the binaries under test inherit this one.
pub const REQUIRE_TOOLS_ENV: &str = "GG_REQUIRE_TOOLS";

/// Whether the external `tool` (an executable on PATH, from the Debian
/// package `package`) is available to `test`. When it is not, prints
/// `SKIPPED: needs <tool> (apt-get install <package>)` and returns false, so
/// the test can return early; with `GG_REQUIRE_TOOLS=1` it fails
/// instead, so CI never skips silently.
///
/// The line is written to the process's stderr directly, not with
/// `eprintln!`, because libtest captures the print macros of passing tests:
/// a skip must show in a plain `cargo test` run.
pub fn need_tool(test: &str, tool: &str, package: &str) -> bool {
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            let f = dir.join(tool);
            std::fs::metadata(&f).is_ok_and(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            })
        })
    });
    if found {
        return true;
    }
    let line = format!("SKIPPED: needs {tool} (apt-get install {package}) [{test}]");
    if std::env::var(REQUIRE_TOOLS_ENV).is_ok_and(|v| v == "1") {
        panic!(
            "missing tool: needs {tool} (apt-get install {package}) [{test}], and {REQUIRE_TOOLS_ENV}=1 makes a missing tool a failure"
        );
    }
    let _ = writeln!(std::io::stderr(), "{line}");
    false
}

/// The output topics in the order tests index them: final, retry, audit, dead letter.
pub const OUTPUTS: [&str; 4] = [
    "answers.final",
    "answers.retry",
    "answers.audit",
    "answers.dlq",
];

pub fn bin() -> Command {
    let mut c = Command::new(BIN);
    // A stray GROUNDGATE_* variable in the developer's shell must not change the test.
    for (k, _) in std::env::vars() {
        if k.starts_with("GROUNDGATE_") {
            c.env_remove(k);
        }
    }
    c
}

/// A child process killed on drop, so a failing test leaves nothing running.
pub struct Proc {
    pub child: Child,
    pub name: &'static str,
}

impl Proc {
    pub fn spawn(name: &'static str, mut cmd: Command) -> Proc {
        let child = cmd
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc { child, name }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{sig}"), &self.pid().to_string()])
            .status()
            .expect("kill(1) exists")
            .success();
        assert!(ok, "kill -{sig} {}", self.name);
    }

    /// Waits for exit; None if it is still running at the deadline.
    pub fn wait_exit(&mut self, deadline: Duration) -> Option<std::process::ExitStatus> {
        let end = Instant::now() + deadline;
        loop {
            if let Some(s) = self.child.try_wait().expect("try_wait") {
                return Some(s);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Runs `cmd` (its stderr piped) to its end, at most [`WAIT`]: its exit
/// code and what it wrote to stderr. A command that never stops fails the
/// test instead of holding it.
pub fn exit_and_stderr(name: &'static str, mut cmd: Command) -> (Option<i32>, String) {
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut p = Proc::spawn(name, cmd);
    let status = p
        .wait_exit(WAIT)
        .unwrap_or_else(|| panic!("{name} did not stop by itself"));
    let mut err = String::new();
    if let Some(mut stderr) = p.child.stderr.take() {
        stderr.read_to_string(&mut err).expect("stderr");
    }
    (status.code(), err)
}

/// Makes a FIFO (named pipe) at `path`: a file that holds a reader until
/// something writes to it.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path");
    // SAFETY: a NUL-terminated path and a mode.
    #[allow(unsafe_code)]
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(made, 0, "mkfifo {}", path.display());
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `groundgate dev-broker` on a free port and returns it with its bootstrap address.
pub fn dev_broker(partitions: u32) -> (Proc, String) {
    let mut cmd = bin();
    cmd.args([
        "dev-broker",
        "--port",
        "0",
        "--partitions",
        &partitions.to_string(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut p = Proc::spawn("dev-broker", cmd);
    let stdout = p.child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("dev-broker prints its address");
    let bootstrap = line
        .trim()
        .strip_prefix("bootstrap=")
        .unwrap_or_else(|| panic!("unexpected dev-broker output: {line:?}"))
        .to_string();
    (p, bootstrap)
}

/// Starts `groundgate dev-broker` on a fixed `port` (a broker that appears,
/// or comes back, where a worker already expects it) and waits until it
/// accepts connections.
pub fn dev_broker_on(port: u16, partitions: u32) -> Proc {
    let mut cmd = bin();
    cmd.args([
        "dev-broker",
        "--port",
        &port.to_string(),
        "--partitions",
        &partitions.to_string(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let p = Proc::spawn("dev-broker", cmd);
    wait_for("the dev-broker to accept connections", WAIT, || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    p
}

/// `groundgate produce --count n` synthetic answers, output discarded;
/// whether it succeeded.
pub fn produce_synthetic(bootstrap: &str, n: u64) -> bool {
    bin()
        .args([
            "produce",
            "--brokers",
            bootstrap,
            "--count",
            &n.to_string(),
            "--rate",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A port that was free a moment ago (the OS does not hand it out again at once).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Minimal HTTP/1.1 GET; returns (status, body). Errors (connection refused
/// while a server starts) come back as `None`.
pub fn http_get(addr: SocketAddr, path_and_query: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        s,
        "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// Polls `f` until it returns Some, or panics with `what` at the deadline.
pub fn wait_for<T>(what: &str, deadline: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + deadline;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Samples of one metric family from Prometheus text: label string → value.
pub fn samples(metrics: &str, name: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for line in metrics.lines() {
        if line.starts_with('#') {
            continue;
        }
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (labels, value) = if let Some(r) = rest.strip_prefix('{') {
            match r.split_once("} ") {
                Some((l, v)) => (l.to_string(), v),
                None => continue,
            }
        } else if let Some(v) = rest.strip_prefix(' ') {
            (String::new(), v)
        } else {
            continue;
        };
        if let Ok(v) = value.trim().parse() {
            out.insert(labels, v);
        }
    }
    out
}

/// The `kind` of every problem in an `audit verify --json` report, in order.
pub fn problem_kinds(report: &serde_json::Value) -> Vec<String> {
    report["problems"]
        .as_array()
        .expect("problems array")
        .iter()
        .map(|p| p["kind"].as_str().unwrap_or("?").to_string())
        .collect()
}

/// Sum of the samples of `name` whose labels contain `label_filter` (e.g. `outcome="accepted"`).
pub fn sum_where(metrics: &str, name: &str, label_filter: &str) -> f64 {
    samples(metrics, name)
        .iter()
        .filter(|(l, _)| l.contains(label_filter))
        .map(|(_, v)| v)
        .sum()
}

/// Runs `cmd` (an external tool whose presence `need_tool` checked, or
/// groundgate itself) and asserts it succeeded, showing its stderr when it
/// did not; its stdout.
pub fn succeeded(cmd: &mut Command, what: &str) -> Vec<u8> {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what} runs: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Records on `topic` according to kcat, reading every partition to its end.
pub fn kcat_count(bootstrap: &str, topic: &str) -> usize {
    let out = succeeded(
        Command::new("kcat").args([
            "-b", bootstrap, "-C", "-t", topic, "-e", "-q", "-f", "%p:%o\\n",
        ]),
        "kcat",
    );
    String::from_utf8_lossy(&out).lines().count()
}

/// Percent-encodes a query-string value.
pub fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A header of an output record as text.
pub fn header(m: &rdkafka::message::OwnedMessage, key: &str) -> Option<String> {
    use rdkafka::message::{Headers, Message};
    m.headers()?
        .iter()
        .find(|h| h.key == key)
        .and_then(|h| h.value)
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The input (partition, offset) an output record was made from, by its headers.
pub fn coords(m: &rdkafka::message::OwnedMessage) -> (i32, i64) {
    use groundgate::kafka::outputs::{H_INPUT_OFFSET, H_INPUT_PARTITION};
    let p = header(m, H_INPUT_PARTITION).expect("partition header");
    let o = header(m, H_INPUT_OFFSET).expect("offset header");
    (p.parse().unwrap(), o.parse().unwrap())
}

/// Committed offsets of `group` on the input topic `answers`, per partition
/// (0 where nothing is committed).
pub fn committed(bootstrap: &str, group: &str, partitions: i32) -> BTreeMap<i32, i64> {
    committed_with_metadata(bootstrap, group, partitions)
        .into_iter()
        .map(|(p, (o, _))| (p, o))
        .collect()
}

/// As [`committed`], with each committed offset's metadata ("" where none).
pub fn committed_with_metadata(
    bootstrap: &str,
    group: &str,
    partitions: i32,
) -> BTreeMap<i32, (i64, String)> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::{ClientConfig, Offset, TopicPartitionList};
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition("answers", p);
    }
    let got = c.committed_offsets(tpl, Duration::from_secs(10)).unwrap();
    got.elements()
        .iter()
        .map(|e| match e.offset() {
            Offset::Offset(o) => (e.partition(), (o, e.metadata().to_string())),
            _ => (e.partition(), (0, String::new())),
        })
        .collect()
}

/// Starts `groundgate run` as a process; its log goes to `log`.
pub fn start_worker(bootstrap: &str, config: &Path, metrics: SocketAddr, log: &Path) -> Proc {
    let mut cmd = bin();
    cmd.args(["run", "--brokers", bootstrap, "--config"])
        .arg(config)
        .args(["--metrics-addr", &metrics.to_string()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    Proc::spawn("run", cmd)
}

/// [`start_worker`] with `toml` as its configuration file, written into
/// `dir` beside its log, and /metrics on a free port: the worker, its log
/// and its metrics address.
pub fn start_configured_worker(
    bootstrap: &str,
    dir: &Path,
    toml: &str,
) -> (Proc, std::path::PathBuf, SocketAddr) {
    let config = dir.join("groundgate.toml");
    std::fs::write(&config, toml).unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let log = dir.join("run.log");
    let worker = start_worker(bootstrap, &config, metrics, &log);
    (worker, log, metrics)
}

/// Every `(panel title, expr)` of the shipped Grafana dashboard (rows may
/// nest panels).
pub fn dashboard_exprs() -> Vec<(String, String)> {
    fn walk(v: &serde_json::Value, out: &mut Vec<(String, String)>, title: &str) {
        use serde_json::Value;
        match v {
            Value::Object(m) => {
                let title = m.get("title").and_then(Value::as_str).unwrap_or(title);
                for (k, child) in m {
                    match (k.as_str(), child) {
                        ("expr", Value::String(e)) if !e.trim().is_empty() => {
                            out.push((title.to_string(), e.clone()))
                        }
                        _ => walk(child, out, title),
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|c| walk(c, out, title)),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(repo("deploy/grafana/dashboards/groundgate.json")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out, "");
    out
}

/// The `(alert name, expr)` of every rule in the shipped alert rules
/// (one-line expressions, as the file is written).
pub fn alert_exprs() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo("deploy/prometheus/alerts.yml")).unwrap();
    let mut out = Vec::new();
    let mut name = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("- alert:") {
            name = n.trim().to_string();
        } else if let Some(e) = line.strip_prefix("expr:") {
            out.push((name.clone(), e.trim().to_string()));
        }
    }
    assert_eq!(
        out.len(),
        text.matches("- alert:").count(),
        "one-line exprs"
    );
    out
}

/// The metric families a PromQL expression names (`groundgate_*` and
/// `process_*`; histogram series reduced to their family).
pub fn metric_names(expr: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let bytes = expr.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &expr[i..];
        if (rest.starts_with("groundgate_") || rest.starts_with("process_"))
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
        {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..end];
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            out.insert(base.to_string());
            i += end;
        } else {
            i += 1;
        }
    }
    out
}

/// The label values a PromQL expression selects with `=` or `=~`, per
/// `groundgate_*` metric family: (family, label, values), a regex's
/// alternatives split at `|`. Dashboard variables (`$job`) and negative
/// matchers select no particular value and are left out.
pub fn label_matchers(expr: &str) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for name in metric_names(expr) {
        let mut rest = expr;
        while let Some(at) = rest.find(name.as_str()) {
            let after = &rest[at + name.len()..];
            let series = after.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
            rest = series;
            let Some(body) = series.strip_prefix('{').and_then(|b| b.split_once('}')) else {
                continue;
            };
            for matcher in body.0.split(',') {
                let Some((label, value)) = matcher.split_once('=') else {
                    continue;
                };
                let (label, value) = (label.trim(), value.trim());
                if label.ends_with('!') {
                    continue;
                }
                let (regex, value) = match value.strip_prefix('~') {
                    Some(v) => (true, v.trim()),
                    None => (false, value),
                };
                let value = value.trim_matches('"');
                if value.contains('$') {
                    continue;
                }
                let values = if regex {
                    value.split('|').map(str::to_string).collect()
                } else {
                    vec![value.to_string()]
                };
                out.push((name.clone(), label.to_string(), values));
            }
        }
    }
    out
}

/// A new pseudo-terminal: its controller side, to write what a user types,
/// and its terminal side, to give a child as standard input (it then is a
/// terminal to the child, in canonical mode: Ctrl-D ends its input).
pub fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    // SAFETY: plain libc calls on a descriptor this function owns; each
    // result is checked before it is used.
    unsafe {
        let controller = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(controller >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(controller), 0, "grantpt");
        assert_eq!(libc::unlockpt(controller), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(
            libc::ptsname_r(controller, name.as_mut_ptr(), name.len()),
            0,
            "ptsname_r"
        );
        let terminal = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY);
        assert!(terminal >= 0, "open the terminal side");
        (
            std::fs::File::from_raw_fd(controller),
            std::fs::File::from_raw_fd(terminal),
        )
    }
}

/// Runs `cmd` with a pseudo-terminal as its standard input, types `typed`
/// there followed by one Ctrl-D, and waits for it to end: its exit status,
/// standard output and standard error. A command that waits for a second
/// Ctrl-D fails the test.
pub fn typed_at_a_terminal(
    name: &'static str,
    mut cmd: Command,
    typed: &[u8],
) -> (std::process::ExitStatus, String, String) {
    use std::io::{Read as _, Write as _};
    let (mut controller, terminal) = pty();
    let child = cmd
        .stdin(Stdio::from(terminal))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
    let mut p = Proc { child, name };
    controller.write_all(typed).unwrap();
    controller.write_all(b"\x04").unwrap();
    let status = p
        .wait_exit(WAIT)
        .unwrap_or_else(|| panic!("{name} waits for a second Ctrl-D"));
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut stdout) = p.child.stdout.take() {
        stdout.read_to_string(&mut out).unwrap();
    }
    if let Some(mut stderr) = p.child.stderr.take() {
        stderr.read_to_string(&mut err).unwrap();
    }
    (status, out, err)
}

/// A two-broker embedded cluster: the input topic (2 partitions), the group
/// coordinator and the transaction coordinator of `group` on broker 1, the
/// output topics on broker 2.
pub fn outputs_on_broker_2(group: &str) -> EmbeddedBroker {
    let broker = EmbeddedBroker::start_with_brokers(2, 2, &[]).unwrap();
    let cluster = broker.cluster();
    for (topic, leader) in [
        ("answers", 1),
        ("answers.final", 2),
        ("answers.retry", 2),
        ("answers.audit", 2),
        ("answers.dlq", 2),
    ] {
        cluster.create_topic(topic, 2, 1).unwrap();
        for p in 0..2 {
            cluster.partition_leader(topic, p, Some(leader)).unwrap();
        }
    }
    cluster
        .coordinator(MockCoordinator::Group(group.into()), 1)
        .unwrap();
    cluster
        .coordinator(MockCoordinator::Transaction(format!("{group}-txn")), 1)
        .unwrap();
    broker
}
