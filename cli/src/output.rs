//! Where and how the CLI prints: the outputter flags, colour rules, `--out-file`, the
//! highstate outputter's flags, and which outputter a return is printed with.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use saltq_semantics::output::{HighstateOptions, OutputOptions, Outputter, render_with};
use serde_json::Value;

/// Outputter flags, as salt's.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct OutputArgs {
    /// Outputter: nested (default), json, yaml, txt, raw, quiet, highstate. State functions
    /// print with highstate unless another is chosen (`--out highstate` keeps each return's
    /// own choice, as salt does).
    #[arg(long = "out", visible_alias = "output", global = true)]
    pub out: Option<Outputter>,
    /// Indentation for nested, json and yaml output; negative prints json on one line.
    #[arg(
        long = "out-indent",
        visible_alias = "output-indent",
        global = true,
        allow_hyphen_values = true
    )]
    pub out_indent: Option<i64>,
    /// Write the output to this file instead of standard output.
    #[arg(long = "out-file", visible_alias = "output-file", global = true)]
    pub out_file: Option<PathBuf>,
    /// Append to --out-file instead of overwriting it.
    #[arg(
        long = "out-file-append",
        visible_alias = "output-file-append",
        global = true
    )]
    pub out_file_append: bool,
    /// Never colour the output.
    #[arg(long = "no-color", visible_alias = "no-colour", global = true)]
    pub no_color: bool,
    /// Colour the output even when it is not a terminal.
    #[arg(long = "force-color", visible_alias = "force-colour", global = true)]
    pub force_color: bool,
    /// How the highstate outputter prints each state: full (default), terse, mixed, changes
    /// or filter, each also with _id (the ID instead of the name).
    #[arg(
        long = "state-output",
        visible_alias = "state_output",
        global = true,
        value_name = "MODE"
    )]
    pub state_output: Option<String>,
    /// False hides the states that succeeded without changes (highstate outputter).
    #[arg(
        long = "state-verbose",
        visible_alias = "state_verbose",
        global = true,
        value_name = "BOOL"
    )]
    pub state_verbose: Option<String>,
    /// Print only the states that changed something or did not succeed (highstate outputter).
    #[arg(long = "output-diff", global = true)]
    pub output_diff: bool,
    /// After the returns, print how many minions were targeted, returned, did not return and
    /// failed (Salt's --summary; `cli_summary: True` in the master config does the same).
    #[arg(long = "summary", global = true)]
    pub summary: bool,
    /// The output keys of the master config (`DIR/master`), which the flags override.
    #[arg(skip)]
    pub master: MasterOutputKeys,
}

/// The master config keys Salt's CLI takes its output defaults from (the `salt` command
/// reads the master's config as its own `__opts__`). Implemented for #27.
#[derive(Debug, Clone, Default, PartialEq, serde::Deserialize)]
#[serde(default)]
pub struct MasterOutputKeys {
    /// `cli_summary`: print the returns summary after the returns.
    pub cli_summary: Option<bool>,
    /// `state_output`: the highstate outputter's mode.
    pub state_output: Option<String>,
    /// `state_verbose`: false hides states that succeeded without changes.
    pub state_verbose: Option<Value>,
    /// `state_tabular`: terse lines in columns.
    pub state_tabular: Option<Value>,
    /// `state_output_diff`: only states that changed something or failed.
    pub state_output_diff: Option<bool>,
    /// `state_output_profile`: the `Started`/`Duration` lines.
    pub state_output_profile: Option<bool>,
    /// `state_output_pct`: success and failure percentages in the summary.
    pub state_output_pct: Option<bool>,
    /// `state_compress_ids`: states of one ID with the same result shown as one.
    pub state_compress_ids: Option<bool>,
}

impl MasterOutputKeys {
    /// Reads them from `DIR/master`; the master checks its file at start, so a file the CLI
    /// cannot read for these keys (missing, another key's bad value) gives Salt's defaults.
    pub fn read(config_dir: &std::path::Path) -> MasterOutputKeys {
        crate::config::master_opts(config_dir)
            .map(|opts| MasterOutputKeys::from_opts(&opts))
            .unwrap_or_default()
    }

    /// [`MasterOutputKeys::read`] on one file's text.
    #[cfg(test)]
    pub fn parse(text: &str) -> MasterOutputKeys {
        let Ok(Value::Object(map)) = serde_yaml_ng::from_str::<Value>(text) else {
            return MasterOutputKeys::default();
        };
        MasterOutputKeys::from_opts(&map)
    }

    /// [`MasterOutputKeys::read`] on the master's merged options.
    pub fn from_opts(map: &serde_json::Map<String, Value>) -> MasterOutputKeys {
        // Each key alone: one key of a type Salt would refuse leaves the others in effect.
        let mut keys = MasterOutputKeys::default();
        let get = |k: &str| map.get(k).filter(|v| !v.is_null());
        let flag = |k: &str| get(k).and_then(Value::as_bool);
        keys.cli_summary = flag("cli_summary");
        keys.state_output = get("state_output")
            .and_then(Value::as_str)
            .map(str::to_owned);
        keys.state_verbose = get("state_verbose").cloned();
        keys.state_tabular = get("state_tabular").cloned();
        keys.state_output_diff = flag("state_output_diff");
        keys.state_output_profile = flag("state_output_profile");
        keys.state_output_pct = flag("state_output_pct");
        keys.state_compress_ids = flag("state_compress_ids");
        keys
    }

    /// Whether the returns summary is printed (`cli_summary`, or `--summary`).
    pub fn summary(&self, flag: bool) -> bool {
        flag || self.cli_summary == Some(true)
    }
}

/// Salt's `_print_returns_summary` (`salt/cli/salt.py`): counts of minions targeted, returned,
/// not returned and with errors; with `verbose`, which ones. `returns` is each minion's id,
/// whether it returned, and its retcode (or the no-return reason: `Some("Not connected")`
/// or `Some("No response")`).
pub fn returns_summary(returns: &[(String, Result<i64, String>)], verbose: bool) -> String {
    let mut returned = 0;
    let mut not_returned = 0;
    let (mut not_connected, mut not_responding, mut failed) = (vec![], vec![], vec![]);
    for (id, r) in returns {
        match r {
            Ok(retcode) => {
                returned += 1;
                if *retcode != 0 {
                    failed.push(id.as_str());
                }
            }
            Err(reason) => {
                not_returned += 1;
                if reason.contains("Not connected") {
                    not_connected.push(id.as_str());
                } else if reason.contains("No response") {
                    not_responding.push(id.as_str());
                }
            }
        }
    }
    let rule = "-------------------------------------------";
    // print_cli("\n") writes the newline and one of its own.
    let mut out = format!(
        "\n\n{rule}\nSummary\n{rule}\n# of minions targeted: {}\n# of minions returned: \
         {returned}\n# of minions that did not return: {not_returned}\n# of minions with \
         errors: {}\n",
        returned + not_returned,
        failed.len()
    );
    if verbose {
        for (label, ids) in [
            ("Minions not connected", &not_connected),
            ("Minions not responding", &not_responding),
            ("Minions with failures", &failed),
        ] {
            if !ids.is_empty() {
                out.push_str(&format!("{label}: {}\n", ids.join(" ")));
            }
        }
    }
    out.push_str(rule);
    out.push('\n');
    out
}

impl OutputArgs {
    /// The highstate outputter's options the flags give, over the master's defaults.
    pub fn highstate_options(&self) -> HighstateOptions {
        let mut o = HighstateOptions::default();
        let m = &self.master;
        if let Some(mode) = &m.state_output {
            o.state_output.clone_from(mode);
        }
        if let Some(v) = &m.state_verbose {
            // Salt's truth of the value: a string other than false/no/off/0 is true.
            o.state_verbose = match v {
                Value::Bool(b) => *b,
                Value::String(s) => HighstateOptions::parse_state_verbose(s),
                other => HighstateOptions::parse_state_verbose(&other.to_string()),
            };
        }
        if let Some(v) = &m.state_tabular {
            o.state_tabular = matches!(v, Value::Bool(true));
        }
        if let Some(b) = m.state_output_diff {
            o.state_output_diff = b;
        }
        if let Some(b) = m.state_output_profile {
            o.state_output_profile = b;
        }
        if let Some(b) = m.state_output_pct {
            o.state_output_pct = b;
        }
        if let Some(b) = m.state_compress_ids {
            o.state_compress_ids = b;
        }
        if let Some(mode) = &self.state_output {
            o.state_output.clone_from(mode);
        }
        if let Some(v) = &self.state_verbose {
            o.state_verbose = HighstateOptions::parse_state_verbose(v);
        }
        o.state_output_diff |= self.output_diff;
        o
    }
}

/// The outputter salt uses for a return: `--out` when given, except that `--out highstate`
/// (like no `--out`) leaves the choice to the return's own `out` (`highstate` for state
/// functions), and nested when there is none (`salt/output/__init__.py:get_printout`).
pub fn choose(chosen: Option<Outputter>, hint: Option<Outputter>) -> Outputter {
    match chosen {
        Some(Outputter::Highstate) | None => hint.unwrap_or(Outputter::Nested),
        Some(out) => out,
    }
}

/// What `--static` prints all returns with (salt's `get_printout` with `static`, which
/// sees no return's `out`): `--out` if given (`--out highstate` included), else highstate
/// for a `state.*` function, else nested.
pub fn static_outputter(chosen: Option<Outputter>, function: &str) -> Outputter {
    match chosen {
        Some(out) => out,
        None if function.split('.').next() == Some("state") && !function.contains(',') => {
            Outputter::Highstate
        }
        None => Outputter::Nested,
    }
}

/// A sink for rendered output.
pub struct Printer {
    opts: OutputOptions,
    out: Option<Outputter>,
    /// The highstate outputter's options (flags, then the job's `exclude=`/`terse=`).
    state: HighstateOptions,
    file: Option<std::fs::File>,
}

impl Printer {
    /// Opens `--out-file` if given and decides on colour.
    pub fn new(a: &OutputArgs) -> anyhow::Result<Printer> {
        let file = match &a.out_file {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .write(true)
                    .append(a.out_file_append)
                    .truncate(!a.out_file_append)
                    .open(p)
                    .map_err(|e| anyhow::anyhow!("cannot open --out-file {}: {e}", p.display()))?,
            ),
            None => None,
        };
        let tty = file.is_none() && std::io::stdout().is_terminal();
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let color = a.force_color || (tty && !a.no_color && !no_color_env);
        Ok(Printer {
            opts: OutputOptions {
                color,
                indent: a.out_indent,
            },
            out: a.out,
            state: a.highstate_options(),
            file,
        })
    }

    /// For `--state-output filter`: the `exclude=` and `terse=` keyword arguments of the
    /// job, which salt's highstate outputter reads from the command line.
    pub fn set_state_filter(&mut self, exclude: Option<Value>, terse: Option<Value>) {
        if let Some(v) = exclude {
            self.state.filter_exclude = v;
        }
        if let Some(v) = terse {
            self.state.filter_terse = v;
        }
    }

    /// Whether an outputter was chosen with --out.
    pub fn chosen(&self) -> Option<Outputter> {
        self.out
    }

    /// Whether colour is on.
    pub fn color(&self) -> bool {
        self.opts.color
    }

    /// Renders with the outputter [`choose`] picks for the return's `hint`.
    pub fn print(&mut self, data: &Value, hint: Option<Outputter>) {
        self.print_with_retcode(data, hint, 0);
    }

    /// [`Printer::print`] for a minion's return with its retcode, which salt passes to the
    /// outputter (nested then draws its structure red for a non-zero retcode).
    pub fn print_with_retcode(&mut self, data: &Value, hint: Option<Outputter>, retcode: i64) {
        let text = self.render(data, hint, retcode);
        self.write(&text);
    }

    /// The text [`Printer::print_with_retcode`] writes.
    pub fn render(&self, data: &Value, hint: Option<Outputter>, retcode: i64) -> String {
        let out = choose(self.out, hint);
        render_with(out, data, &self.opts, &self.state, retcode)
    }

    /// Writes raw text.
    pub fn write(&mut self, text: &str) {
        let res = match &mut self.file {
            Some(f) => f.write_all(text.as_bytes()),
            None => {
                let mut so = std::io::stdout().lock();
                so.write_all(text.as_bytes()).and_then(|()| so.flush())
            }
        };
        if let Err(e) = res {
            // A closed pipe (saltq ... | head) is not an error worth a message.
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            eprintln!("saltq: cannot write output: {e}");
        }
    }

    /// Salt's `no_return` outputter: the id in cyan, the message in red, indented by four.
    /// With `--out highstate` the return's own outputter (`no_return`) is kept, as salt does.
    pub fn print_no_return(&mut self, id: &str, msg: &str) {
        if self.out.is_some_and(|o| o != Outputter::Highstate) {
            let mut m = serde_json::Map::new();
            m.insert(id.to_owned(), Value::String(msg.to_owned()));
            self.print(&Value::Object(m), None);
            return;
        }
        let (cyan, red, end) = if self.opts.color {
            ("\x1b[0;36m", "\x1b[0;31m", "\x1b[0m")
        } else {
            ("", "", "")
        };
        let mut text = format!("{cyan}{id}{end}:\n");
        for line in msg.split('\n') {
            text.push_str(&format!("{red}    {line}{end}\n"));
        }
        self.write(&text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputter_choice_follows_salt() {
        use Outputter::*;
        // (--out, the return's out, what salt prints with)
        let table = [
            (None, None, Nested),
            (None, Some(Highstate), Highstate),
            (None, Some(Nested), Nested),
            (Some(Json), Some(Highstate), Json),
            (Some(Nested), Some(Highstate), Nested),
            (Some(Highstate), Some(Highstate), Highstate),
            // --out highstate does not override a return's own outputter.
            (Some(Highstate), Some(Nested), Nested),
            (Some(Highstate), None, Nested),
        ];
        for (chosen, hint, want) in table {
            assert_eq!(choose(chosen, hint), want, "--out {chosen:?}, out {hint:?}");
        }
    }

    #[test]
    fn static_output_uses_highstate_for_state_functions() {
        use Outputter::*;
        let table = [
            (None, "state.apply", Highstate),
            (None, "state.highstate", Highstate),
            (None, "test.ping", Nested),
            (None, "states.x", Nested),
            (None, "state.apply,test.ping", Nested),
            (Some(Json), "state.apply", Json),
            // With --static, --out highstate is taken as it is, whatever the function.
            (Some(Highstate), "test.ping", Highstate),
        ];
        for (chosen, function, want) in table {
            assert_eq!(
                static_outputter(chosen, function),
                want,
                "{chosen:?} {function}"
            );
        }
    }

    #[test]
    fn highstate_flags_become_options() {
        let o = OutputArgs::default().highstate_options();
        assert_eq!(o, HighstateOptions::default());
        let o = OutputArgs {
            state_output: Some("terse_id".into()),
            state_verbose: Some("false".into()),
            output_diff: true,
            ..OutputArgs::default()
        }
        .highstate_options();
        assert_eq!(o.state_output, "terse_id");
        assert!(!o.state_verbose);
        assert!(o.state_output_diff);
        // Salt keeps any other text as a (true) string.
        let o = OutputArgs {
            state_verbose: Some("no".into()),
            ..OutputArgs::default()
        }
        .highstate_options();
        assert!(o.state_verbose);
    }

    #[test]
    fn master_output_keys_are_defaults_the_flags_override() {
        let master = MasterOutputKeys::parse(
            "state_output: terse\nstate_verbose: False\nstate_output_diff: true\n\
             state_output_profile: false\nstate_tabular: true\ncli_summary: true\nport: 4506\n",
        );
        let o = OutputArgs {
            master: master.clone(),
            ..OutputArgs::default()
        }
        .highstate_options();
        assert_eq!(o.state_output, "terse");
        assert!(!o.state_verbose && o.state_output_diff && !o.state_output_profile);
        assert!(o.state_tabular);
        assert!(master.summary(false));
        let o = OutputArgs {
            master,
            state_output: Some("mixed".into()),
            state_verbose: Some("true".into()),
            ..OutputArgs::default()
        }
        .highstate_options();
        assert_eq!((o.state_output.as_str(), o.state_verbose), ("mixed", true));
        // A file that is not YAML, or a key of another type, leaves Salt's defaults.
        assert_eq!(MasterOutputKeys::parse(": :"), MasterOutputKeys::default());
        let m = MasterOutputKeys::parse("cli_summary: maybe\nstate_output: changes\n");
        assert_eq!(
            (m.cli_summary, m.state_output.as_deref()),
            (None, Some("changes"))
        );
        assert!(!m.summary(false) && m.summary(true));
    }

    /// Salt 3007.8's `salt --summary` after two minions returned (one with retcode 1) and
    /// one did not.
    #[test]
    fn returns_summary_is_salts() {
        let returns = vec![
            ("a".to_owned(), Ok(0)),
            ("b".to_owned(), Ok(1)),
            (
                "c".to_owned(),
                Err("Minion did not return. [Not connected]".to_owned()),
            ),
        ];
        let rule = "-".repeat(43);
        assert_eq!(
            returns_summary(&returns, false),
            format!(
                "\n\n{rule}\nSummary\n{rule}\n# of minions targeted: 3\n# of minions returned: 2\n\
                 # of minions that did not return: 1\n# of minions with errors: 1\n{rule}\n"
            )
        );
        let verbose = returns_summary(&returns, true);
        assert!(verbose.ends_with(&format!(
            "Minions not connected: c\nMinions with failures: b\n{rule}\n"
        )));
    }

    #[test]
    fn no_return_keeps_its_own_outputter_under_out_highstate() {
        let p = Printer::new(&OutputArgs {
            out: Some(Outputter::Highstate),
            no_color: true,
            ..OutputArgs::default()
        })
        .expect("printer");
        // print_no_return only goes through the outputter for an --out other than highstate.
        assert!(p.out.is_some_and(|o| o == Outputter::Highstate));
        let data = json!({"web1": true});
        assert_eq!(
            p.render(&data, Some(Outputter::Nested), 0),
            "web1:\n    True\n"
        );
    }
}
