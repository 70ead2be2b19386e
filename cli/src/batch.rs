//! Batch mode (`-b N` or `-b N%`): find the minions that answer, then run the job over a sliding
//! window of that many at a time, each sub-batch one job, as salt's batch does. The decisions
//! (the size, which minions start when, `--batch-wait`, `--failhard`) are
//! `saltq_semantics::batch`'s, shared with salt-api's `local_batch`; this file moves the bytes.
//! Progress goes to a terminal only.

use std::collections::BTreeSet;
use std::io::IsTerminal;
use std::time::Duration;

use saltq_proto::v1::{self as pb, job_service_client::JobServiceClient, run_response::Kind};
use saltq_semantics::batch::{BatchSize, Step, Walk};
use saltq_transport::{Channel, value};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::exit;
use crate::job::{JobArgs, no_return_message, status_exit};
use crate::output::Printer;

/// One minion's outcome.
struct Outcome {
    id: String,
    ret: Value,
    retcode: i32,
    no_return: bool,
    /// The return's outputter (`highstate` for state functions), as salt's batch uses it.
    out: String,
}

impl Outcome {
    fn none(id: String, why: String) -> Outcome {
        Outcome {
            id,
            ret: Value::String(why),
            retcode: 1,
            no_return: true,
            out: String::new(),
        }
    }
}

/// Runs one sub-batch as one job on `ids`; sends an outcome for each of them.
async fn run_sub(
    ch: Channel,
    mut req: pb::PublishRequest,
    ids: Vec<String>,
    a: (f64, f64),
    tx: mpsc::UnboundedSender<Outcome>,
) {
    req.tgt = ids.join(",");
    req.tgt_type = "list".into();
    let mut left: BTreeSet<String> = ids.into_iter().collect();
    let mut client = JobServiceClient::new(ch).max_decoding_message_size(usize::MAX);
    let run = pb::RunRequest {
        publish: Some(req),
        timeout: a.0,
        gather_job_timeout: a.1,
    };
    let mut jid = String::new();
    match client.run(run).await {
        Err(s) => {
            for id in std::mem::take(&mut left) {
                let _ = tx.send(Outcome::none(id, s.message().to_owned()));
            }
        }
        Ok(stream) => {
            let mut stream = stream.into_inner();
            while let Ok(Some(m)) = stream.message().await {
                match m.kind {
                    Some(Kind::Published(p)) => jid = p.jid,
                    Some(Kind::MinionReturn(r)) if left.remove(&r.id) => {
                        let ret = r
                            .r#return
                            .as_ref()
                            .map(value::from_prost)
                            .unwrap_or(Value::Null);
                        let retcode = if r.retcode != 0 {
                            r.retcode
                        } else if ret == Value::Bool(false) {
                            1
                        } else {
                            0
                        };
                        let _ = tx.send(Outcome {
                            id: r.id,
                            ret,
                            retcode,
                            no_return: false,
                            out: r.out,
                        });
                    }
                    Some(Kind::NoReturn(n)) if left.remove(&n.id) => {
                        let reason = pb::NoReturnReason::try_from(n.reason)
                            .unwrap_or(pb::NoReturnReason::NoResponse);
                        let _ = tx.send(Outcome::none(n.id, no_return_message(reason, &jid)));
                    }
                    _ => {}
                }
            }
        }
    }
    for id in left {
        let why = no_return_message(pb::NoReturnReason::NoResponse, &jid);
        let _ = tx.send(Outcome::none(id, why));
    }
}

/// Runs the job in batches; returns the exit code.
pub async fn run(ch: Channel, req: pb::PublishRequest, a: &JobArgs, printer: &mut Printer) -> i32 {
    let spec = a.batch.clone().unwrap_or_default();
    let size = match BatchSize::parse(&spec) {
        Ok(s) => s,
        Err(e) => return exit::usage(&e.to_string()),
    };
    if !(a.batch_wait.is_finite() && a.batch_wait >= 0.0) {
        return exit::usage(&format!(
            "invalid --batch-wait {}: expected a number of seconds, 0 or more",
            a.batch_wait
        ));
    }
    // Which minions answer at all (salt's batch pings first).
    let ping = pb::PublishRequest {
        fun: vec!["test.ping".into()],
        arg: vec![],
        kwarg: None,
        ret: String::new(),
        ..req.clone()
    };
    let mut client = JobServiceClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
    let run = pb::RunRequest {
        publish: Some(ping),
        timeout: a.timeout,
        gather_job_timeout: a.gather_job_timeout,
    };
    let mut stream = match client.run(run).await {
        Ok(s) => s.into_inner(),
        Err(s) => return status_exit(&ch, &s),
    };
    let mut up = Vec::new();
    while let Ok(Some(m)) = stream.message().await {
        if let Some(Kind::MinionReturn(r)) = m.kind {
            up.push(r.id);
        }
    }
    up.sort();
    if up.is_empty() {
        eprintln!("ERROR: No return received");
        return exit::NO_RETURN;
    }
    let total = up.len();
    let window = size.window(total);
    let mut walk = Walk::new(
        up,
        window,
        Duration::from_secs_f64(a.batch_wait),
        a.failhard,
    );
    let progress = std::io::stderr().is_terminal();
    let begun = tokio::time::Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut running = JoinSet::new();
    let (mut done, mut failed, mut worst) = (0usize, 0usize, 0i32);
    loop {
        let started = walk.next(begun.elapsed());
        if !started.is_empty() {
            let list = started
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(", ");
            printer.write(&format!("\nExecuting run on [{list}]\n\n"));
            running.spawn(run_sub(
                ch.clone(),
                req.clone(),
                started,
                (a.timeout, a.gather_job_timeout),
                tx.clone(),
            ));
        }
        if walk.done() {
            break;
        }
        let o = match walk.wake_at() {
            Some(at) => tokio::select! {
                o = rx.recv() => o,
                _ = tokio::time::sleep_until(begun + at) => continue,
            },
            None => rx.recv().await,
        };
        // Every sub-batch sends an outcome for each of its minions, and `tx` is held here.
        let Some(o) = o else { break };
        done += 1;
        if o.retcode != 0 {
            failed += 1;
            worst = worst.max(o.retcode);
        }
        if o.no_return {
            if !a.hide_timeout {
                printer.print_no_return(&o.id, o.ret.as_str().unwrap_or("Minion did not return."));
            }
        } else {
            printer.print(&json!({ o.id.clone(): o.ret }), o.out.parse().ok());
        }
        if progress {
            eprint!(
                "\r[batch {window}] done {done}/{total}, failed {failed}, remaining {}   ",
                total - done
            );
            if done == total {
                eprintln!();
            }
        }
        if walk.finished(&o.id, o.retcode != 0, begun.elapsed()) == Step::Stop {
            break;
        }
    }
    if walk.stopped() {
        eprintln!(
            "ERROR: --failhard: stopped after a minion failed; {} minions were not run",
            walk.not_started()
        );
    }
    worst.min(255)
}
