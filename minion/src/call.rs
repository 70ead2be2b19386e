//! `saltq-minion call FUN [ARGS]`: run one function on this host, as `salt-call`. With
//! `--local` no master is contacted; otherwise the pillar is fetched from the master first.

use std::sync::Arc;

use saltq_exec::{CallContext, PubInfo};
use saltq_proto::v1::{self as pb, minion_service_client::MinionServiceClient};
use saltq_semantics::args::parse_input;
use saltq_semantics::output::{OutputOptions, Outputter, render};
use saltq_transport::{Channel, ConnectOptions, connect, value};
use serde_json::{Value, json};

use crate::config::MinionConfig;
use crate::files::{MasterFiles, local_files};
use crate::identity;

/// `call`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct CallArgs {
    /// Run without contacting a master.
    #[arg(long)]
    pub local: bool,
    /// Outputter: nested (default), json, yaml, txt, raw, quiet.
    #[arg(long = "out", visible_alias = "output")]
    pub out: Option<Outputter>,
    /// Indentation for the outputter.
    #[arg(long = "out-indent", allow_hyphen_values = true)]
    pub out_indent: Option<i64>,
    /// Exit with the function's retcode.
    #[arg(long = "retcode-passthrough")]
    pub retcode_passthrough: bool,
    /// Never colour the output.
    #[arg(long = "no-color")]
    pub no_color: bool,
    /// The function, e.g. test.ping.
    pub fun: String,
    /// Arguments: YAML-typed; key=value becomes a keyword argument.
    #[arg(allow_negative_numbers = true)]
    pub args: Vec<String>,
}

/// Fetches the pillar from the first master that answers, in the order listed (a failover
/// list is tried in turn; with one master, that one); the connection stays open for
/// `salt://` files.
async fn fetch_pillar(cfg: &MinionConfig) -> anyhow::Result<(Value, Option<Value>, Channel)> {
    let identity = identity::ensure_identity(cfg)?;
    let trust = identity::server_trust(cfg)?;
    let mut last = None;
    for master in &cfg.masters {
        let opts = ConnectOptions {
            ipv6: cfg.ipv6,
            host: master.host.clone(),
            port: master.port,
            transport: cfg.transport,
            identity: identity.clone(),
            trust: trust.clone(),
            limits: cfg.limits.clone(),
            connect_timeout: saltq_transport::client::CONNECT_TIMEOUT,
            reuse: None,
        };
        let ch = match connect(&opts).await {
            Ok(ch) => ch,
            Err(e) => {
                tracing::warn!("{e}");
                last = Some(anyhow::Error::from(e));
                continue;
            }
        };
        let mut c = MinionServiceClient::new(ch.clone());
        let req = pb::GetPillarRequest {
            ordered: true,
            ..Default::default()
        };
        let p = c
            .get_pillar(req)
            .await
            .map_err(|s| anyhow::anyhow!("{}", ch.failure(&s)))?
            .into_inner();
        let pillar = value::from_ordered_json(&p.pillar_json, p.pillar.as_ref())
            .map_err(|e| anyhow::anyhow!("the pillar from the master: {e}"))?;
        let nodegroups = p
            .nodegroups
            .map(|g| Value::Object(value::struct_to_map(&g)));
        return Ok((Value::Object(pillar), nodegroups, ch));
    }
    Err(last.unwrap_or_else(|| anyhow::anyhow!("no master configured")))
}

/// Runs the call; returns the exit code.
pub async fn run(cfg: MinionConfig, a: CallArgs) -> i32 {
    let grains = cfg.compute_grains();
    let (pillar, nodegroups, chan) = if a.local || cfg.file_client_local {
        // Masterless, as `salt-call --local`: the pillar from the minion's own tree, compiled
        // on a blocking thread (rendering may run commands).
        let (c, g) = (cfg.clone(), grains.clone());
        let pillar = tokio::task::spawn_blocking(move || crate::masterless::compile_pillar(&c, &g))
            .await
            .unwrap_or_default();
        (Value::Object(pillar), None, None)
    } else {
        match fetch_pillar(&cfg).await {
            Ok((p, groups, ch)) => (p, groups, Some(ch)),
            Err(e) => {
                eprintln!("saltq-minion call: {e:#} (use --local to run without a master)");
                return saltq_transport::config::EX_UNAVAILABLE;
            }
        }
    };
    let (files, pillar_client): (
        Arc<dyn saltq_exec::FileClient>,
        Arc<dyn saltq_exec::PillarClient>,
    ) = match chan {
        None => (
            Arc::new(local_files(&cfg)),
            Arc::new(crate::pillar_ext::LocalPillar {
                cfg: Arc::new(cfg.clone()),
                grains: grains.clone(),
            }),
        ),
        Some(ch) => {
            let chan = tokio::sync::watch::channel(Some(ch)).1;
            (
                Arc::new(MasterFiles {
                    chan: chan.clone(),
                    cfg: Arc::new(cfg.clone()),
                }),
                Arc::new(crate::pillar_ext::MasterPillar {
                    chan,
                    cfg: Arc::new(cfg.clone()),
                }),
            )
        }
    };
    // Through a master, its nodegroups, as Salt's salt-call takes them from the master's
    // opts for `match: nodegroup` and N@.
    let mut opts = cfg.opts.clone();
    if let (Some(groups), Value::Object(o)) = (nodegroups, &mut opts) {
        o.insert("nodegroups".into(), groups);
    }
    let ctx = CallContext::local(grains, opts)
        .with_files(files)
        .with_pillar_client(pillar_client)
        .with_states(Arc::new(saltq_states::Engine::new()));
    *ctx.pillar.write().unwrap_or_else(|e| e.into_inner()) = pillar;
    let (args, kwargs) = parse_input(&a.args);
    let publ = PubInfo {
        jid: saltq_semantics::jid::JidGenerator::new(None)
            .next(chrono::Utc::now())
            .to_string(),
        tgt: Value::String(cfg.id.clone()),
        tgt_type: "glob".into(),
        user: "root".into(),
        arg: args.clone(),
        ..Default::default()
    };
    let outcome = saltq_exec::call(&ctx, &a.fun, args, kwargs, &publ).await;
    let out = a
        .out
        .or_else(|| outcome.out.and_then(|o| o.parse().ok()))
        .unwrap_or(Outputter::Nested);
    let color = !a.no_color
        && std::env::var_os("NO_COLOR").is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let text = render(
        out,
        &json!({ "local": outcome.ret }),
        &OutputOptions {
            color,
            indent: a.out_indent,
        },
    );
    print!("{text}");
    if a.retcode_passthrough {
        outcome.retcode
    } else if outcome.retcode != 0 {
        1
    } else {
        0
    }
}
