//! `saltq`: the salt, salt-run and salt-key command lines on saltq's transport.
//! This file only parses arguments and dispatches; each command lives in its own module.

mod batch;
mod config;
mod connect;
mod exit;
mod job;
mod key;
mod misc;
mod output;

use clap::{CommandFactory, FromArgMatches, Parser};

use connect::ConnectArgs;
use output::OutputArgs;
use saltq_transport::Channel;

/// Run commands on minions: `saltq TARGET FUNCTION [ARGS...]`, as `salt`.
#[derive(Parser)]
#[command(
    name = "saltq",
    version,
    override_usage = "saltq [OPTIONS] TARGET FUNCTION [ARGS]...\n       saltq <run|key|jobs|events|pki|config|completions|manpage> [OPTIONS] ...",
    after_help = "Subcommands: run (salt-run), key (salt-key), jobs, events, pki, config, completions, manpage.\nA minion whose id is a subcommand word is reachable with -L."
)]
struct JobCli {
    #[command(flatten)]
    conn: ConnectArgs,
    #[command(flatten)]
    out: OutputArgs,
    /// Log level for the CLI itself.
    #[arg(short = 'l', long = "log-level", default_value = "warning")]
    log_level: String,
    #[command(flatten)]
    job: job::JobArgs,
}

/// The subcommands.
#[derive(Parser)]
#[command(name = "saltq", version)]
struct SubCli {
    #[command(flatten)]
    conn: ConnectArgs,
    #[command(flatten)]
    out: OutputArgs,
    /// Log level for the CLI itself.
    #[arg(long = "log-level", default_value = "warning", global = true)]
    log_level: String,
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Run a runner on the master (salt-run).
    Run(misc::RunArgs),
    /// Manage minion keys (salt-key).
    Key(key::KeyArgs),
    /// Look up jobs.
    #[command(subcommand)]
    Jobs(misc::JobsCmd),
    /// Print the master's events as they happen.
    Events(misc::EventsArgs),
    /// Issue certificates from the master's CA (on the master host).
    #[command(subcommand)]
    Pki(misc::PkiCmd),
    /// Check a master or minion config directory: what saltq does with each key.
    #[command(subcommand)]
    Config(config::ConfigCmd),
    /// Print shell completions.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Manpage,
}

const SUBCOMMANDS: &[&str] = &[
    "run",
    "key",
    "jobs",
    "events",
    "pki",
    "config",
    "completions",
    "manpage",
    "help",
];

/// Whether argv selects a subcommand: its first positional word is one, and no target flag
/// came before it (so `saltq -L run test.ping` targets a minion named `run`).
fn is_subcommand(argv: &[String]) -> bool {
    let cmd = JobCli::command();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a == "--" {
            return false;
        }
        if let Some(long) = a.strip_prefix("--") {
            if long.contains('=') {
                i += 1;
                continue;
            }
            let takes = cmd.get_arguments().any(|x| {
                let named = x.get_long() == Some(long)
                    || x.get_all_aliases().is_some_and(|a| a.contains(&long));
                named && x.get_action().takes_values()
            });
            if matches!(
                long,
                "pcre"
                    | "list"
                    | "grain"
                    | "grain-pcre"
                    | "pillar"
                    | "pillar-pcre"
                    | "ipcidr"
                    | "compound"
                    | "nodegroup"
                    | "range"
            ) {
                return false;
            }
            i += if takes { 2 } else { 1 };
            continue;
        }
        if let Some(shorts) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut skip = 1;
            for (n, c) in shorts.chars().enumerate() {
                if "ELGPIJSCNR".contains(c) {
                    return false;
                }
                let takes = cmd
                    .get_arguments()
                    .any(|x| x.get_short() == Some(c) && x.get_action().takes_values());
                if takes {
                    if n + 1 == shorts.len() {
                        skip = 2;
                    }
                    break;
                }
            }
            i += skip;
            continue;
        }
        return SUBCOMMANDS.contains(&a.as_str());
    }
    false
}

/// Dials the master, printing why on failure and returning the exit code.
pub async fn dial(conn: &ConnectArgs) -> Result<Channel, i32> {
    let opts = match conn.options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("saltq: {e:#}");
            return Err(exit::USAGE);
        }
    };
    saltq_transport::connect(&opts).await.map_err(|e| {
        eprintln!("saltq: {e}");
        exit::UNAVAILABLE
    })
}

/// Reports an RPC that failed for reasons of transport or permission, naming the cause.
pub fn report_rpc_failure(ch: &Channel, s: &tonic::Status) -> i32 {
    use saltq_transport::client::FailureKind;
    if s.code() == tonic::Code::PermissionDenied {
        eprintln!("saltq: permission denied: {}", s.message());
        return exit::NOPERM;
    }
    if let Some(part) = s.metadata().get(saltq_transport::UNAVAILABLE_PART_HEADER) {
        // The master was reached and answered: a part of it cannot do its work.
        eprintln!(
            "saltq: the master at {} answered that its {} is unavailable: {}",
            ch.address(),
            part.to_str().unwrap_or("service").replace('-', " "),
            s.message()
        );
        return exit::UNAVAILABLE;
    }
    let failure = ch.failure(s);
    if failure.kind == FailureKind::Other && s.code() != tonic::Code::Unavailable {
        eprintln!(
            "saltq: the master answered with an error ({:?}): {}",
            s.code(),
            s.message()
        );
        return exit::GENERIC;
    }
    eprintln!("saltq: {failure}");
    exit::UNAVAILABLE
}

fn full_command() -> clap::Command {
    let subs: Vec<clap::Command> = SubCli::command().get_subcommands().cloned().collect();
    JobCli::command()
        .subcommands(subs)
        .args_conflicts_with_subcommands(true)
}

/// Parses argv with clap; on error prints clap's message and exits 64 (0 for --help/--version).
fn parse_or_exit<T: CommandFactory + FromArgMatches>(argv: &[String]) -> T {
    match T::command()
        .try_get_matches_from(argv)
        .and_then(|m| T::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("saltq: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = if is_subcommand(&argv) {
        let cli: SubCli = parse_or_exit(&argv);
        saltq_transport::config::init_tracing(&cli.log_level, false);
        rt.block_on(async {
            match &cli.cmd {
                Sub::Run(a) => misc::run_runner(&cli.conn, &cli.out, a).await,
                Sub::Key(a) => key::run(&cli.conn, &cli.out, a).await,
                Sub::Jobs(c) => misc::jobs(&cli.conn, &cli.out, c).await,
                Sub::Events(a) => misc::events(&cli.conn, a).await,
                Sub::Pki(c) => misc::pki(&cli.conn, c),
                Sub::Config(c) => config::run(c),
                Sub::Completions { shell } => {
                    clap_complete::generate(
                        *shell,
                        &mut full_command(),
                        "saltq",
                        &mut std::io::stdout(),
                    );
                    exit::OK
                }
                Sub::Manpage => {
                    match clap_mangen::Man::new(full_command()).render(&mut std::io::stdout()) {
                        Ok(()) => exit::OK,
                        Err(e) => {
                            eprintln!("saltq: {e}");
                            exit::GENERIC
                        }
                    }
                }
            }
        })
    } else {
        let cli: JobCli = parse_or_exit(&argv);
        saltq_transport::config::init_tracing(&cli.log_level, false);
        rt.block_on(job::run(&cli.conn, &cli.out, &cli.job))
    };
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        std::iter::once("saltq")
            .chain(s.split_whitespace())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn subcommand_detection() {
        assert!(is_subcommand(&argv("key -L")));
        assert!(is_subcommand(&argv("-c /tmp/x run jobs.list_jobs")));
        assert!(is_subcommand(&argv("--out json jobs list")));
        assert!(!is_subcommand(&argv("* test.ping")));
        assert!(!is_subcommand(&argv("-L run test.ping")));
        assert!(!is_subcommand(&argv("-t 3 web1 test.ping")));
        assert!(!is_subcommand(&argv("-C G@os:x and run test.ping")));
        // A flag's value, under its name or its alias, is not the subcommand.
        assert!(!is_subcommand(&argv("--state-output key web1 test.ping")));
        assert!(!is_subcommand(&argv("--state_output key web1 test.ping")));
        assert!(is_subcommand(&argv(
            "--state_output terse run jobs.list_jobs"
        )));
    }

    /// One recorded rendering of `semantics/tests/data/output/highstate/cases/<case>.json`
    /// (made by Salt 3007.8): its input and the output for the given Salt opts.
    fn golden(case: &str, opts: serde_json::Value) -> (serde_json::Value, String) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../semantics/tests/data/output/highstate/cases")
            .join(format!("{case}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let golden: serde_json::Value = serde_json::from_str(&text).expect("golden JSON");
        let variant = golden["variants"]
            .as_array()
            .expect("variants")
            .iter()
            .find(|v| v["opts"] == opts)
            .unwrap_or_else(|| panic!("{case}: no variant with opts {opts}"));
        let expected = variant["expected"].as_str().expect("expected").to_owned();
        (golden["input"].clone(), expected)
    }

    /// What the salt command prints for one minion's return under `args`.
    fn printed(args: &str, data: &serde_json::Value, out: &str, retcode: i64) -> String {
        let cli = JobCli::try_parse_from(argv(args)).expect("parses");
        let mut printer = output::Printer::new(&cli.out).expect("printer");
        let (exclude, terse) = job::state_filter(&cli.job);
        printer.set_state_filter(exclude, terse);
        printer.render(data, out.parse().ok(), retcode)
    }

    #[test]
    fn state_runs_print_as_salt_prints_them() {
        use serde_json::json;
        // (flags, case, Salt opts of the recorded rendering)
        let table = [
            ("", "cmds", json!({"color": false})),
            (
                "--state-output terse",
                "cmds",
                json!({"color": false, "state_output": "terse"}),
            ),
            (
                "--state_output=mixed_id",
                "basic",
                json!({"color": false, "state_output": "mixed_id"}),
            ),
            (
                "--state-output changes",
                "files_test",
                json!({"color": false, "state_output": "changes"}),
            ),
            (
                "--state-verbose false",
                "many",
                json!({"color": false, "state_verbose": false}),
            ),
            (
                "--state_verbose=False --state-output terse",
                "basic",
                json!({"color": false, "state_output": "terse", "state_verbose": false}),
            ),
            (
                "--output-diff",
                "basic",
                json!({"color": false, "state_output_diff": true}),
            ),
            ("--force-color", "cmds", json!({"color": true})),
            (
                "--force-color --state-output mixed",
                "basic",
                json!({"color": true, "state_output": "mixed"}),
            ),
            ("", "broken_yaml", json!({"color": false})),
        ];
        for (flags, case, opts) in table {
            let (input, want) = golden(case, opts);
            let got = printed(
                &format!("--no-color {flags} web1 state.apply {case}"),
                &input,
                "highstate",
                2,
            );
            assert_eq!(got, want, "saltq {flags} ... ({case})");
        }
    }

    #[test]
    fn filter_reads_the_jobs_exclude_and_terse_arguments() {
        use serde_json::json;
        let (input, want) = golden(
            "basic",
            json!({"color": false, "state_output": "filter",
                   "arg": [{"exclude": "True,", "__kwarg__": true}]}),
        );
        let got = printed(
            "--no-color --state-output filter web1 state.apply basic exclude=True,",
            &input,
            "highstate",
            2,
        );
        assert_eq!(got, want);
        let (input, want) = golden(
            "basic",
            json!({"color": false, "state_output": "filter",
                   "arg": [{"terse": "True,False", "__kwarg__": true}]}),
        );
        let got = printed(
            "--no-color --state-output filter web1 state.apply terse=True,False",
            &input,
            "highstate",
            2,
        );
        assert_eq!(got, want);
    }

    #[test]
    fn out_flag_overrides_highstate() {
        let (input, _) = golden("cmds", serde_json::json!({"color": false}));
        let got = printed(
            "--no-color --out json web1 state.apply",
            &input,
            "highstate",
            2,
        );
        assert!(got.starts_with("{\n    \"web1\": {"), "{got}");
        // A state function's error comes back with out nested and prints nested.
        let data = serde_json::json!({"web1": "'state.nope' is not available."});
        let got = printed(
            "--no-color --out highstate web1 state.nope",
            &data,
            "nested",
            1,
        );
        assert_eq!(got, "web1:\n    'state.nope' is not available.\n");
    }

    #[test]
    fn clap_definitions_are_valid() {
        JobCli::command().debug_assert();
        SubCli::command().debug_assert();
        full_command().debug_assert();
    }
}
