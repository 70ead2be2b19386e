//! `saltq key`: salt-key's flags, prompts, messages and output on the KeyService.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;

use saltq_proto::v1::{self as pb, key_service_client::KeyServiceClient};
use saltq_semantics::python::fnmatch;
use serde_json::{Map, Value, json};

use crate::connect::ConnectArgs;
use crate::exit;
use crate::output::{OutputArgs, Printer};

/// salt-key's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct KeyArgs {
    /// List all keys.
    #[arg(short = 'L', long = "list-all")]
    pub list_all: bool,
    /// List keys in one state: accepted (acc), unaccepted (pre, un), rejected (rej), denied (den), all.
    #[arg(short = 'l', long = "list")]
    pub list: Option<String>,
    /// Accept the pending keys whose id matches this glob.
    #[arg(short = 'a', long = "accept")]
    pub accept: Option<String>,
    /// Accept all pending keys.
    #[arg(short = 'A', long = "accept-all")]
    pub accept_all: bool,
    /// Reject the pending keys whose id matches this glob.
    #[arg(short = 'r', long = "reject")]
    pub reject: Option<String>,
    /// Reject all pending keys.
    #[arg(short = 'R', long = "reject-all")]
    pub reject_all: bool,
    /// Delete the keys whose id matches this glob.
    #[arg(short = 'd', long = "delete")]
    pub delete: Option<String>,
    /// Delete all keys.
    #[arg(short = 'D', long = "delete-all")]
    pub delete_all: bool,
    /// Print the fingerprints of the keys whose id matches this glob.
    #[arg(short = 'f', long = "finger")]
    pub finger: Option<String>,
    /// Print all fingerprints.
    #[arg(short = 'F', long = "finger-all")]
    pub finger_all: bool,
    /// Print the public keys whose id matches this glob.
    #[arg(short = 'p', long = "print")]
    pub print: Option<String>,
    /// Print all public keys.
    #[arg(short = 'P', long = "print-all")]
    pub print_all: bool,
    /// Answer yes to every question.
    #[arg(short = 'y', long = "yes")]
    pub yes: bool,
    /// Include accepted keys when rejecting.
    #[arg(long = "include-accepted")]
    pub include_accepted: bool,
    /// Include rejected keys when accepting.
    #[arg(long = "include-rejected")]
    pub include_rejected: bool,
    /// Include denied keys when accepting or rejecting.
    #[arg(long = "include-denied")]
    pub include_denied: bool,
}

const ACC: &str = "minions";
const PRE: &str = "minions_pre";
const REJ: &str = "minions_rejected";
const DEN: &str = "minions_denied";

/// salt-key's `key` outputter: groups sorted by name, each id (and value) on its own line.
pub fn render_keys(groups: &BTreeMap<&str, Value>, color: bool) -> String {
    let c = |code: &'static str| if color { code } else { "" };
    let (end, title, item) = (
        c("\x1b[0m"),
        |s: &str| match s {
            PRE => (c("\x1b[1;31m"), "Unaccepted Keys:"),
            ACC => (c("\x1b[1;32m"), "Accepted Keys:"),
            DEN => (c("\x1b[1;35m"), "Denied Keys:"),
            _ => (c("\x1b[1;34m"), "Rejected Keys:"),
        },
        |s: &str| match s {
            PRE => c("\x1b[0;31m"),
            ACC => c("\x1b[0;32m"),
            DEN => c("\x1b[0;35m"),
            _ => c("\x1b[0;34m"),
        },
    );
    let mut out = String::new();
    for (status, ids) in groups {
        let (tc, t) = title(status);
        out.push_str(&format!("{tc}{t}{end}\n"));
        let ic = item(status);
        match ids {
            Value::Array(a) => {
                let mut v: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
                v.sort();
                for id in v {
                    out.push_str(&format!("{ic}{id}{end}\n"));
                }
            }
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for k in keys {
                    let v = m[k].as_str().unwrap_or_default();
                    out.push_str(&format!("{ic}{k}:  {v}{end}\n"));
                }
            }
            _ => {}
        }
    }
    out
}

fn kg(g: Option<pb::KeyGroups>) -> BTreeMap<&'static str, Vec<String>> {
    let g = g.unwrap_or_default();
    BTreeMap::from([
        (ACC, g.minions),
        (PRE, g.minions_pre),
        (REJ, g.minions_rejected),
        (DEN, g.minions_denied),
    ])
}

fn maps(m: [(&'static str, HashMap<String, String>); 4]) -> BTreeMap<&'static str, Value> {
    m.into_iter()
        .map(|(k, v)| {
            let mut obj: Vec<(String, String)> = v.into_iter().collect();
            obj.sort();
            (
                k,
                Value::Object(
                    obj.into_iter()
                        .map(|(a, b)| (a, Value::String(b)))
                        .collect::<Map<_, _>>(),
                ),
            )
        })
        .collect()
}

fn show(printer: &mut Printer, groups: BTreeMap<&str, Value>) {
    match printer.chosen() {
        Some(_) => {
            let obj: Map<String, Value> =
                groups.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            printer.print(&Value::Object(obj), None);
        }
        None => {
            let text = render_keys(&groups, printer.color());
            printer.write(&text);
        }
    }
}

fn confirm(prompt: &str, default_yes: bool) -> bool {
    use std::io::Write;
    print!("{prompt}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => {
            println!();
            default_yes
        }
        Ok(_) => {
            let l = line.trim().to_ascii_lowercase();
            if l.is_empty() {
                default_yes
            } else {
                l.starts_with('y')
            }
        }
    }
}

fn state_filter(s: &str) -> Result<Vec<&'static str>, String> {
    Ok(match s {
        "acc" | "accepted" => vec![ACC],
        "pre" | "un" | "unaccepted" | "pending" => vec![PRE],
        "rej" | "rejected" => vec![REJ],
        "den" | "denied" => vec![DEN],
        "all" => vec![ACC, PRE, REJ, DEN],
        other => {
            return Err(format!(
                "invalid key state {other:?} for -l: expected acc, pre, un, rej, den or all"
            ));
        }
    })
}

/// Runs `saltq key`; returns the exit code.
pub async fn run(conn: &ConnectArgs, out: &OutputArgs, a: &KeyArgs) -> i32 {
    let mut printer = match Printer::new(out) {
        Ok(p) => p,
        Err(e) => return exit::usage(&format!("{e:#}")),
    };
    let ch = match crate::dial(conn).await {
        Ok(ch) => ch,
        Err(code) => return code,
    };
    let mut client = KeyServiceClient::new(ch.clone());
    let fail = |s: tonic::Status| crate::report_rpc_failure(&ch, &s);

    // Changing keys: accept, reject, delete.
    let change = if let Some(m) = &a.accept {
        Some(("accept", m.clone()))
    } else if a.accept_all {
        Some(("accept", "*".to_owned()))
    } else if let Some(m) = &a.reject {
        Some(("reject", m.clone()))
    } else if a.reject_all {
        Some(("reject", "*".to_owned()))
    } else if let Some(m) = &a.delete {
        Some(("delete", m.clone()))
    } else if a.delete_all {
        Some(("delete", "*".to_owned()))
    } else {
        None
    };
    if let Some((cmd, glob)) = change {
        let all = match client.list_keys(pb::ListKeysRequest::default()).await {
            Ok(r) => kg(r.into_inner().keys),
            Err(s) => return fail(s),
        };
        let mut eligible: Vec<&str> = match cmd {
            "accept" => vec![PRE],
            "reject" => vec![PRE],
            _ => vec![ACC, PRE, REJ, DEN],
        };
        if cmd == "accept" && a.include_rejected {
            eligible.push(REJ);
        }
        if cmd == "reject" && a.include_accepted {
            eligible.push(ACC);
        }
        if cmd != "delete" && a.include_denied {
            eligible.push(DEN);
        }
        let matched: BTreeMap<&str, Value> = all
            .iter()
            .filter(|(s, _)| eligible.contains(s))
            .filter_map(|(s, ids)| {
                let ids: Vec<&String> = ids.iter().filter(|id| fnmatch(id, &glob)).collect();
                (!ids.is_empty()).then(|| (*s, json!(ids)))
            })
            .collect();
        if matched.is_empty() {
            let mut statuses = vec!["unaccepted"];
            if cmd == "reject" && a.include_accepted {
                statuses.push("accepted");
            }
            if cmd == "accept" && a.include_rejected {
                statuses.push("rejected");
            }
            if cmd != "delete" && a.include_denied {
                statuses.push("denied");
            }
            let stat = if statuses.len() == 1 {
                statuses[0].to_owned()
            } else {
                format!(
                    "{} or {}",
                    statuses[..statuses.len() - 1].join(", "),
                    statuses[statuses.len() - 1]
                )
            };
            println!("The key glob '{glob}' does not match any {stat} keys.");
            return exit::OK;
        }
        println!(
            "The following keys are going to be {}ed:",
            cmd.trim_end_matches('e')
        );
        show(&mut printer, matched.clone());
        if !a.yes {
            let go = if cmd == "delete" {
                confirm("Proceed? [N/y] ", false)
            } else {
                confirm("Proceed? [n/Y] ", true)
            };
            if !go {
                return exit::OK;
            }
        }
        let ids: Vec<String> = matched
            .values()
            .flat_map(|v| v.as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        for id in &ids {
            let res = match cmd {
                "accept" => client
                    .accept_keys(pb::AcceptKeysRequest {
                        r#match: id.clone(),
                        include_rejected: a.include_rejected,
                        include_denied: a.include_denied,
                    })
                    .await
                    .map(|_| ()),
                "reject" => client
                    .reject_keys(pb::RejectKeysRequest {
                        r#match: id.clone(),
                        include_accepted: a.include_accepted,
                        include_denied: a.include_denied,
                    })
                    .await
                    .map(|_| ()),
                _ => client
                    .delete_keys(pb::DeleteKeysRequest {
                        r#match: id.clone(),
                    })
                    .await
                    .map(|_| ()),
            };
            if let Err(s) = res {
                return fail(s);
            }
            println!("Key for minion {id} {}ed.", cmd.trim_end_matches('e'));
        }
        return exit::OK;
    }

    // Fingerprints (-f/-F) and public keys (-p/-P) come back in the same four maps.
    let per_state = if a.finger.is_some() || a.finger_all {
        let glob = a.finger.clone().unwrap_or_else(|| "*".into());
        Some(
            client
                .finger_keys(pb::FingerKeysRequest { r#match: glob })
                .await
                .map(|r| {
                    let r = r.into_inner();
                    [
                        r.minions,
                        r.minions_pre,
                        r.minions_rejected,
                        r.minions_denied,
                    ]
                }),
        )
    } else if a.print.is_some() || a.print_all {
        let glob = a.print.clone().unwrap_or_else(|| "*".into());
        Some(
            client
                .print_keys(pb::PrintKeysRequest { r#match: glob })
                .await
                .map(|r| {
                    let r = r.into_inner();
                    [
                        r.minions,
                        r.minions_pre,
                        r.minions_rejected,
                        r.minions_denied,
                    ]
                }),
        )
    } else {
        None
    };
    if let Some(res) = per_state {
        return match res {
            Ok([acc, pre, rej, den]) => {
                let g = maps([(ACC, acc), (PRE, pre), (REJ, rej), (DEN, den)]);
                let non_empty = g
                    .into_iter()
                    .filter(|(_, v)| v.as_object().is_some_and(|m| !m.is_empty()))
                    .collect();
                show(&mut printer, non_empty);
                exit::OK
            }
            Err(s) => fail(s),
        };
    }
    // Listing: -L, -l STATE, or nothing at all.
    let wanted = match &a.list {
        Some(s) => match state_filter(s) {
            Ok(w) => w,
            Err(e) => return exit::usage(&e),
        },
        None => vec![ACC, PRE, REJ, DEN],
    };
    match client.list_keys(pb::ListKeysRequest::default()).await {
        Ok(r) => {
            let g = kg(r.into_inner().keys)
                .into_iter()
                .filter(|(s, _)| wanted.contains(s))
                .map(|(s, ids)| (s, json!(ids)))
                .collect();
            show(&mut printer, g);
            exit::OK
        }
        Err(s) => fail(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_outputter_matches_salt_key_order() {
        let g = BTreeMap::from([
            (ACC, json!(["b", "a"])),
            (PRE, json!(["c"])),
            (REJ, json!([])),
            (DEN, json!([])),
        ]);
        assert_eq!(
            render_keys(&g, false),
            "Accepted Keys:\na\nb\nDenied Keys:\nUnaccepted Keys:\nc\nRejected Keys:\n"
        );
    }
}
