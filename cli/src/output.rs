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
}

impl OutputArgs {
    /// The highstate outputter's options the flags give, over the master's defaults.
    pub fn highstate_options(&self) -> HighstateOptions {
        let mut o = HighstateOptions::default();
        if let Some(mode) = &self.state_output {
            o.state_output.clone_from(mode);
        }
        if let Some(v) = &self.state_verbose {
            o.state_verbose = HighstateOptions::parse_state_verbose(v);
        }
        o.state_output_diff = self.output_diff;
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
