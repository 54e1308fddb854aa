//! The examples that end each command's `--help`: two to four command lines
//! a user can copy, each with what it does. Paths are the repository's
//! own (`examples/`, `tests/data/`), so they run from a clone as printed.

pub const TOP: &str = "\
Examples:
  groundgate demo                                     # the whole pipeline in one command, a few seconds
  groundgate check examples/answers.jsonl --out out --report out/report.html
  groundgate eval tests/data/grounding_subset.jsonl   # how well grounding separates labelled answers
  groundgate run --brokers kafka:9092 --config examples/groundgate.toml

Each command has its own examples: groundgate <command> --help";

pub const CHECK: &str = "\
Examples:
  groundgate check examples/answers.jsonl --out out --config examples/demo.toml --report out/report.html
  groundgate check examples/answers.jsonl --out out --config examples/demo.toml --compare-config examples/groundgate.toml
  groundgate check exports/2026-11-*.jsonl.gz --out out   # several inputs, one run and one report
  cat answers.jsonl | groundgate check - --out out --fail-on dead_letter --fail-on rejected

Exit codes: 0 done; 1 a --fail-on outcome occurred; 2 a usage, configuration or I/O problem; 3 a record could not be judged \
(a defect in groundgate: it is in dead_letter.jsonl, kind internal); 130 stopped by Ctrl-C or SIGTERM (nothing of the run is kept, earlier outputs \
in --out stay as they were).";

pub const RUN: &str = "\
Examples:
  groundgate run --brokers 127.0.0.1:9092 --config examples/demo.toml   # against `groundgate dev-broker`
  groundgate run --brokers kafka:9092 --config examples/groundgate.toml
  groundgate run --brokers kafka:9092 --guarantee exactly-once --metrics-addr 127.0.0.1:9465
  GROUNDGATE_BROKERS=kafka:9092 GROUNDGATE_LOG_FORMAT=json groundgate run

Exit codes: 0 stopped cleanly (or --preflight found no problem); 1 stopped by an error (or --preflight \
found a problem); 2 invalid configuration; 3 the shutdown did not finish within kafka.drain_deadline_ms \
(uncommitted records are processed again by the next owner); 130 a second Ctrl-C or SIGTERM. \
docs/operations.md#stopping-and-takeover says more.";

pub const DEV_BROKER: &str = "\
Examples:
  groundgate dev-broker --port 9092                   # then: produce / run --brokers 127.0.0.1:9092
  groundgate dev-broker --port 0 --partitions 1       # a free port, printed as bootstrap=HOST:PORT";

pub const DEMO: &str = "\
Examples:
  groundgate demo
  groundgate demo --serve                             # keep broker, worker and /metrics up until Ctrl-C
  groundgate demo --metrics-addr 127.0.0.1:9465       # when 9464 is taken (e.g. by a running `run`)";

pub const PRODUCE: &str = "\
Examples:
  groundgate produce --brokers 127.0.0.1:9092 --file examples/answers.jsonl --rate 0
  groundgate produce --brokers 127.0.0.1:9092 --count 1000 --rate 200   # synthetic answers
  groundgate produce --brokers 127.0.0.1:9092                           # synthetic, until Ctrl-C

Ctrl-C (or SIGTERM) stops sending, waits for the records already sent and prints their number and the
--skip that goes on from there; a second one exits at once. One that comes once the last record was
sent stops nothing.

Exit codes: 0 done (or synthetic answers without --count stopped by a signal); 1 a record not
delivered, or the dev broker dropped records; 2 a usage, configuration or input problem; 130 stopped
by a signal before the end of --file or --count, or by a second signal.";

pub const REPLAY: &str = "\
Examples:
  groundgate replay --config groundgate.toml --kind internal --dry-run   # count first
  groundgate replay --config groundgate.toml --kind internal
  groundgate replay --config groundgate.toml --kind schema --partition 3 --from-offset 1200

Reads the dead-letter topic up to its end when the command starts and sends each dead letter of the
chosen kinds to the input topic as it was received (key, value, the input's own headers); too_large
dead letters hold a summary, not the record, and are counted, never sent. An input record with two
dead letters (same groundgate.input.topic, partition and offset) is sent once in a run. Prints what it
read and sent.

Exit codes: 0 done; 1 a send or read failed (the message says where to go on from); 2 a usage or
configuration problem, a --partition the dead-letter topic does not have among them; 130 stopped by
Ctrl-C or SIGTERM (the summary says where to go on from).";

pub const BENCH: &str = "\
Examples:
  groundgate bench
  groundgate bench --records 5000 --rounds 1          # a quick look";

pub const AUDIT: &str = "\
Examples:
  groundgate audit verify out/audit.jsonl
  groundgate audit verify --brokers kafka:9092 --input-topic answers --group groundgate
  groundgate audit keygen --out keys/audit
  groundgate audit pseudonym --key-file pseudonym.key alice@example.com";

pub const AUDIT_VERIFY: &str = "\
Examples:
  groundgate audit verify out/audit.jsonl
  groundgate audit verify out/audit.jsonl --public-key keys/audit-2026.pub --public-key keys/audit-2027.pub
  groundgate audit verify --brokers kafka:9092 --input-topic answers --group groundgate
  groundgate audit verify --config /etc/groundgate/worker.toml --input-topic answers --group groundgate --public-key keys/keyring.pem";

pub const AUDIT_KEYGEN: &str = "\
Examples:
  groundgate audit keygen --out keys/audit            # keys/audit.key and keys/audit.pub
  groundgate audit keygen                             # groundgate-audit.key and groundgate-audit.pub";

pub const AUDIT_PSEUDONYM: &str = "\
Examples:
  groundgate audit pseudonym --key-file /run/secrets/pseudonym.key alice@example.com
  groundgate audit pseudonym --key-file pseudonym.key alice bob | grep -F -f - out/audit.jsonl   # their rows
  groundgate audit pseudonym --config /etc/groundgate/worker.toml alice@example.com   # the workers' key";

pub const SCHEMA: &str = "\
Examples:
  groundgate schema                                   # the names and titles
  groundgate schema audit-row > audit-row.schema.json
  groundgate schema --out /etc/groundgate/schemas     # every schema, one file each";

pub const EVAL: &str = "\
Examples:
  groundgate eval tests/data/grounding_subset.jsonl
  groundgate eval tests/data/grounding_subset.jsonl --config examples/groundgate.toml --misses 20
  groundgate eval tests/data/grounding_subset.jsonl --by provenance   # a row per value of a record field
  groundgate eval --fit tests/data/grounding_subset.jsonl tests/data/grounding_wice_claims.jsonl   # fit the model's coefficients

Exit codes: 0 done; 2 a usage, configuration or I/O problem, or a line without its label.";
