//! Fuzzing every gRPC request message through a real master (issue #15): for each service and
//! each RPC, over QUIC (HTTP/3) and TLS/TCP (HTTP/2) with real certificates (a minion's for
//! `MinionService`, the admin's for the others):
//!
//! (a) arbitrary bytes as the request body, framed as a gRPC message: every answer is a gRPC
//!     status (a decoding failure names the problem) or an answer, never a dropped connection
//!     or a hang, and the same connection still serves afterwards;
//! (b) arbitrary well-formed messages (proptest strategies for each request type): no hang,
//!     responses bounded, and no panic in the master's log.
//!
//! Then the master must still serve the CLI. No real minion runs: jobs published here reach
//! nobody. CI runs a few cases per RPC; `PROPTEST_CASES=200 cargo nextest run -p saltq-tests
//! -E 'test(/fuzz_grpc/)'` runs more (README.md, "Fuzzing").

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use prost::Message;
use prost_types::{ListValue, Struct, Timestamp, Value, value::Kind};
use saltq_proto::v1 as pb;
use saltq_tests::Master;
use saltq_transport::pki::{CertKey, load_certs};
use saltq_transport::tls::ServerTrust;
use saltq_transport::{Channel, ConnectOptions, Limits, TransportKind, connect};
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::{Code, Status};

/// Cases per RPC and transport: few in CI, `PROPTEST_CASES` for a longer run.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6)
}

/// The longest any RPC here may take to answer, or a streaming one to start answering.
const ANSWER_WITHIN: Duration = Duration::from_secs(15);

/// The largest message the master sends (its default `max_message_size`).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

// ---------------------------------------------------------------------------------------
// A codec that sends bytes as they are and hands back the bytes of each message.

#[derive(Clone, Copy, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn encode(&mut self, item: Vec<u8>, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Vec<u8>;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Vec<u8>>, Status> {
        use bytes::Buf;
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

/// How an RPC answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Unary,
    /// A server stream; `endless` ones (subscriptions) never end by themselves.
    Stream {
        endless: bool,
    },
}

/// One RPC: its path, how it answers, and who may call it.
struct Rpc {
    path: &'static str,
    shape: Shape,
    minion: bool,
}

const fn unary(path: &'static str, minion: bool) -> Rpc {
    Rpc {
        path,
        shape: Shape::Unary,
        minion,
    }
}

const fn stream(path: &'static str, minion: bool, endless: bool) -> Rpc {
    Rpc {
        path,
        shape: Shape::Stream { endless },
        minion,
    }
}

/// Every RPC of every service.
const RPCS: &[Rpc] = &[
    stream("/saltq.v1.MinionService/Subscribe", true, true),
    unary("/saltq.v1.MinionService/Return", true),
    unary("/saltq.v1.MinionService/SendEvent", true),
    unary("/saltq.v1.MinionService/GetPillar", true),
    unary("/saltq.v1.MinionService/UpdateGrains", true),
    unary("/saltq.v1.MinionService/SyncFiles", true),
    unary("/saltq.v1.MinionService/ListFiles", true),
    unary("/saltq.v1.MinionService/HashFile", true),
    stream("/saltq.v1.MinionService/GetFile", true, false),
    unary("/saltq.v1.MinionService/ListEnvs", true),
    unary("/saltq.v1.JobService/Publish", false),
    stream("/saltq.v1.JobService/Run", false, false),
    unary("/saltq.v1.JobService/LookupJob", false),
    unary("/saltq.v1.JobService/ListJobs", false),
    unary("/saltq.v1.KeyService/ListKeys", false),
    unary("/saltq.v1.KeyService/AcceptKeys", false),
    unary("/saltq.v1.KeyService/RejectKeys", false),
    unary("/saltq.v1.KeyService/DeleteKeys", false),
    unary("/saltq.v1.KeyService/FingerKeys", false),
    unary("/saltq.v1.KeyService/PrintKeys", false),
    unary("/saltq.v1.RunnerService/RunRunner", false),
    unary("/saltq.v1.RunnerService/RunRunnerAsync", false),
    stream("/saltq.v1.EventService/StreamEvents", false, true),
    unary("/saltq.v1.EventService/FireEvent", false),
];

/// What one call came to.
#[derive(Debug)]
enum Answer {
    /// Answered (for a stream: the messages read before it ended or we stopped reading).
    Ok { messages: usize, bytes: usize },
    /// A gRPC status.
    Status(Status),
    /// Nothing within [`ANSWER_WITHIN`].
    Silent,
}

/// Calls `rpc` with `body` as its one request message.
async fn call(channel: &Channel, rpc: &Rpc, body: Vec<u8>) -> Answer {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    let path = PathAndQuery::from_static(rpc.path);
    let go = async {
        if let Err(e) = grpc.ready().await {
            return Answer::Status(Status::unavailable(format!("not ready: {e}")));
        }
        let req = tonic::Request::new(body);
        match rpc.shape {
            Shape::Unary => match grpc.unary(req, path, Raw).await {
                Ok(r) => Answer::Ok {
                    messages: 1,
                    bytes: r.into_inner().len(),
                },
                Err(s) => Answer::Status(s),
            },
            Shape::Stream { endless } => {
                let mut s = match grpc.server_streaming(req, path, Raw).await {
                    Ok(r) => r.into_inner(),
                    Err(s) => return Answer::Status(s),
                };
                // An endless stream answered once it has started; a finite one is read to its
                // end, or for a while (a Run follows its job until its timeout).
                let read_for = if endless {
                    Duration::from_millis(300)
                } else {
                    Duration::from_secs(4)
                };
                let (mut messages, mut bytes) = (0, 0);
                let deadline = tokio::time::Instant::now() + read_for;
                loop {
                    match tokio::time::timeout_at(deadline, s.message()).await {
                        Ok(Ok(Some(m))) => {
                            messages += 1;
                            bytes += m.len();
                            if messages > 10_000 {
                                break;
                            }
                        }
                        Ok(Ok(None)) | Err(_) => break,
                        Ok(Err(status)) if messages == 0 => return Answer::Status(status),
                        Ok(Err(_)) => break,
                    }
                }
                Answer::Ok { messages, bytes }
            }
        }
    };
    tokio::time::timeout(ANSWER_WITHIN, go)
        .await
        .unwrap_or(Answer::Silent)
}

/// What must hold of any answer: a status with a message (never a dropped connection), or
/// a bounded answer.
fn check(rpc: &Rpc, what: &str, answer: &Answer) -> Result<(), String> {
    match answer {
        Answer::Silent => Err(format!(
            "{} gave no answer within {ANSWER_WITHIN:?} to {what}",
            rpc.path
        )),
        Answer::Ok { messages, bytes } => {
            if *bytes > MAX_MESSAGE * (*messages).max(1) || *messages > 10_000 {
                return Err(format!(
                    "{} answered {what} with {messages} messages, {bytes} bytes",
                    rpc.path
                ));
            }
            Ok(())
        }
        Answer::Status(s) => {
            let lost = matches!(
                s.code(),
                Code::Unknown | Code::Unavailable | Code::Cancelled | Code::DataLoss
            );
            if lost || s.message().trim().is_empty() {
                return Err(format!(
                    "{} answered {what} with {:?} {:?}: not a status naming the problem",
                    rpc.path,
                    s.code(),
                    s.message()
                ));
            }
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Strategies for the request messages.

fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-z0-9*._/:-]{0,12}",
        2 => any::<String>(),
        1 => prop::sample::select(vec![
            "", "*", "..", "../../etc/passwd", "/etc/passwd", "salt://top.sls", "top.sls",
            "a\u{0}b", "base", "dev", "\u{202e}", "%00", "G@os:*", "L@a,b", "E@(", "N@x",
        ])
        .prop_map(str::to_owned),
    ]
    .boxed()
}

fn number() -> BoxedStrategy<f64> {
    prop_oneof![
        any::<f64>(),
        prop::sample::select(vec![
            0.0,
            -1.0,
            0.5,
            1e300,
            -1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            9.3e18,
            20240101000000000000.0,
        ]),
    ]
    .boxed()
}

fn value() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Kind::NullValue(0)),
        any::<i32>().prop_map(Kind::NullValue),
        any::<bool>().prop_map(Kind::BoolValue),
        number().prop_map(Kind::NumberValue),
        text().prop_map(Kind::StringValue),
    ]
    .prop_map(|k| Value { kind: Some(k) });
    prop_oneof![
        10 => leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5)
                    .prop_map(|values| Value { kind: Some(Kind::ListValue(ListValue { values })) }),
                prop::collection::btree_map(text(), inner, 0..5)
                    .prop_map(|fields| Value { kind: Some(Kind::StructValue(Struct { fields })) }),
            ]
        }),
        1 => Just(Value { kind: None }),
    ]
    .boxed()
}

fn structure() -> BoxedStrategy<Option<Struct>> {
    prop::option::of(
        prop::collection::btree_map(text(), value(), 0..6).prop_map(|fields| Struct { fields }),
    )
    .boxed()
}

fn list() -> BoxedStrategy<Option<ListValue>> {
    prop::option::of(prop::collection::vec(value(), 0..4).prop_map(|values| ListValue { values }))
        .boxed()
}

fn jid() -> BoxedStrategy<String> {
    prop_oneof![
        Just(String::new()),
        "[0-9]{20}",
        "20[0-9]{18}",
        text(),
        Just("00000000000000000000".to_owned()),
        Just("99999999999999999999999".to_owned()),
    ]
    .boxed()
}

fn tag() -> BoxedStrategy<String> {
    prop_oneof![
        text(),
        prop::sample::select(vec![
            "salt/minion/fz1/start",
            "salt/auth",
            "salt/job/1/ret/x",
            "myapp/x",
            "salt/minion/other/x",
            "",
            "*",
            "[",
            "(?P<x",
            "salt/presence/change",
        ])
        .prop_map(str::to_owned),
    ]
    .boxed()
}

fn tgt_type() -> BoxedStrategy<String> {
    prop_oneof![
        prop::sample::select(vec![
            "",
            "glob",
            "pcre",
            "list",
            "grain",
            "grain_pcre",
            "pillar",
            "pillar_pcre",
            "pillar_exact",
            "ipcidr",
            "compound",
            "nodegroup",
            "range",
            "bogus",
        ])
        .prop_map(str::to_owned),
        text(),
    ]
    .boxed()
}

fn timestamp() -> BoxedStrategy<Option<Timestamp>> {
    prop::option::of(
        (
            prop_oneof![
                any::<i64>(),
                -62_135_596_800i64..253_402_300_799,
                Just(i64::MAX),
                Just(i64::MIN)
            ],
            any::<i32>(),
        )
            .prop_map(|(seconds, nanos)| Timestamp { seconds, nanos }),
    )
    .boxed()
}

/// A function name: a few real ones, anything else now and then.
fn fun() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(vec!["test.ping", "test.echo", "test.arg", "grains.items", "sys.doc", ""])
            .prop_map(str::to_owned),
        1 => text(),
    ]
    .boxed()
}

fn publish() -> BoxedStrategy<pb::PublishRequest> {
    (
        (text(), tgt_type(), prop::collection::vec(fun(), 0..3)),
        (
            prop::collection::vec(value(), 0..3),
            structure(),
            text(),
            jid(),
        ),
        (
            structure(),
            prop_oneof![Just(":".to_owned()), text()],
            text(),
            structure(),
        ),
    )
        .prop_map(
            |(
                (tgt, tgt_type, fun),
                (arg, kwarg, ret, jid),
                (metadata, delimiter, ret_config, ret_kwargs),
            )| {
                pb::PublishRequest {
                    tgt,
                    tgt_type,
                    fun,
                    arg,
                    kwarg,
                    // No returners: none is configured, and none should be reached from here.
                    ret: if ret.contains('.') {
                        String::new()
                    } else {
                        ret
                    },
                    jid,
                    metadata,
                    delimiter,
                    ret_config,
                    ret_kwargs,
                }
            },
        )
        .boxed()
}

/// A runner call: any function with any arguments, but the ones that wait (by design) only
/// with arguments that keep them short.
fn runner() -> BoxedStrategy<(String, Vec<Value>, Option<Struct>)> {
    let quick = prop::sample::select(vec![
        "jobs.lookup_jid",
        "jobs.list_job",
        "jobs.list_jobs",
        "jobs.list_jobs_filter",
        "jobs.print_job",
        "jobs.exit_success",
        "jobs.last_run",
        "cache.grains",
        "cache.pillar",
        "cache.clear_grains",
        "cache.clear_pillar",
        "event.send",
        "test.arg",
        "test.echo",
        "test.stream",
        "test.version",
        "manage.allowed",
        "manage.versions",
        "nosuch.fun",
        "",
    ])
    .prop_map(str::to_owned);
    let waits = prop::sample::select(vec![
        "test.sleep",
        "manage.status",
        "manage.up",
        "manage.down",
        "manage.present",
        "manage.alived",
        "manage.not_present",
        "jobs.active",
    ])
    .prop_map(str::to_owned);
    let short = prop::sample::select(vec![
        Value {
            kind: Some(Kind::NumberValue(-1.0)),
        },
        Value {
            kind: Some(Kind::NumberValue(0.0)),
        },
        Value {
            kind: Some(Kind::NumberValue(0.2)),
        },
        Value {
            kind: Some(Kind::NumberValue(1e300)),
        },
        Value {
            kind: Some(Kind::NumberValue(f64::NAN)),
        },
        Value {
            kind: Some(Kind::StringValue("-5".into())),
        },
        Value {
            kind: Some(Kind::StringValue("nan".into())),
        },
        Value {
            kind: Some(Kind::StringValue("inf".into())),
        },
        Value {
            kind: Some(Kind::StringValue("x".into())),
        },
    ]);
    prop_oneof![
        3 => (quick, prop::collection::vec(value(), 0..3), structure()),
        1 => (waits, short.clone()).prop_map(|(f, v)| {
            // Both spellings: positional and keyword.
            let fields = [("s_time".to_owned(), v.clone()), ("timeout".to_owned(), v.clone())];
            (f, vec![v], Some(Struct { fields: fields.into_iter().collect() }))
        }),
    ]
    .boxed()
}

/// A well-formed request for `path`, encoded.
fn request(path: &str) -> BoxedStrategy<Vec<u8>> {
    fn enc<M: Message>(m: M) -> Vec<u8> {
        m.encode_to_vec()
    }
    let rpc = path.rsplit('/').next().unwrap_or_default();
    match rpc {
        "Subscribe" => (structure(), text())
            .prop_map(|(grains, version)| {
                enc(pb::SubscribeRequest {
                    grains,
                    version,
                    ..Default::default()
                })
            })
            .boxed(),
        "Return" => (
            (
                jid(),
                prop::collection::vec(fun(), 0..3),
                list(),
                prop::option::of(value()),
            ),
            (any::<i32>(), any::<bool>(), text(), structure()),
        )
            .prop_map(
                |((jid, fun, fun_args, ret), (retcode, success, out, metadata))| {
                    enc(pb::ReturnRequest {
                        jid,
                        fun,
                        fun_args,
                        r#return: ret,
                        retcode,
                        success,
                        out,
                        metadata,
                    })
                },
            )
            .boxed(),
        "SendEvent" => (tag(), structure())
            .prop_map(|(tag, data)| enc(pb::SendEventRequest { tag, data }))
            .boxed(),
        "GetPillar" => Just(enc(pb::GetPillarRequest::default())).boxed(),
        "ListEnvs" => Just(enc(pb::ListEnvsRequest {})).boxed(),
        "UpdateGrains" => structure()
            .prop_map(|grains| enc(pb::UpdateGrainsRequest { grains }))
            .boxed(),
        "SyncFiles" => prop_oneof![
            prop::sample::select(vec![
                "modules",
                "runners",
                "states",
                "grains",
                "returners",
                "all"
            ])
            .prop_map(str::to_owned),
            text(),
        ]
        .prop_map(|kind| enc(pb::SyncFilesRequest { kind }))
        .boxed(),
        "ListFiles" => (text(), text(), any::<i32>())
            .prop_map(|(saltenv, prefix, kind)| {
                enc(pb::ListFilesRequest {
                    saltenv,
                    prefix,
                    kind,
                })
            })
            .boxed(),
        "HashFile" => (text(), text())
            .prop_map(|(saltenv, path)| enc(pb::HashFileRequest { saltenv, path }))
            .boxed(),
        "GetFile" => (text(), text())
            .prop_map(|(saltenv, path)| enc(pb::GetFileRequest { saltenv, path }))
            .boxed(),
        "Publish" => publish().prop_map(enc).boxed(),
        "Run" => (prop::option::of(publish()), number(), number())
            .prop_map(|(publish, timeout, gather_job_timeout)| {
                // A job waits for its minions up to its timeout, by design: keep it short
                // unless it is one of the values a service must refuse or replace.
                let short = |t: f64| {
                    if t.is_finite() && (0.0..=1e6).contains(&t) {
                        t.min(0.5)
                    } else {
                        t
                    }
                };
                enc(pb::RunRequest {
                    publish,
                    timeout: short(timeout),
                    gather_job_timeout: short(gather_job_timeout),
                })
            })
            .boxed(),
        "LookupJob" => jid()
            .prop_map(|jid| enc(pb::LookupJobRequest { jid }))
            .boxed(),
        "ListJobs" => (text(), text(), timestamp(), timestamp(), any::<u32>())
            .prop_map(|(function, target, start_time, end_time, limit)| {
                enc(pb::ListJobsRequest {
                    function,
                    target,
                    start_time,
                    end_time,
                    limit,
                })
            })
            .boxed(),
        "ListKeys" => prop::collection::vec(any::<i32>(), 0..4)
            .prop_map(|states| enc(pb::ListKeysRequest { states }))
            .boxed(),
        "AcceptKeys" => (text(), any::<bool>(), any::<bool>())
            .prop_map(|(r#match, include_rejected, include_denied)| {
                enc(pb::AcceptKeysRequest {
                    r#match,
                    include_rejected,
                    include_denied,
                })
            })
            .boxed(),
        "RejectKeys" => (text(), any::<bool>(), any::<bool>())
            .prop_map(|(r#match, include_accepted, include_denied)| {
                enc(pb::RejectKeysRequest {
                    r#match,
                    include_accepted,
                    include_denied,
                })
            })
            .boxed(),
        "DeleteKeys" => text()
            .prop_map(|r#match| enc(pb::DeleteKeysRequest { r#match }))
            .boxed(),
        "FingerKeys" => text()
            .prop_map(|r#match| enc(pb::FingerKeysRequest { r#match }))
            .boxed(),
        "PrintKeys" => text()
            .prop_map(|r#match| enc(pb::PrintKeysRequest { r#match }))
            .boxed(),
        "RunRunner" => runner()
            .prop_map(|(fun, arg, kwarg)| enc(pb::RunRunnerRequest { fun, arg, kwarg }))
            .boxed(),
        "RunRunnerAsync" => runner()
            .prop_map(|(fun, arg, kwarg)| enc(pb::RunRunnerAsyncRequest { fun, arg, kwarg }))
            .boxed(),
        "StreamEvents" => (tag(), any::<i32>())
            .prop_map(|(tag, r#match)| enc(pb::StreamEventsRequest { tag, r#match }))
            .boxed(),
        "FireEvent" => (tag(), structure())
            .prop_map(|(tag, data)| enc(pb::FireEventRequest { tag, data }))
            .boxed(),
        other => panic!("no strategy for {other}"),
    }
}

/// Bytes that are not a message, or are one only by accident: random bytes, truncated
/// varints and lengths, lengths far past the end, wrong wire types, deep nesting.
fn garbage() -> BoxedStrategy<Vec<u8>> {
    // A Struct nested past prost's decoding limit (100), as field 2 (where FireEventRequest,
    // SendEventRequest and others have a Struct; elsewhere a wrong type).
    let mut deep = Value {
        kind: Some(Kind::NullValue(0)),
    };
    for _ in 0..150 {
        let fields = [("a".to_owned(), deep)].into_iter().collect();
        deep = Value {
            kind: Some(Kind::StructValue(Struct { fields })),
        };
    }
    let data = match deep.kind {
        Some(Kind::StructValue(s)) => Some(s),
        _ => None,
    };
    let deep = pb::FireEventRequest {
        tag: "x".into(),
        data,
    }
    .encode_to_vec();
    prop_oneof![
        4 => prop::collection::vec(any::<u8>(), 0..200),
        1 => prop::sample::select(vec![
            vec![],
            vec![0xff; 11],
            vec![0x0a],
            vec![0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f],
            vec![0x0b],
            vec![0x0f, 0x01],
            vec![0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
            vec![0x0a, 0x03, 0xff, 0xfe, 0xfd],
            deep,
        ]),
    ]
    .boxed()
}

/// Connects over `transport` as the holder of `cert`/`key`.
pub(crate) async fn dial(
    master: &Master,
    transport: TransportKind,
    cert: &std::path::Path,
    key: &std::path::Path,
) -> Channel {
    let opts = ConnectOptions {
        ipv6: None,
        host: "127.0.0.1".into(),
        port: master.port,
        transport,
        identity: CertKey::load(cert, key).expect("identity"),
        trust: ServerTrust::Ca(load_certs(&master.pki_dir().join("ca.crt")).expect("ca")),
        limits: Limits::default(),
        connect_timeout: Duration::from_secs(10),
        reuse: None,
    };
    connect(&opts).await.expect("connect")
}

/// Feeds `strategy`'s cases to `rpc` on `channel`; the first case that breaks a property
/// fails the test (shrunk by proptest).
fn fuzz_rpc(
    master: &Master,
    rt: &tokio::runtime::Runtime,
    channel: &Channel,
    rpc: &Rpc,
    what: &str,
    strategy: BoxedStrategy<Vec<u8>>,
) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        // A failing case takes seconds (a hang): shrink a little, not for minutes.
        max_shrink_iters: 32,
        ..Config::default()
    });
    let result = runner.run(&strategy, |body| {
        let answer = rt.block_on(call(channel, rpc, body.clone()));
        check(rpc, what, &answer).map_err(TestCaseError::fail)?;
        // The connection is still usable: a harmless call on it answers.
        let probe = if rpc.minion {
            &RPCS[9] // ListEnvs
        } else {
            &RPCS[14] // ListKeys
        };
        let after = rt.block_on(call(channel, probe, Vec::new()));
        if !matches!(after, Answer::Ok { .. }) {
            return Err(TestCaseError::fail(format!(
                "after {what} to {}, {} on the same connection gave {after:?}",
                rpc.path, probe.path
            )));
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{} ({what}): {e}", rpc.path);
    }
    let panics = panics(master);
    assert!(
        panics.is_empty(),
        "the master panicked on {} ({what}):\n{panics}",
        rpc.path
    );
}

/// The lines of the master's log that tell of a panic.
fn panics(master: &Master) -> String {
    let log = std::fs::read_to_string(master.log()).unwrap_or_default();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
    lines.join("\n")
}

#[test]
fn fuzz_grpc_every_rpc_over_quic_and_h2() {
    let master = Master::start_with(|dir| {
        std::fs::create_dir_all(dir.join("srv/sub")).unwrap();
        std::fs::write(dir.join("srv/top.sls"), "base:\n  '*': [web]\n").unwrap();
        std::fs::write(dir.join("srv/web.sls"), "pkg: {}\n").unwrap();
        std::fs::write(dir.join("srv/sub/f.txt"), "hello\n").unwrap();
        std::fs::create_dir_all(dir.join("pillar")).unwrap();
        std::fs::write(dir.join("pillar/top.sls"), "base:\n  '*': [common]\n").unwrap();
        std::fs::write(dir.join("pillar/common.sls"), "role: web\n").unwrap();
        format!(
            "auto_accept: true\ntimeout: 1\ngather_job_timeout: 1\n\
             file_roots: {{base: [{srv}]}}\npillar_roots: {{base: [{pillar}]}}\n\
             nodegroups: {{web: 'fz* or G@role:web', ids: [fz1, fz2]}}\n",
            srv = dir.join("srv").display(),
            pillar = dir.join("pillar").display(),
        )
    });
    let issued = master.saltq(&["pki", "minion", "fz1"]);
    assert_eq!(issued.code, 0, "{issued:?}");
    let pki = master.pki_dir();
    let (minion_cert, minion_key) = (pki.join("issued/fz1.crt"), pki.join("issued/fz1.key"));
    let (admin_cert, admin_key) = (pki.join("admin.crt"), pki.join("admin.key"));
    let rt = tokio::runtime::Runtime::new().unwrap();

    let mut channels = Vec::new();
    for transport in [TransportKind::Quic, TransportKind::H2] {
        let as_minion = rt.block_on(dial(&master, transport, &minion_cert, &minion_key));
        let as_admin = rt.block_on(dial(&master, transport, &admin_cert, &admin_key));
        channels.push((as_minion, as_admin));
    }
    // RPC by RPC, on both transports: the minion service first, before KeyService may reject
    // or delete the minion's key.
    for rpc in RPCS {
        for (as_minion, as_admin) in &channels {
            let channel = if rpc.minion { as_minion } else { as_admin };
            fuzz_rpc(&master, &rt, channel, rpc, "arbitrary bytes", garbage());
            fuzz_rpc(
                &master,
                &rt,
                channel,
                rpc,
                "a well-formed message",
                request(rpc.path),
            );
        }
    }

    // Still serving, and nothing panicked on the way.
    let o = master.saltq(&["key", "-L", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(panics(&master), "");
}

// ---------------------------------------------------------------------------------------
// Event tags (issue #31): arbitrary tags through FireEvent (a client with no ACL entry, one
// with `@runner`) and SendEvent (a minion), and the master's tags spelt every way a prefix
// rule could miss.

/// A tag of the master's (or of another minion's), then spelt differently: doubled, leading
/// and trailing slashes, whitespace around a segment, `.` and `x/..` segments, the namespace
/// in another case.
fn reserved_variant() -> BoxedStrategy<String> {
    let base = prop::sample::select(vec![
        "salt/auth",
        "salt/key",
        "salt/minion/db1/start",
        "salt/job/20260101000000000000/ret/db1",
        "salt/run/20260101000000000000/new",
        "salt/wheel/x/ret",
        "salt/presence/change",
        "salt/beacon/db1/x",
        "salt/reactor/error",
    ]);
    let edit = prop_oneof![
        (0..6usize).prop_map(|i| (0, i)),
        Just((1, 0)),
        Just((2, 0)),
        (0..6usize).prop_map(|i| (3, i)),
        (0..6usize).prop_map(|i| (4, i)),
        (0..6usize).prop_map(|i| (5, i)),
        (0..2usize).prop_map(|i| (6, i)),
    ];
    (base, prop::collection::vec(edit, 0..4))
        .prop_map(|(base, edits)| {
            let mut segs: Vec<String> = base.split('/').map(str::to_owned).collect();
            for (kind, i) in edits {
                let n = segs.len();
                match kind {
                    0 => segs.insert(i % (n + 1), String::new()),
                    1 => segs.insert(0, String::new()),
                    2 => segs.push(String::new()),
                    3 => segs[i % n] = format!(" {} ", segs[i % n]),
                    4 => segs.insert(i % (n + 1), ".".into()),
                    5 => {
                        segs.insert(i % (n + 1), "..".into());
                        segs.insert(i % (n + 1), "x".into());
                    }
                    _ => segs[i] = segs[i].to_uppercase(),
                }
            }
            segs.join("/")
        })
        .boxed()
}

/// How a FireEvent/SendEvent answered, within [`ANSWER_WITHIN`].
async fn answered<T>(
    what: &str,
    tag: &str,
    f: impl std::future::Future<Output = Result<T, Status>>,
) -> Result<Result<T, Status>, TestCaseError> {
    tokio::time::timeout(ANSWER_WITHIN, f)
        .await
        .map_err(|_| TestCaseError::fail(format!("{what} {tag:?}: no answer")))
}

#[test]
fn fuzz_event_tags_through_fire_event_and_send_event() {
    use saltq_proto::v1::{
        event_service_client::EventServiceClient, minion_service_client::MinionServiceClient,
    };
    let master = Master::start("auto_accept: true\npublisher_acl:\n  alice: ['@runner']\n");
    for args in [
        ["pki", "minion", "fz1"],
        ["pki", "issue", "nobody"],
        ["pki", "issue", "alice"],
    ] {
        let o = master.saltq(&args);
        assert_eq!(o.code, 0, "{o:?}");
    }
    let issued = master.pki_dir().join("issued");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let channel = |name: &str| {
        rt.block_on(dial(
            &master,
            TransportKind::Quic,
            &issued.join(format!("{name}.crt")),
            &issued.join(format!("{name}.key")),
        ))
    };
    let (nobody, alice) = (
        EventServiceClient::new(channel("nobody")),
        EventServiceClient::new(channel("alice")),
    );
    let minion = MinionServiceClient::new(channel("fz1"));
    let config = || Config {
        cases: cases() * 8,
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        max_shrink_iters: 32,
        ..Config::default()
    };

    // The master's tags in any spelling: refused to every non-admin caller.
    let result = TestRunner::new(config()).run(&reserved_variant(), |tag| {
        rt.block_on(async {
            for (who, mut c) in [("nobody", nobody.clone()), ("alice", alice.clone())] {
                let req = pb::FireEventRequest {
                    tag: tag.clone(),
                    data: None,
                };
                let r = answered(who, &tag, c.fire_event(req)).await?;
                prop_assert_eq!(
                    r.as_ref().map_err(Status::code).err(),
                    Some(Code::PermissionDenied),
                    "{} fired {:?}: {:?}",
                    who,
                    tag,
                    r
                );
            }
            let req = pb::SendEventRequest {
                tag: tag.clone(),
                data: None,
            };
            let r = answered("fz1", &tag, minion.clone().send_event(req)).await?;
            prop_assert_eq!(
                r.as_ref().map_err(Status::code).err(),
                Some(Code::PermissionDenied),
                "fz1 fired {:?}: {:?}",
                tag,
                r
            );
            Ok(())
        })
    });
    if let Err(e) = result {
        panic!("a spelling of a reserved tag was fired: {e}");
    }

    // Any tag at all: an answer (fired, refused, or empty), never a hang or a panic.
    let any_tag = prop_oneof![tag(), any::<String>(), reserved_variant()];
    let result = TestRunner::new(config()).run(&any_tag, |tag| {
        rt.block_on(async {
            for (who, mut c) in [("nobody", nobody.clone()), ("alice", alice.clone())] {
                let req = pb::FireEventRequest {
                    tag: tag.clone(),
                    data: None,
                };
                if let Err(s) = answered(who, &tag, c.fire_event(req)).await? {
                    prop_assert!(
                        matches!(s.code(), Code::PermissionDenied | Code::InvalidArgument),
                        "{} {:?}: {:?}",
                        who,
                        tag,
                        s
                    );
                }
            }
            let req = pb::SendEventRequest {
                tag: tag.clone(),
                data: None,
            };
            if let Err(s) = answered("fz1", &tag, minion.clone().send_event(req)).await? {
                prop_assert!(
                    matches!(s.code(), Code::PermissionDenied | Code::InvalidArgument),
                    "fz1 {:?}: {:?}",
                    tag,
                    s
                );
            }
            Ok(())
        })
    });
    if let Err(e) = result {
        panic!("an arbitrary tag: {e}");
    }

    // Still serving, and nothing panicked on the way.
    let o = master.saltq(&["key", "-L", "--out", "json"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert_eq!(panics(&master), "");
}
