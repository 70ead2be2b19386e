//! `saltq TARGET FUNCTION [ARGS...]`: salt's main command on saltq's transport.

use std::collections::BTreeMap;

use saltq_proto::v1::{self as pb, job_service_client::JobServiceClient, run_response::Kind};
use saltq_semantics::args::{parse_input, split_multi_function};
use saltq_semantics::output::Outputter;
use saltq_transport::{Channel, value};
use serde_json::{Map, Value, json};
use tonic::Code;

use crate::connect::ConnectArgs;
use crate::exit;
use crate::output::{OutputArgs, Printer, static_outputter};

/// Salt's target-type flags; at most one may be given.
#[derive(Debug, Clone, clap::Args)]
#[group(multiple = false)]
pub struct TargetFlags {
    /// Target by Perl-compatible regular expression on minion ids.
    #[arg(short = 'E', long = "pcre")]
    pub pcre: bool,
    /// Target a comma-separated list of minion ids.
    #[arg(short = 'L', long = "list")]
    pub list: bool,
    /// Target by grain: key:value, glob on the value.
    #[arg(short = 'G', long = "grain")]
    pub grain: bool,
    /// Target by grain, regular expression on the value.
    #[arg(short = 'P', long = "grain-pcre")]
    pub grain_pcre: bool,
    /// Target by pillar: key:value, glob on the value.
    #[arg(short = 'I', long = "pillar")]
    pub pillar: bool,
    /// Target by pillar, regular expression on the value.
    #[arg(short = 'J', long = "pillar-pcre")]
    pub pillar_pcre: bool,
    /// Target by IP address or CIDR network.
    #[arg(short = 'S', long = "ipcidr")]
    pub ipcidr: bool,
    /// Target by a compound expression (G@, E@, L@, and/or/not, ...).
    #[arg(short = 'C', long = "compound")]
    pub compound: bool,
    /// Target a nodegroup from the master's config.
    #[arg(short = 'N', long = "nodegroup")]
    pub nodegroup: bool,
    /// Range targeting (needs a seco range server; not supported).
    #[arg(short = 'R', long = "range")]
    pub range: bool,
}

impl TargetFlags {
    /// Salt's tgt_type name.
    pub fn tgt_type(&self) -> &'static str {
        match self {
            t if t.pcre => "pcre",
            t if t.list => "list",
            t if t.grain => "grain",
            t if t.grain_pcre => "grain_pcre",
            t if t.pillar => "pillar",
            t if t.pillar_pcre => "pillar_pcre",
            t if t.ipcidr => "ipcidr",
            t if t.compound => "compound",
            t if t.nodegroup => "nodegroup",
            t if t.range => "range",
            _ => "glob",
        }
    }
}
/// Flags of the main command.
#[derive(Debug, Clone, clap::Args)]
pub struct JobArgs {
    #[command(flatten)]
    pub target_flags: TargetFlags,
    /// Delimiter for grain and pillar targets.
    #[arg(long)]
    pub delimiter: Option<String>,
    /// Seconds to wait before asking silent minions whether they still run the job.
    #[arg(short = 't', long, default_value_t = 5.0)]
    pub timeout: f64,
    /// Seconds to wait for those answers.
    #[arg(long = "gather-job-timeout", default_value_t = 10.0)]
    pub gather_job_timeout: f64,
    /// Publish and print the jid without waiting for returns.
    #[arg(long = "async")]
    pub r#async: bool,
    /// Print the jid and a line of dashes before the returns.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Do not list minions that did not return.
    #[arg(long = "hide-timeout")]
    pub hide_timeout: bool,
    /// Print the jid first.
    #[arg(long = "show-jid")]
    pub show_jid: bool,
    /// Returners for the minions to send results to as well (comma-separated).
    #[arg(long = "return")]
    pub ret: Option<String>,
    /// Returner configuration profile.
    #[arg(long = "return_config", visible_alias = "return-config")]
    pub return_config: Option<String>,
    /// Returner keyword arguments, as a YAML or JSON dict.
    #[arg(long = "return_kwargs", visible_alias = "return-kwargs")]
    pub return_kwargs: Option<String>,
    /// Metadata passed through to the returns, as a YAML or JSON dict.
    #[arg(long)]
    pub metadata: Option<String>,
    /// Print all returns at once, when every minion has returned.
    #[arg(long = "static")]
    pub r#static: bool,
    /// Separator between the argument lists of a multi-function job.
    #[arg(long = "args-separator", default_value = ",")]
    pub args_separator: String,
    /// Run over a sliding window of N minions, or N% of them.
    #[arg(short = 'b', long = "batch-size", visible_alias = "batch")]
    pub batch: Option<String>,
    /// Seconds a finished minion's slot stays empty before the next minion starts.
    #[arg(long = "batch-wait", default_value_t = 0.0)]
    pub batch_wait: f64,
    /// Stop the batch at the first minion that fails.
    #[arg(long)]
    pub failhard: bool,
    /// The target.
    pub target: String,
    /// The function, or several separated by commas.
    pub function: String,
    /// Arguments: YAML-typed; key=value becomes a keyword argument.
    #[arg(allow_negative_numbers = true)]
    pub args: Vec<String>,
}

fn dict_flag(flag: &str, s: &Option<String>) -> Result<Option<prost_types::Struct>, String> {
    let Some(s) = s else { return Ok(None) };
    match serde_yaml_ng::from_str::<Value>(s) {
        Ok(Value::Object(m)) => Ok(Some(value::map_to_struct(&m))),
        _ => Err(format!(
            "{flag} must be a dict in YAML or JSON, e.g. '{{\"key\": \"value\"}}', got {s:?}"
        )),
    }
}

/// The publish request the flags describe.
pub fn publish_request(a: &JobArgs) -> Result<pb::PublishRequest, String> {
    let (funs, groups) =
        split_multi_function(&a.function, &a.args, &a.args_separator).map_err(|e| e.to_string())?;
    let (arg, kwarg) = if funs.len() == 1 {
        let (args, kwargs) = parse_input(&groups.first().cloned().unwrap_or_default());
        (
            args.iter().map(value::to_prost).collect(),
            Some(value::map_to_struct(&kwargs)),
        )
    } else {
        // Salt packs each function's keyword arguments into its list as a __kwarg__ dict.
        let lists = groups
            .iter()
            .map(|g| {
                let (mut args, kwargs) = parse_input(g);
                if !kwargs.is_empty() {
                    let mut k = kwargs;
                    k.insert("__kwarg__".into(), Value::Bool(true));
                    args.push(Value::Object(k));
                }
                value::to_prost(&Value::Array(args))
            })
            .collect();
        (lists, None)
    };
    Ok(pb::PublishRequest {
        tgt: a.target.clone(),
        tgt_type: a.target_flags.tgt_type().into(),
        fun: funs,
        arg,
        kwarg,
        ret: a.ret.clone().unwrap_or_default(),
        jid: String::new(),
        metadata: dict_flag("--metadata", &a.metadata)?,
        delimiter: a.delimiter.clone().unwrap_or_default(),
        ret_config: a.return_config.clone().unwrap_or_default(),
        ret_kwargs: dict_flag("--return_kwargs", &a.return_kwargs)?,
    })
}

/// Salt's message for a minion that did not return.
pub fn no_return_message(reason: pb::NoReturnReason, jid: &str) -> String {
    match reason {
        pb::NoReturnReason::NotConnected => "Minion did not return. [Not connected]".to_owned(),
        pb::NoReturnReason::Unreachable => {
            "Minion did not return. [Its master replica could not be reached]".to_owned()
        }
        _ => format!(
            "Minion did not return. [No response]\nThe minions may not have all finished running and any remaining minions will return upon completion. To look up the return data for this job later, run the following command:\n\nsaltq run jobs.lookup_jid {jid}"
        ),
    }
}

/// Salt's retcode for one return: the reported retcode, else 1 for a `False` result.
fn retcode_of(r: &pb::JobReturn, ret: &Value) -> i32 {
    if r.retcode != 0 {
        return r.retcode;
    }
    if ret == &Value::Bool(false) {
        return 1;
    }
    0
}

/// The `exclude=` and `terse=` keyword arguments of a single-function job, which salt's
/// highstate outputter reads from the command line for `--state-output filter` (a
/// multi-function job's arguments are lists, where salt finds none).
pub fn state_filter(a: &JobArgs) -> (Option<Value>, Option<Value>) {
    if a.function.contains(',') {
        return (None, None);
    }
    let (_, kwargs) = parse_input(&a.args);
    (kwargs.get("exclude").cloned(), kwargs.get("terse").cloned())
}

/// Prints Salt's "no minions" message and returns exit code 2.
pub fn no_minions(msg: &str) -> i32 {
    println!("{msg}");
    eprintln!("ERROR: No return received");
    exit::NO_RETURN
}

/// Runs the main command; returns the exit code.
pub async fn run(conn: &ConnectArgs, out: &OutputArgs, a: &JobArgs) -> i32 {
    // As Salt's CLI, the master's config gives the output defaults (state_output, ...).
    let out = &OutputArgs {
        master: crate::output::MasterOutputKeys::read(&conn.config_dir),
        ..out.clone()
    };
    if a.target_flags.range {
        eprintln!("saltq: range targeting (-R) is not supported: saltq has no seco range server");
        return exit::USAGE;
    }
    let req = match publish_request(a) {
        Ok(r) => r,
        Err(e) => return exit::usage(&e),
    };
    let mut printer = match Printer::new(out) {
        Ok(p) => p,
        Err(e) => return exit::usage(&format!("{e:#}")),
    };
    let (exclude, terse) = state_filter(a);
    printer.set_state_filter(exclude, terse);
    let ch = match crate::dial(conn).await {
        Ok(ch) => ch,
        Err(code) => return code,
    };
    if a.batch.is_some() {
        return crate::batch::run(ch, req, a, &mut printer).await;
    }
    let mut client = JobServiceClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
    if a.r#async {
        return match client.publish(req).await {
            Ok(r) => {
                println!("Executed command with job ID: {}", r.into_inner().jid);
                exit::OK
            }
            Err(s) => status_exit(&ch, &s),
        };
    }
    let run = pb::RunRequest {
        publish: Some(req),
        timeout: a.timeout,
        gather_job_timeout: a.gather_job_timeout,
    };
    let mut stream = match client.run(run).await {
        Ok(s) => s.into_inner(),
        Err(s) => return status_exit(&ch, &s),
    };
    let mut retcodes = Vec::new();
    // Each minion's retcode or no-return message, for `--summary`/`cli_summary`.
    let mut summary: Vec<(String, Result<i64, String>)> = Vec::new();
    let mut collected: BTreeMap<String, Value> = BTreeMap::new();
    // salt prints sys.doc once per function, not once per minion.
    let sys_doc = a.function == "sys.doc";
    let mut jid = String::new();
    loop {
        let msg = match stream.message().await {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(s) => {
                eprintln!(
                    "saltq: lost the master at {} while following the job: {}",
                    ch.address(),
                    s.message()
                );
                if !jid.is_empty() {
                    // The minions still run it and their returns are stored wherever they are
                    // connected (another replica of a cluster, or this master once back).
                    eprintln!(
                        "The job may still be running. To look up its returns later, run:\n\n\
                         saltq run jobs.lookup_jid {jid}"
                    );
                }
                return exit::UNAVAILABLE;
            }
        };
        match msg.kind {
            Some(Kind::Published(p)) => {
                jid = p.jid.clone();
                if a.verbose {
                    let line = format!("Executing job with jid {jid}");
                    println!("{line}\n{}\n", "-".repeat(line.len()));
                } else if a.show_jid {
                    println!("jid: {jid}");
                }
            }
            Some(Kind::MinionReturn(r)) => {
                let ret = r
                    .r#return
                    .as_ref()
                    .map(value::from_prost)
                    .unwrap_or(Value::Null);
                retcodes.push(retcode_of(&r, &ret));
                summary.push((r.id.clone(), Ok(i64::from(retcode_of(&r, &ret)))));
                let hint = r.out.parse::<Outputter>().ok();
                if sys_doc || a.r#static {
                    collected.insert(r.id.clone(), ret);
                } else {
                    printer.print_with_retcode(
                        &json!({ r.id.clone(): ret }),
                        hint,
                        i64::from(r.retcode),
                    );
                }
            }
            Some(Kind::NoReturn(n)) => {
                retcodes.push(1);
                let why = pb::NoReturnReason::try_from(n.reason)
                    .unwrap_or(pb::NoReturnReason::NoResponse);
                summary.push((n.id.clone(), Err(no_return_message(why, &jid))));
                if a.hide_timeout || sys_doc {
                    continue;
                }
                let reason = pb::NoReturnReason::try_from(n.reason)
                    .unwrap_or(pb::NoReturnReason::NoResponse);
                let msg = no_return_message(reason, &jid);
                if a.r#static {
                    collected.insert(n.id.clone(), Value::String(msg));
                } else {
                    printer.print_no_return(&n.id, &msg);
                }
            }
            Some(Kind::Finished(_)) | None => {}
        }
    }
    if sys_doc {
        return print_docs(&collected, &mut printer);
    }
    if a.r#static && !collected.is_empty() {
        let all: Map<String, Value> = collected.into_iter().collect();
        let out = static_outputter(printer.chosen(), &a.function);
        printer.print(&Value::Object(all), Some(out));
    }
    // Salt prints the summary only with the default outputter.
    if out.master.summary(out.summary) && printer.chosen().is_none() {
        printer.write(&crate::output::returns_summary(&summary, a.verbose));
    }
    let (code, message) = exit::job_exit(&retcodes, a.r#static);
    if let Some(message) = message {
        eprintln!("{message}");
    }
    code
}

/// salt's `_print_docs`: each function's doc once, `fun:` then the doc then a blank line; with
/// `--out`, each `{fun: doc}` through the outputter.
fn print_docs(rets: &BTreeMap<String, Value>, printer: &mut Printer) -> i32 {
    if rets.is_empty() {
        eprintln!("No minions found to gather docs from");
        return exit::NO_RETURN;
    }
    let mut docs: BTreeMap<String, Value> = BTreeMap::new();
    for ret in rets.values() {
        for (fun, doc) in ret.as_object().into_iter().flatten() {
            let empty = doc.is_null() || doc.as_str() == Some("");
            if !empty && !docs.contains_key(fun) {
                docs.insert(fun.clone(), doc.clone());
            }
        }
    }
    for (fun, doc) in docs {
        if printer.chosen().is_some() {
            printer.print(&json!({ fun: doc }), Some(Outputter::Nested));
        } else {
            let text = doc
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| doc.to_string());
            printer.write(&format!("{fun}:\n{text}\n\n"));
        }
    }
    exit::OK
}

/// Maps a refused RPC to Salt's message and exit code.
pub fn status_exit(ch: &Channel, s: &tonic::Status) -> i32 {
    match s.code() {
        Code::NotFound if s.message().starts_with("No minions matched") => no_minions(s.message()),
        Code::InvalidArgument => {
            eprintln!("saltq: {}", s.message());
            exit::USAGE
        }
        Code::ResourceExhausted => {
            eprintln!(
                "saltq: the master refused the request as too large (its max_message_size): {}",
                s.message()
            );
            exit::USAGE
        }
        Code::PermissionDenied | Code::Unauthenticated => {
            eprintln!("saltq: the master refused the request: {}", s.message());
            exit::NOPERM
        }
        _ => crate::report_rpc_failure(ch, s),
    }
}
