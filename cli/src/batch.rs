//! Batch mode (`-b N` or `-b N%`): find the minions that answer, then run the job over a sliding
//! window of that many at a time, as salt's batch does. Progress goes to a terminal only.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::Duration;

use saltq_proto::v1::{self as pb, job_service_client::JobServiceClient, run_response::Kind};
use saltq_transport::{Channel, value};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::exit;
use crate::job::{JobArgs, no_return_message, status_exit};
use crate::output::Printer;

/// Parses `N` or `N%` into a window size for `total` minions (at least 1).
pub fn window(spec: &str, total: usize) -> Result<usize, String> {
    let bad = || {
        format!("invalid batch size {spec:?}: expected a number like 10 or a percentage like 25%")
    };
    if let Some(p) = spec.strip_suffix('%') {
        let pct: f64 = p.trim().parse().map_err(|_| bad())?;
        if !(pct > 0.0 && pct <= 100.0) {
            return Err(bad());
        }
        return Ok(((total as f64 * pct / 100.0) as usize).max(1));
    }
    let n: usize = spec.trim().parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    Ok(n)
}

/// One minion's outcome.
struct Outcome {
    id: String,
    ret: Value,
    retcode: i32,
    no_return: bool,
    /// The return's outputter (`highstate` for state functions), as salt's batch uses it.
    out: String,
}

async fn run_one(ch: Channel, mut req: pb::PublishRequest, id: String, a: (f64, f64)) -> Outcome {
    req.tgt = id.clone();
    req.tgt_type = "list".into();
    let mut client = JobServiceClient::new(ch);
    let run = pb::RunRequest {
        publish: Some(req),
        timeout: a.0,
        gather_job_timeout: a.1,
    };
    let mut outcome = Outcome {
        id: id.clone(),
        ret: Value::Null,
        retcode: 1,
        no_return: true,
        out: String::new(),
    };
    let Ok(stream) = client.run(run).await else {
        return outcome;
    };
    let mut stream = stream.into_inner();
    let mut jid = String::new();
    while let Ok(Some(m)) = stream.message().await {
        match m.kind {
            Some(Kind::Published(p)) => jid = p.jid,
            Some(Kind::MinionReturn(r)) => {
                outcome.ret = r
                    .r#return
                    .as_ref()
                    .map(value::from_prost)
                    .unwrap_or(Value::Null);
                outcome.retcode = if r.retcode != 0 {
                    r.retcode
                } else if outcome.ret == Value::Bool(false) {
                    1
                } else {
                    0
                };
                outcome.no_return = false;
                outcome.out = r.out;
            }
            Some(Kind::NoReturn(n)) => {
                let reason = pb::NoReturnReason::try_from(n.reason)
                    .unwrap_or(pb::NoReturnReason::NoResponse);
                outcome.ret = Value::String(no_return_message(reason, &jid));
            }
            _ => {}
        }
    }
    outcome
}

/// Runs the job in batches; returns the exit code.
pub async fn run(ch: Channel, req: pb::PublishRequest, a: &JobArgs, printer: &mut Printer) -> i32 {
    let spec = a.batch.clone().unwrap_or_default();
    // Which minions answer at all (salt's batch pings first).
    let ping = pb::PublishRequest {
        fun: vec!["test.ping".into()],
        arg: vec![],
        kwarg: None,
        ret: String::new(),
        ..req.clone()
    };
    let mut client = JobServiceClient::new(ch.clone());
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
    let size = match window(&spec, up.len()) {
        Ok(n) => n,
        Err(e) => return exit::usage(&e),
    };
    let progress = std::io::stderr().is_terminal();
    let total = up.len();
    let mut queue: VecDeque<String> = up.into();
    let mut running: JoinSet<Outcome> = JoinSet::new();
    let (mut done, mut failed, mut worst) = (0usize, 0usize, 0i32);
    let mut stop = false;
    loop {
        let mut started = Vec::new();
        while !stop && running.len() < size {
            let Some(id) = queue.pop_front() else { break };
            started.push(id.clone());
            running.spawn(run_one(
                ch.clone(),
                req.clone(),
                id,
                (a.timeout, a.gather_job_timeout),
            ));
        }
        if !started.is_empty() {
            let list = started
                .iter()
                .map(|s| format!("'{s}'"))
                .collect::<Vec<_>>()
                .join(", ");
            printer.write(&format!("\nExecuting run on [{list}]\n\n"));
        }
        let Some(res) = running.join_next().await else {
            break;
        };
        let Ok(o) = res else { continue };
        done += 1;
        if o.retcode != 0 {
            failed += 1;
            worst = worst.max(o.retcode);
            if a.failhard {
                stop = true;
            }
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
                "\r[batch {size}] done {done}/{total}, failed {failed}, remaining {}   ",
                total - done
            );
            if done == total {
                eprintln!();
            }
        }
        if a.batch_wait > 0.0 && !queue.is_empty() {
            tokio::time::sleep(Duration::from_secs_f64(a.batch_wait)).await;
        }
    }
    if stop && !queue.is_empty() {
        eprintln!(
            "ERROR: --failhard: stopped after a minion failed; {} minions were not run",
            queue.len()
        );
    }
    worst.min(255)
}

#[cfg(test)]
mod tests {
    use super::window;

    #[test]
    fn window_sizes() {
        assert_eq!(window("10", 3), Ok(10));
        assert_eq!(window("50%", 4), Ok(2));
        assert_eq!(window("10%", 3), Ok(1));
        assert!(window("0", 3).is_err());
        assert!(window("x%", 3).is_err());
        assert!(window("150%", 3).is_err());
    }
}
