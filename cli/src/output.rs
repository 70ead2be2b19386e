//! Where and how the CLI prints: the outputter flags, colour rules, and `--out-file`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use saltq_semantics::output::{OutputOptions, Outputter, render};
use serde_json::Value;

/// Outputter flags, as salt's.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Outputter: nested (default), json, yaml, txt, raw, quiet.
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
}

/// A sink for rendered output.
pub struct Printer {
    opts: OutputOptions,
    out: Option<Outputter>,
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
            file,
        })
    }

    /// Whether an outputter was chosen with --out.
    pub fn chosen(&self) -> Option<Outputter> {
        self.out
    }

    /// Whether colour is on.
    pub fn color(&self) -> bool {
        self.opts.color
    }

    /// Renders with the chosen outputter, else `hint`, else nested.
    pub fn print(&mut self, data: &Value, hint: Option<Outputter>) {
        let out = self.out.or(hint).unwrap_or(Outputter::Nested);
        let text = render(out, data, &self.opts);
        self.write(&text);
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
    pub fn print_no_return(&mut self, id: &str, msg: &str) {
        if self.out.is_some() {
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
