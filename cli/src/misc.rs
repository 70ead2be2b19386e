//! The smaller subcommands: `run` (runners), `jobs`, `events`, `pki`.

use std::path::PathBuf;

use saltq_proto::v1::{
    self as pb, event_service_client::EventServiceClient,
    runner_service_client::RunnerServiceClient,
};
use saltq_semantics::args::parse_input;
use saltq_semantics::jid::Jid;
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
    let mut printer = match with_printer(out).await {
        Ok(p) => p,
        Err(c) => return c,
    };
    let ch = match crate::dial(conn).await {
        Ok(ch) => ch,
        Err(code) => return code,
    };
    let mut client = RunnerServiceClient::new(ch.clone());
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
            printer.print(&ret, None);
            if r.success { exit::OK } else { exit::GENERIC }
        }
        Err(s) => runner_status(&ch, &s, &mut printer),
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
        out: None,
        out_indent: None,
        out_file: None,
        out_file_append: false,
        no_color: true,
        force_color: false,
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
