//! The smaller subcommands: `run` (runners), `jobs`, `events`, `pki`.

use std::path::PathBuf;

use saltq_proto::v1::{
    self as pb, event_service_client::EventServiceClient,
    runner_service_client::RunnerServiceClient,
};
use saltq_semantics::args::parse_input;
use saltq_semantics::jid::Jid;
use saltq_semantics::output::Outputter;
use saltq_transport::pki::{self, Ca, CertRole, IssueRequest};
use saltq_transport::value;
use serde_json::{Map, Value, json};

use crate::connect::ConnectArgs;
use crate::exit;
use crate::output::{OutputArgs, Printer};

/// `saltq run FUN [ARGS...]` (salt-run).
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Start the runner and print its tag without waiting.
    #[arg(long = "async")]
    pub r#async: bool,
    /// The runner function, e.g. jobs.lookup_jid.
    pub fun: String,
    /// Arguments: YAML-typed; key=value becomes a keyword argument.
    #[arg(allow_negative_numbers = true)]
    pub args: Vec<String>,
}

/// `saltq jobs ...`.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum JobsCmd {
    /// Jobs still running on minions (saltutil.running everywhere).
    Active,
    /// The returns of one job.
    Lookup {
        /// The job id.
        jid: String,
    },
    /// Stored jobs, newest first.
    List {
        /// Only jobs of functions matching this glob.
        #[arg(long)]
        function: Option<String>,
        /// Only jobs whose target matches this glob.
        #[arg(long)]
        target: Option<String>,
        /// Only jobs started since this time (RFC 3339) or this many hours ago (e.g. 24h).
        #[arg(long)]
        since: Option<String>,
    },
}

/// `saltq events`.
#[derive(Debug, Clone, clap::Args)]
pub struct EventsArgs {
    /// Only tags matching this glob.
    #[arg(long)]
    pub tag: Option<String>,
    /// Stop after this many events.
    #[arg(long)]
    pub count: Option<u64>,
}

/// `saltq pki ...` (on the master host: reads the CA key from pki_dir).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum PkiCmd {
    /// Issue a client certificate (for people, automation, grpcurl).
    Issue {
        /// The client's name (becomes the job's `user`).
        name: String,
        /// Where to write NAME.crt, NAME.key and ca.crt (default: PKI_DIR/issued).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Validity in days.
        #[arg(long, default_value_t = 365)]
        days: i64,
    },
    /// Issue a minion certificate (accepted without the pending step when the master allows it).
    Minion {
        /// The minion id.
        id: String,
        /// Where to write ID.crt, ID.key and ca.crt (default: PKI_DIR/issued).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Validity in days.
        #[arg(long, default_value_t = 365)]
        days: i64,
    },
    /// Print the CA's fingerprint (for a minion's master_finger).
    Fingerprint,
}

async fn with_printer(out: &OutputArgs) -> Result<Printer, i32> {
    Printer::new(out).map_err(|e| exit::usage(&format!("{e:#}")))
}

/// `saltq run`.
pub async fn run_runner(conn: &ConnectArgs, out: &OutputArgs, a: &RunArgs) -> i32 {
    let (args, kwargs) = parse_input(&a.args);
    run_runner_with(conn, out, a, args, kwargs).await
}

async fn run_runner_with(
    conn: &ConnectArgs,
    out: &OutputArgs,
    a: &RunArgs,
    args: Vec<Value>,
    kwargs: Map<String, Value>,
) -> i32 {
    if a.fun == "state.event" && !a.r#async {
        return match EventWatch::bind(args, kwargs) {
            Ok(w) => watch_state_events(conn, &w).await,
            Err(e) => {
                println!("Passed invalid arguments to state.event: {e}");
                exit::GENERIC
            }
        };
    }
    let mut printer = match with_printer(out).await {
        Ok(p) => p,
        Err(c) => return c,
    };
    let ch = match crate::dial(conn).await {
        Ok(ch) => ch,
        Err(code) => return code,
    };
    let mut client = RunnerServiceClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
    let arg: Vec<prost_types::Value> = args.iter().map(value::to_prost).collect();
    let kwarg = Some(value::map_to_struct(&kwargs));
    if a.r#async {
        return match client
            .run_runner_async(pb::RunRunnerAsyncRequest {
                fun: a.fun.clone(),
                arg,
                kwarg,
            })
            .await
        {
            Ok(r) => {
                let r = r.into_inner();
                println!(
                    "Running in asynchronous mode. Results of this execution may be collected by attaching to the master event bus or by examining the master job cache, if configured. This execution is running under tag {}",
                    r.tag
                );
                exit::OK
            }
            Err(s) => runner_status(&ch, &s, &mut printer),
        };
    }
    match client
        .run_runner(pb::RunRunnerRequest {
            fun: a.fun.clone(),
            arg,
            kwarg,
        })
        .await
    {
        Ok(r) => {
            let r = r.into_inner();
            let ret = r
                .r#return
                .as_ref()
                .map(value::from_prost)
                .unwrap_or(Value::Null);
            let (shown, hint) = runner_display(&ret);
            printer.print(shown, hint);
            runner_exit(&ret, r.success)
        }
        Err(s) => runner_status(&ch, &s, &mut printer),
    }
}

/// What salt-run prints of a runner's return and with which outputter when no `--out` is
/// given: a return naming its `outputter` (the orchestrate runner's `highstate`) is printed
/// with it, and one of exactly `{data, outputter}` is printed as its `data`.
fn runner_display(ret: &Value) -> (&Value, Option<Outputter>) {
    let Value::Object(m) = ret else {
        return (ret, None);
    };
    let hint = m
        .get("outputter")
        .and_then(Value::as_str)
        .and_then(|o| o.parse().ok());
    match (m.len(), m.get("data")) {
        (2, Some(data)) if m.contains_key("outputter") => (data, hint),
        _ => (ret, hint),
    }
}

/// salt-run's exit status: a return's own `retcode` (the orchestrate runner's 0 or 1), or
/// its `data`'s; otherwise 0 when the runner succeeded and 1 when it failed.
fn runner_exit(ret: &Value, success: bool) -> i32 {
    let code = ret
        .get("retcode")
        .or_else(|| ret.get("data").and_then(|d| d.get("retcode")))
        .and_then(Value::as_i64);
    match code {
        Some(c) => i32::try_from(c).unwrap_or(exit::GENERIC),
        None if success => exit::OK,
        None => exit::GENERIC,
    }
}

fn runner_status(ch: &saltq_transport::Channel, s: &tonic::Status, printer: &mut Printer) -> i32 {
    match s.code() {
        tonic::Code::Unimplemented | tonic::Code::InvalidArgument => {
            printer.print(&Value::String(s.message().to_owned()), None);
            exit::GENERIC
        }
        _ => crate::report_rpc_failure(ch, s),
    }
}

fn since(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    if let Some(h) = s.strip_suffix('h') {
        let hours: i64 = h
            .parse()
            .map_err(|_| format!("invalid --since {s:?}: expected RFC 3339 or e.g. 24h"))?;
        return Ok(chrono::Utc::now() - chrono::Duration::hours(hours));
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("invalid --since {s:?}: {e}"))
}

/// `saltq jobs`: shortcuts for the `jobs` runners, so the output is theirs by construction.
pub async fn jobs(conn: &ConnectArgs, out: &OutputArgs, cmd: &JobsCmd) -> i32 {
    let (fun, args, kwargs): (&str, Vec<Value>, Map<String, Value>) = match cmd {
        JobsCmd::Active => ("jobs.active", vec![], Map::new()),
        JobsCmd::Lookup { jid } => {
            if let Err(e) = Jid::parse(jid) {
                return exit::usage(&e.to_string());
            }
            ("jobs.lookup_jid", vec![json!(jid)], Map::new())
        }
        JobsCmd::List {
            function,
            target,
            since: s,
        } => {
            let mut k = Map::new();
            if let Some(f) = function {
                k.insert("search_function".into(), json!(f));
            }
            if let Some(t) = target {
                k.insert("search_target".into(), json!(t));
            }
            if let Some(s) = s {
                match since(s) {
                    Ok(t) => {
                        k.insert(
                            "start_time".into(),
                            json!(t.format("%Y-%m-%dT%H:%M:%S").to_string()),
                        );
                    }
                    Err(e) => return exit::usage(&e),
                }
            }
            ("jobs.list_jobs", vec![], k)
        }
    };
    let a = RunArgs {
        r#async: false,
        fun: fun.to_owned(),
        args: vec![],
    };
    run_runner_with(conn, out, &a, args, kwargs).await
}

/// `saltq events`: `tag<TAB>json` per event, as `salt-run state.event pretty=False`.
pub async fn events(conn: &ConnectArgs, a: &EventsArgs) -> i32 {
    let ch = match crate::dial(conn).await {
        Ok(ch) => ch,
        Err(code) => return code,
    };
    let mut client = EventServiceClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
    let req = pb::StreamEventsRequest {
        tag: a.tag.clone().unwrap_or_default(),
        r#match: pb::TagMatch::Glob as i32,
    };
    let mut stream = match client.stream_events(req).await {
        Ok(s) => s.into_inner(),
        Err(s) => return crate::report_rpc_failure(&ch, &s),
    };
    // The master holds the subscription before it answers: events fired from now on arrive.
    tracing::info!(master = %ch.address(), "subscribed to the event bus");
    let mut seen = 0u64;
    let mut printer = match Printer::new(&OutputArgs {
        no_color: true,
        ..OutputArgs::default()
    }) {
        Ok(p) => p,
        Err(e) => return exit::usage(&format!("{e:#}")),
    };
    while a.count.is_none_or(|c| seen < c) {
        match stream.message().await {
            Ok(Some(m)) => match m.kind {
                Some(pb::stream_events_response::Kind::Event(e)) => {
                    let data = Value::Object(value::opt_struct(e.data.as_ref()));
                    printer.write(&format!("{}\t{}\n", e.tag, data));
                    seen += 1;
                }
                Some(pb::stream_events_response::Kind::Missed(n)) => {
                    eprintln!("saltq: fell behind the event bus, {n} events missed");
                }
                None => {}
            },
            Ok(None) => break,
            Err(s) => return crate::report_rpc_failure(&ch, &s),
        }
    }
    exit::OK
}

/// `saltq run state.event [tagmatch] [count=N] [quiet=True] [pretty=True]`: as salt-run runs
/// this runner in its own process, saltq watches the master's bus from the CLI and prints
/// each event whose tag matches (a glob, else a regular expression of the whole tag) as
/// `tag<TAB>json`, until `count` have matched (`-1`: forever).
#[derive(Debug, Clone, PartialEq)]
pub struct EventWatch {
    /// The glob or regular expression.
    pub tagmatch: String,
    /// How many matches end the watch; negative for never.
    pub count: i64,
    /// Print nothing, only wait.
    pub quiet: bool,
    /// Indented JSON instead of one line.
    pub pretty: bool,
}

impl EventWatch {
    /// Binds the runner's arguments: `tagmatch, count, quiet, sock_dir, pretty, node`.
    pub fn bind(args: Vec<Value>, mut kwargs: Map<String, Value>) -> Result<EventWatch, String> {
        const PARAMS: [&str; 6] = ["tagmatch", "count", "quiet", "sock_dir", "pretty", "node"];
        if args.len() > PARAMS.len() {
            return Err(format!(
                "event() takes from 0 to 6 positional arguments but {} were given",
                args.len()
            ));
        }
        for (name, v) in PARAMS.iter().zip(args) {
            if kwargs.insert((*name).to_owned(), v).is_some() {
                return Err(format!("event() got multiple values for argument '{name}'"));
            }
        }
        if let Some(k) = kwargs.keys().find(|k| !PARAMS.contains(&k.as_str())) {
            return Err(format!("event() got an unexpected keyword argument '{k}'"));
        }
        if kwargs
            .get("node")
            .is_some_and(|n| n.as_str() != Some("master"))
        {
            return Err("node must be 'master': saltq watches the master's event bus".into());
        }
        let count = match kwargs.get("count") {
            None => -1,
            Some(Value::Number(n)) => n
                .as_i64()
                .ok_or_else(|| format!("count must be an integer, got {n}"))?,
            Some(other) => return Err(format!("count must be an integer, got {other}")),
        };
        let tagmatch = match kwargs.get("tagmatch") {
            None => "*".to_owned(),
            Some(Value::String(t)) => t.clone(),
            Some(other) => saltq_semantics::python::str(other),
        };
        let flag = |k: &str| kwargs.get(k).is_some_and(saltq_semantics::python::truthy);
        Ok(EventWatch {
            tagmatch,
            count,
            quiet: flag("quiet"),
            pretty: flag("pretty"),
        })
    }

    /// Salt's `expr_match`: a glob, else a regular expression matching the whole tag.
    pub fn matches(&self, tag: &str) -> bool {
        saltq_semantics::python::fnmatch(tag, &self.tagmatch)
            || regex::Regex::new(&format!(r"\A(?:{})\z", self.tagmatch))
                .is_ok_and(|re| re.is_match(tag))
    }

    /// One printed line: the tag, a tab, the data as Python's `json.dumps` writes it (one
    /// line, or indented by four with `pretty`).
    pub fn line(&self, tag: &str, data: &Value) -> String {
        let json = saltq_semantics::output::render(
            Outputter::Json,
            data,
            &saltq_semantics::output::OutputOptions {
                color: false,
                indent: Some(if self.pretty { 4 } else { -1 }),
            },
        );
        format!("{tag}\t{}\n", json.trim_end())
    }
}

async fn watch_state_events(conn: &ConnectArgs, w: &EventWatch) -> i32 {
    let ch = match crate::dial(conn).await {
        Ok(ch) => ch,
        Err(code) => return code,
    };
    let mut client = EventServiceClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
    let req = pb::StreamEventsRequest {
        tag: String::new(),
        r#match: pb::TagMatch::Glob as i32,
    };
    let mut stream = match client.stream_events(req).await {
        Ok(s) => s.into_inner(),
        Err(s) => return crate::report_rpc_failure(&ch, &s),
    };
    tracing::info!(master = %ch.address(), "subscribed to the event bus");
    let mut printer = match Printer::new(&OutputArgs {
        no_color: true,
        ..OutputArgs::default()
    }) {
        Ok(p) => p,
        Err(e) => return exit::usage(&format!("{e:#}")),
    };
    let mut left = w.count;
    while left != 0 {
        match stream.message().await {
            Ok(Some(m)) => match m.kind {
                Some(pb::stream_events_response::Kind::Event(e)) if w.matches(&e.tag) => {
                    if !w.quiet {
                        let data = Value::Object(value::opt_struct(e.data.as_ref()));
                        printer.write(&w.line(&e.tag, &data));
                    }
                    if left > 0 {
                        left -= 1;
                    }
                }
                Some(pb::stream_events_response::Kind::Missed(n)) => {
                    eprintln!("saltq: fell behind the event bus, {n} events missed");
                }
                _ => {}
            },
            Ok(None) => break,
            Err(s) => return crate::report_rpc_failure(&ch, &s),
        }
    }
    // The runner's return, None, as salt-run prints it.
    printer.print(&Value::Null, None);
    exit::OK
}

/// `saltq pki`.
pub fn pki(conn: &ConnectArgs, cmd: &PkiCmd) -> i32 {
    let pki_dir = match conn.pki_dir() {
        Ok(d) => d,
        Err(e) => return exit::usage(&format!("{e:#}")),
    };
    let ca_cert = pki_dir.join("ca.crt");
    let ca = match Ca::load(&ca_cert, &pki_dir.join("ca.key")) {
        Ok(ca) => ca,
        Err(e) => {
            eprintln!(
                "saltq: cannot load the master's CA from {} (run on the master host, as its user): {e}",
                pki_dir.display()
            );
            return exit::NOPERM;
        }
    };
    let (name, role, dir, days) = match cmd {
        PkiCmd::Fingerprint => {
            return match pki::load_certs(&ca_cert).map(|c| pki::fingerprint_cert(&c[0])) {
                Ok(Ok(fp)) => {
                    println!("{fp}");
                    exit::OK
                }
                Ok(Err(e)) | Err(e) => {
                    eprintln!("saltq: {e}");
                    exit::GENERIC
                }
            };
        }
        PkiCmd::Issue { name, dir, days } => (name, CertRole::Client, dir, *days),
        PkiCmd::Minion { id, dir, days } => (id, CertRole::Minion, dir, *days),
    };
    if name.is_empty() || name.contains('/') {
        return exit::usage(&format!("invalid name {name:?}"));
    }
    let dir = dir.clone().unwrap_or_else(|| pki_dir.join("issued"));
    let req = IssueRequest {
        common_name: name.clone(),
        role,
        dns_names: vec![],
        ips: vec![],
        days,
    };
    let res = ca.issue(&req).and_then(|(c, k)| {
        pki::write_private(&dir.join(format!("{name}.key")), &k)?;
        pki::write_public(&dir.join(format!("{name}.crt")), &c)?;
        pki::write_public(&dir.join("ca.crt"), ca.cert_pem())
    });
    match res {
        Ok(()) => {
            println!("certificate: {}", dir.join(format!("{name}.crt")).display());
            println!("key:         {}", dir.join(format!("{name}.key")).display());
            println!("ca:          {}", dir.join("ca.crt").display());
            exit::OK
        }
        Err(e) => {
            eprintln!("saltq: cannot write the certificate: {e}");
            exit::CANTCREAT
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orchestrate_returns_print_as_salt_run_prints_them() {
        let orch = json!({"data": {"m_master": {}}, "outputter": "highstate", "retcode": 1});
        let (shown, hint) = runner_display(&orch);
        assert_eq!(shown, &orch);
        assert_eq!(hint, Some(Outputter::Highstate));
        assert_eq!(runner_exit(&orch, false), 1);
        let wrapped = json!({"data": {"a": 1}, "outputter": "nested"});
        assert_eq!(runner_display(&wrapped).0, &json!({"a": 1}));
        assert_eq!(runner_display(&json!([1])).1, None);
        assert_eq!(runner_exit(&json!({"data": {"retcode": 3}}), true), 3);
        assert_eq!(runner_exit(&json!(true), true), 0);
        assert_eq!(runner_exit(&json!("Exception occurred"), false), 1);
    }

    #[test]
    fn state_event_binds_and_matches_as_salt() {
        let w = EventWatch::bind(vec![json!("salt/job/*"), json!(2)], Map::new()).unwrap();
        assert_eq!(
            (w.tagmatch.as_str(), w.count, w.quiet, w.pretty),
            ("salt/job/*", 2, false, false)
        );
        assert!(w.matches("salt/job/1/new"));
        let mut k = Map::new();
        k.insert("tagmatch".into(), json!(r"salt/run/\d+/ret"));
        k.insert("pretty".into(), json!(true));
        let w = EventWatch::bind(vec![], k).unwrap();
        assert!(w.matches("salt/run/2026/ret"));
        assert!(!w.matches("salt/run/2026/new"));
        assert_eq!(w.line("t", &json!({"a": 1})), "t\t{\n    \"a\": 1\n}\n");
        let w = EventWatch::bind(vec![], Map::new()).unwrap();
        assert_eq!(w.count, -1);
        assert_eq!(
            w.line("t", &json!({"a": 1, "b": [1, 2]})),
            "t\t{\"a\": 1, \"b\": [1, 2]}\n"
        );
        let mut k = Map::new();
        k.insert("bogus".into(), json!(1));
        assert_eq!(
            EventWatch::bind(vec![], k).unwrap_err(),
            "event() got an unexpected keyword argument 'bogus'"
        );
    }
}
