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

/// A change salt-key makes to keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Accept,
    Reject,
    Delete,
}

impl Change {
    /// The past tense salt-key prints: accepted, rejected, deleted.
    fn done(self) -> &'static str {
        match self {
            Change::Accept => "accepted",
            Change::Reject => "rejected",
            Change::Delete => "deleted",
        }
    }
}

/// The change the flags ask for, with the glob it applies to.
fn requested_change(a: &KeyArgs) -> Option<(Change, String)> {
    let pick = |one: &Option<String>, all: bool| match one {
        Some(m) => Some(m.clone()),
        None => all.then(|| "*".to_owned()),
    };
    if let Some(g) = pick(&a.accept, a.accept_all) {
        Some((Change::Accept, g))
    } else if let Some(g) = pick(&a.reject, a.reject_all) {
        Some((Change::Reject, g))
    } else {
        pick(&a.delete, a.delete_all).map(|g| (Change::Delete, g))
    }
}

/// The key states a change may touch, each with the name salt-key gives it in its
/// "does not match any ... keys" message, as the `--include-*` flags widen them.
fn eligible(change: Change, a: &KeyArgs) -> Vec<(&'static str, &'static str)> {
    let mut states = match change {
        Change::Accept | Change::Reject => vec![(PRE, "unaccepted")],
        Change::Delete => {
            return vec![
                (ACC, "accepted"),
                (PRE, "unaccepted"),
                (REJ, "rejected"),
                (DEN, "denied"),
            ];
        }
    };
    if change == Change::Reject && a.include_accepted {
        states.push((ACC, "accepted"));
    }
    if change == Change::Accept && a.include_rejected {
        states.push((REJ, "rejected"));
    }
    if a.include_denied {
        states.push((DEN, "denied"));
    }
    states
}

/// What a change would do, decided from the keys the master holds: the ids it would touch by
/// state, or salt-key's message when the glob matches none.
fn plan_change(
    all: &BTreeMap<&'static str, Vec<String>>,
    change: Change,
    glob: &str,
    a: &KeyArgs,
) -> Result<BTreeMap<&'static str, Value>, String> {
    let states = eligible(change, a);
    let matched: BTreeMap<&str, Value> = all
        .iter()
        .filter(|(s, _)| states.iter().any(|(e, _)| e == *s))
        .filter_map(|(s, ids)| {
            let ids: Vec<&String> = ids.iter().filter(|id| fnmatch(id, glob)).collect();
            (!ids.is_empty()).then(|| (*s, json!(ids)))
        })
        .collect();
    if !matched.is_empty() {
        return Ok(matched);
    }
    // salt-key names the default state first, then the included ones in its own order.
    let names: Vec<&str> = states.iter().map(|(_, n)| *n).collect();
    let stat = match names.as_slice() {
        [one] => (*one).to_owned(),
        [rest @ .., last] if change != Change::Delete => format!("{} or {last}", rest.join(", ")),
        _ => "unaccepted".to_owned(),
    };
    Err(format!(
        "The key glob '{glob}' does not match any {stat} keys."
    ))
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
    let mut client = KeyServiceClient::new(ch.clone()).max_decoding_message_size(usize::MAX);
    let result = if let Some((change, glob)) = requested_change(a) {
        change_keys(&mut client, &mut printer, a, change, &glob).await
    } else if a.finger.is_some() || a.finger_all || a.print.is_some() || a.print_all {
        show_per_state(&mut client, &mut printer, a).await
    } else {
        list_keys(&mut client, &mut printer, a).await
    };
    match result {
        Ok(code) => code,
        Err(s) => crate::report_rpc_failure(&ch, &s),
    }
}

type Keys = KeyServiceClient<saltq_transport::Channel>;

/// `-a`/`-A`, `-r`/`-R`, `-d`/`-D`: shows what would change, asks, then changes one id at a
/// time as salt-key does.
async fn change_keys(
    client: &mut Keys,
    printer: &mut Printer,
    a: &KeyArgs,
    change: Change,
    glob: &str,
) -> Result<i32, tonic::Status> {
    let all = kg(client
        .list_keys(pb::ListKeysRequest::default())
        .await?
        .into_inner()
        .keys);
    let matched = match plan_change(&all, change, glob, a) {
        Ok(m) => m,
        Err(message) => {
            println!("{message}");
            return Ok(exit::OK);
        }
    };
    println!("The following keys are going to be {}:", change.done());
    show(printer, matched.clone());
    if !a.yes {
        let go = if change == Change::Delete {
            confirm("Proceed? [N/y] ", false)
        } else {
            confirm("Proceed? [n/Y] ", true)
        };
        if !go {
            return Ok(exit::OK);
        }
    }
    let ids = matched
        .values()
        .flat_map(|v| v.as_array().cloned().unwrap_or_default())
        .filter_map(|v| v.as_str().map(str::to_owned));
    for id in ids {
        match change {
            Change::Accept => client
                .accept_keys(pb::AcceptKeysRequest {
                    r#match: id.clone(),
                    include_rejected: a.include_rejected,
                    include_denied: a.include_denied,
                })
                .await
                .map(drop)?,
            Change::Reject => client
                .reject_keys(pb::RejectKeysRequest {
                    r#match: id.clone(),
                    include_accepted: a.include_accepted,
                    include_denied: a.include_denied,
                })
                .await
                .map(drop)?,
            Change::Delete => client
                .delete_keys(pb::DeleteKeysRequest {
                    r#match: id.clone(),
                })
                .await
                .map(drop)?,
        }
        println!("Key for minion {id} {}.", change.done());
    }
    Ok(exit::OK)
}

/// `-f`/`-F` (fingerprints) and `-p`/`-P` (public keys): both come back in the same four maps.
async fn show_per_state(
    client: &mut Keys,
    printer: &mut Printer,
    a: &KeyArgs,
) -> Result<i32, tonic::Status> {
    let r = if a.finger.is_some() || a.finger_all {
        let glob = a.finger.clone().unwrap_or_else(|| "*".into());
        let r = client
            .finger_keys(pb::FingerKeysRequest { r#match: glob })
            .await?
            .into_inner();
        [
            r.minions,
            r.minions_pre,
            r.minions_rejected,
            r.minions_denied,
        ]
    } else {
        let glob = a.print.clone().unwrap_or_else(|| "*".into());
        let r = client
            .print_keys(pb::PrintKeysRequest { r#match: glob })
            .await?
            .into_inner();
        [
            r.minions,
            r.minions_pre,
            r.minions_rejected,
            r.minions_denied,
        ]
    };
    let [acc, pre, rej, den] = r;
    let non_empty = maps([(ACC, acc), (PRE, pre), (REJ, rej), (DEN, den)])
        .into_iter()
        .filter(|(_, v)| v.as_object().is_some_and(|m| !m.is_empty()))
        .collect();
    show(printer, non_empty);
    Ok(exit::OK)
}

/// Listing: `-L`, `-l STATE`, or nothing at all.
async fn list_keys(
    client: &mut Keys,
    printer: &mut Printer,
    a: &KeyArgs,
) -> Result<i32, tonic::Status> {
    let wanted = match &a.list {
        Some(s) => match state_filter(s) {
            Ok(w) => w,
            Err(e) => return Ok(exit::usage(&e)),
        },
        None => vec![ACC, PRE, REJ, DEN],
    };
    let g = kg(client
        .list_keys(pb::ListKeysRequest::default())
        .await?
        .into_inner()
        .keys)
    .into_iter()
    .filter(|(s, _)| wanted.contains(s))
    .map(|(s, ids)| (s, json!(ids)))
    .collect();
    show(printer, g);
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(flags: &[&str]) -> KeyArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            key: KeyArgs,
        }
        let argv = std::iter::once("saltq-key").chain(flags.iter().copied());
        <Cli as clap::Parser>::parse_from(argv).key
    }

    fn keys() -> BTreeMap<&'static str, Vec<String>> {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        BTreeMap::from([
            (ACC, ids(&["web1"])),
            (PRE, ids(&["web2", "db1"])),
            (REJ, ids(&["web3"])),
            (DEN, ids(&["web4"])),
        ])
    }

    #[test]
    fn changes_touch_the_states_salt_key_allows() {
        let plan = |flags: &[&str]| {
            let a = args(flags);
            let (change, glob) = requested_change(&a).expect("a change");
            plan_change(&keys(), change, &glob, &a)
        };
        assert_eq!(
            plan(&["-a", "web*"]),
            Ok(BTreeMap::from([(PRE, json!(["web2"]))]))
        );
        assert_eq!(
            plan(&["-a", "web*", "--include-rejected", "--include-denied"]),
            Ok(BTreeMap::from([
                (PRE, json!(["web2"])),
                (REJ, json!(["web3"])),
                (DEN, json!(["web4"])),
            ]))
        );
        assert_eq!(
            plan(&["-r", "web1", "--include-accepted"]),
            Ok(BTreeMap::from([(ACC, json!(["web1"]))]))
        );
        assert_eq!(plan(&["-D"]).map(|m| m.len()), Ok(4));
    }

    #[test]
    fn an_unmatched_glob_is_named_with_the_states_searched() {
        let plan = |flags: &[&str]| {
            let a = args(flags);
            let (change, glob) = requested_change(&a).expect("a change");
            plan_change(&keys(), change, &glob, &a).unwrap_err()
        };
        assert_eq!(
            plan(&["-a", "web1"]),
            "The key glob 'web1' does not match any unaccepted keys."
        );
        assert_eq!(
            plan(&["-r", "x", "--include-accepted", "--include-denied"]),
            "The key glob 'x' does not match any unaccepted, accepted or denied keys."
        );
        assert_eq!(
            plan(&["-a", "x", "--include-rejected"]),
            "The key glob 'x' does not match any unaccepted or rejected keys."
        );
        assert_eq!(
            plan(&["-d", "x", "--include-denied"]),
            "The key glob 'x' does not match any unaccepted keys."
        );
    }

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
